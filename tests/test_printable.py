"""Tests for harness.printable: control characters from data (ESC, NUL, C1, bidirectional overrides)
reach no terminal output raw: `report --worst`, the tables and the error line show them escaped."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import run_harness

HOSTILE_DOC = "doc \x1b]0;TITLE-SET-BY-DATA\x1b\\ \x1b[2J\x1b[31mred\x1b[0m \x00 \u202eevil coffee"
HOSTILE_QUERY = "coffee \x1b[31mRED\x1b[0m \x1b]8;;http://127.0.0.1/x\x1b\\link\x1b]8;;\x1b\\ \x9b2J"


def _raw_controls(text: str) -> list[str]:
    """Characters a terminal would obey rather than show (newline and tab apart)."""
    return [c for c in text if c not in "\n\t" and (unicodedata.category(c) == "Cc" or 0x202A <= ord(c) <= 0x202E)]


def _hostile_dataset(root: Path) -> Path:
    ds = root / "esc"
    (ds / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": f"plain document {i} about coffee and tea"} for i in range(5)]
    docs.append({"_id": "dx", "title": "", "text": HOSTILE_DOC})
    queries = [{"_id": "q\x1b[7m1", "text": HOSTILE_QUERY}, {"_id": "q2", "text": "tea"}]
    (ds / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (ds / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\x1b[7m1\tdx\t1\nq2\td1\t1\n")
    return ds


def test_report_worst_and_the_run_table_show_data_escapes_escaped(tmp_path):
    ds = _hostile_dataset(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "metrics: [ndcg@10]\ndepth: 10\nlatency_queries: 1\nwarmup_queries: 0\nretrievers:\n  bm25: {type: bm25}\n"
    )
    run = run_harness("run", "--config", cfg, "--dataset", ds, "--out", tmp_path / "res", "--no-progress")
    assert run.returncode == 0, run.stderr[-2000:]
    worst = run_harness("report", tmp_path / "res", "--worst", "2")
    assert worst.returncode == 0, worst.stderr[-2000:]
    for out in (run.stdout, run.stderr, worst.stdout, worst.stderr):
        assert _raw_controls(out) == []
    # the reader still sees that the data holds them
    assert "\\x1b[31mRED" in worst.stdout and "\\x00" in worst.stdout and "\\u202e" in worst.stdout
    assert "q\\x1b[7m1" in worst.stdout  # a query id in the table's first column


def test_an_error_quoting_data_shows_its_escapes_escaped(tmp_path):
    bad = tmp_path / "bad\x1b[2J.yaml"
    bad.write_text("metrics: [ndcg@10]\nretrievers: [\n")
    res = run_harness("run", "--config", bad, "--dataset", "demo", "--out", tmp_path / "res", "--no-progress")
    assert res.returncode == 2
    assert _raw_controls(res.stderr) == []
    assert "bad\\x1b[2J.yaml" in res.stderr


@given(st.text())
def test_printable_leaves_no_control_character_and_changes_nothing_else(text):
    from harness.printable import printable

    shown = printable(text)
    assert _raw_controls(shown) == [] and "\n" not in shown
    if (
        not _raw_controls(text)
        and not any(c in text for c in "\n\t\r\u200e\u200f\u061c")
        and not any(0x2066 <= ord(c) <= 0x2069 or 0xD800 <= ord(c) < 0xE000 for c in text)
    ):
        assert shown == text
    assert printable(text, lines=True).count("\n") == text.count("\n")
