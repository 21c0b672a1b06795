"""``harness synth bias --results`` reads the results folders through the integrity check, as every command
does: a run file changed since the run is exit 2 naming it, and
``--allow-incomplete`` makes that a warning."""

from __future__ import annotations

import os

from tests.conftest import REPO, run_harness
from tests.test_synth_checks import _corpus

CONFIG = REPO / "configs" / "synth-bm25-variants.yaml"


def _ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_changed_run_file_is_refused_then_warned_about(tmp_path):
    human = _corpus(tmp_path / "human")
    _ok(run_harness("synth", "generate", "--dataset", human, "--out", tmp_path / "syn", "--queries", "20",
                    "--generator", "extract", "--no-progress"))  # fmt: skip
    for name, ds in (("r_syn", tmp_path / "syn"), ("r_human", human)):
        _ok(run_harness("run", "--config", CONFIG, "--dataset", ds, "--out", tmp_path / name, "--no-progress"))
    bias = ["synth", "bias", tmp_path / "syn", "--results", tmp_path / "r_syn", "--human-results", tmp_path / "r_human"]
    _ok(run_harness(*bias))
    run = next((tmp_path / "r_syn" / "runs").glob("*.trec"))
    os.chmod(run, 0o644)
    run.write_text(run.read_text(encoding="utf-8").replace(" Q0 ", " Q0 x", 1), encoding="utf-8")
    proc = run_harness(*bias)
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: --results ") and run.name in lines[0], lines[0]
    proc = _ok(run_harness(*bias, "--allow-incomplete"))
    assert run.name in proc.stderr and "warning" in proc.stderr
