"""Tests for what a newcomer meets on the core install (harness.presets, harness.extras, the terminal
table's notes): bare `harness run` ends on the line naming the missing extra, prints no note for a
column or marker it cannot show, `harness retrievers` prints whole install commands, and the extract
generator no HTTP counters. A child process plays the core install, as in tests/test_extras.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_harness
from tests.core_workflow import HEAVY
from tests.test_extras import _errors, _harness

pytestmark = pytest.mark.core

REPO = Path(__file__).resolve().parents[1]
DENSE = "pip install 'retrieval-harness[dense]'"


def _interleaved(*args: str, cwd: Path) -> list[str]:
    """``harness ARGS`` on the core install, stdout and stderr in one stream as a terminal shows them."""
    block = f"import sys\nfor _m in {HEAVY!r}: sys.modules[_m] = None\n"
    code = block + "from harness.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    return [line for line in proc.stdout.splitlines() if line.strip()]


def test_bare_run_on_the_core_ends_on_the_missing_extra_and_shows_no_note_that_cannot_apply(tmp_path):
    lines = _interleaved("run", "--out", str(tmp_path / "demo"), "--no-progress", cwd=tmp_path)
    assert lines[-1].startswith("harness: core install: bm25 alone on the demo") and lines[-1].endswith(DENSE)
    assert sum(DENSE in line for line in lines) == 1  # said once, last
    text = "\n".join(lines)
    assert "▲" not in text and "▼" not in text  # one retriever: nothing is marked against the baseline
    assert "q-enc ms" not in text  # no retriever encodes queries: no such column
    page = (tmp_path / "demo" / "report.html").read_text(encoding="utf-8")
    assert "1 retriever<" in page or "1 retriever " in page or "1 retriever·" in page
    assert "1 retrievers" not in page


def test_retrievers_prints_each_missing_extras_whole_install_command(tmp_path):
    proc = _harness("retrievers", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for extra in ("dense", "rerank", "lancedb", "chroma", "qdrant", "pgvector"):
        assert f"pip install 'retrieval-harness[{extra}]'" in proc.stdout, extra
    assert "…" not in "".join(line for line in proc.stdout.splitlines() if "pip install" in line)


def test_two_missing_extras_keep_their_file_line_and_key(tmp_path):
    cfg = tmp_path / "two.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n  dense: {type: dense}\n"
        "  lance: {type: lancedb}\n",
        encoding="utf-8",
    )
    proc = _harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    assert _errors(proc)[1:] == [
        f"  {cfg}:5: retrievers.dense: dense retrievers need the dense extra: {DENSE}",
        f"  {cfg}:6: retrievers.lance: lancedb retrievers need the lancedb extra: "
        "pip install 'retrieval-harness[lancedb]'",
    ]


@pytest.mark.extra
def test_the_extract_generator_prints_no_http_counters(tmp_path):
    proc = run_harness(
        "synth", "generate", "--dataset", "demo", "--out", tmp_path / "s", "--queries", "5",
        "--generator", "extract", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    answered = [line for line in proc.stderr.splitlines() if "documents answered" in line]
    assert answered and not any("requests" in line or "tokens in" in line for line in answered)
