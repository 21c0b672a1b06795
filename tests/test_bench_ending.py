"""``make bench`` ends on what a newcomer came for: its last screen is the demo
comparison, the power sentence and the path of report.html, not the chunking table of a second run.

The recipe is read through real ``make -n`` (what it would run, in order); the last command,
``harness report DIR --brief``, runs for real on a real results folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO, run_harness

CONFIG = """\
dataset: demo
metrics: [ndcg@10, recall@100]
baseline: bm25
latency_queries: 2
warmup_queries: 0
retrievers:
  bm25: {type: bm25}
  bm25_okapi: {type: bm25, backend: rank_bm25}
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_bench_runs_the_demo_comparison_last_and_ends_on_its_brief(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    proc = subprocess.run(
        ["make", "-n", "--no-print-directory", "bench", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cmds = [ln for ln in proc.stdout.splitlines() if f"{venv}/bin/harness" in ln]
    chunked = next(i for i, c in enumerate(cmds) if "demo-chunked.yaml" in c)
    demo = next(i for i, c in enumerate(cmds) if re.search(r"harness run --out (\S+)$", c))
    out = re.search(r"harness run --out (\S+)$", cmds[demo])[1]
    assert chunked < demo < len(cmds) - 1, cmds
    assert cmds[-1].endswith(f"harness report {out} --brief"), cmds


def test_report_brief_is_one_screen_ending_on_power_and_the_page(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    proc = run_harness("run", "--config", "c.yaml", "--out", "res", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    full = run_harness("report", "res", cwd=tmp_path, env={"COLUMNS": "160"})
    brief = run_harness("report", "res", "--brief", cwd=tmp_path, env={"COLUMNS": "160"})
    assert brief.returncode == 0, brief.stderr[-3000:]
    lines = [ln for ln in brief.stdout.splitlines() if ln.strip()]
    assert lines[-1].startswith("page: res/report.html"), lines[-3:]
    assert (tmp_path / "res" / "report.html").is_file()
    assert any(ln.startswith("Power vs 'bm25':") for ln in lines[-12:]), lines[-12:]
    assert any("bm25_okapi" in ln and "0.8" in ln for ln in lines[:12]), lines[:12]  # the comparison itself
    assert "Δ vs baseline" not in brief.stdout and "Δ vs baseline" in full.stdout  # the per-test table: above
    assert len(lines) <= 40 < len(full.stdout.splitlines()) or len(lines) < len(full.stdout.splitlines())
