"""harness stream against hostile input (issue 56, faults round 7): team retrievers that raise, exit,
hang or answer what ``harness run`` refuses fail their own row only; runbooks that leave nothing
visible, delete-and-reinsert, tiny rates, YAML exponents; bounded probes; and a property test that
every runbook the checker accepts plays to the end or fails one row by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.stream import StreamOptions, failures, read_runbook, run_stream

TEAM = Path(__file__).resolve().parent / "stream_team.py"
FAST = "  steps: 2\n  probes: 2\n  poll_s: 0.02\n  probe_deadline_s: 1"


def _config(tmp_path: Path, retrievers: str, stream: str = FAST, head: str = "") -> Path:
    (tmp_path / "stream_team.py").write_text(TEAM.read_text())
    p = tmp_path / "stream.yaml"
    p.write_text(f"dataset: demo\nmetrics: [ndcg@10]\ndepth: 20\n{head}retrievers:\n{retrievers}\nstream:\n{stream}\n")
    return p


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("add_raises", "add() raised RuntimeError: disk full in add (at stream_team.py:"),
        ("delete_raises", "delete() raised OSError: index locked (at stream_team.py:"),
        ("add_exits", "add() raised SystemExit: the retriever called sys.exit(3)"),
        ("add_hangs", "add() did not finish within 5 s (timeout_s)"),
        ("search_nan", "search() returned an unusable ranking: query "),
        ("search_str", "score 'high' is not a number"),
        ("search_unknown", "unknown doc id 'no-such-doc' (not in the corpus)"),
        ("search_list", "search() returned list"),
    ],
)
def test_a_failing_team_retriever_fails_its_row_and_the_others_stream(
    tmp_path: Path, capsys, mode: str, says: str
) -> None:
    """As harness run: the row that failed is named with the call and where (runbook line, checkpoint),
    its completed checkpoints are kept, the rows after it still stream, exit 1; timeout_s bounds a call."""
    team = f"  bad: {{type: python, class: 'stream_team:Faulty', params: {{mode: {mode}}}}}\n  bm25: {{type: bm25}}"
    out = tmp_path / "out"
    cfg = _config(tmp_path, team, head="timeout_s: 5\n")
    assert main(["stream", "--config", str(cfg), "--out", str(out)]) == 1
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
    assert len(err) == 1 and err[0].startswith("error: retriever 'bad' failed: "), err
    assert says in err[0] and ("before checkpoint 1" in err[0] or "at checkpoint 1" in err[0]), err[0]
    doc = json.loads((out / "stream.json").read_text())
    assert doc["complete"] is True
    assert says in doc["retrievers"]["bad"]["error"]
    assert [c["checkpoint"] for c in doc["retrievers"]["bad"]["checkpoints"]] == [0]
    assert len(doc["retrievers"]["bm25"]["checkpoints"]) == 4 and "error" not in doc["retrievers"]["bm25"]
    assert failures(doc) == {"bad": doc["retrievers"]["bad"]["error"]}
    assert "<b>Failed</b>: " in (out / "report.html").read_text()


def test_a_team_constructor_that_raises_is_one_line_before_any_work(tmp_path: Path, capsys) -> None:
    cfg = _config(tmp_path, "  bad: {type: python, class: 'stream_team:Faulty', params: {mode: init_raises}}")
    assert main(["stream", "--config", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "retriever 'bad'" in err[0] and "ValueError: no licence key" in err[0], err
    assert not (tmp_path / "out").exists()
