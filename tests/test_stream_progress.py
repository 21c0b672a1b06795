"""``harness stream`` shows progress (it was silent for 4 to 8 minutes on SciFact): per retriever, per step
and checkpoint, in a log as timestamped lines with a heartbeat; ``--no-progress`` shows none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.stream import Op
from harness.stream.core import step_label

pytestmark = pytest.mark.core

CONFIG = (
    "dataset: demo\nmetrics: [ndcg@10]\ndepth: 100\nretrievers:\n  bm25: {type: bm25}\n  bm25b: {type: bm25, k1: 1.2}\n"
    "stream:\n  steps: 2\n  probes: 2\n  poll_s: 0.02\n  probe_deadline_s: 5\n"
)


def _stream(tmp_path: Path, capsys, *flags: str) -> str:
    cfg = tmp_path / "stream.yaml"
    cfg.write_text(CONFIG, encoding="utf-8")
    assert main(["stream", "--config", str(cfg), "--out", str(tmp_path / "out"), *flags]) == 0
    return capsys.readouterr().err


def test_stream_shows_each_retriever_step_and_checkpoint(tmp_path, capsys):
    err = _stream(tmp_path, capsys)
    for line in ("[1/2] bm25", "[2/2] bm25b", "step 1 of 2: insert ",
                 "step 2 of 2: update ", "settling", "checkpoint 4 of 4: searching", "bm25b done in"):  # fmt: skip
        assert line in err, (line, err[-3000:])
    assert re.search(r"^\d\d:\d\d:\d\d harness: \[1/2\] bm25: checkpoint 1 of 4", err, re.M), err[-3000:]
    assert re.search(r"\[1/2\] bm25: indexing \d+ documents \(the initial load\)", err), err[-3000:]


def test_no_progress_shows_none(tmp_path, capsys):
    err = _stream(tmp_path, capsys, "--no-progress")
    assert "[1/2]" not in err and "checkpoint 1 of" not in err


def test_step_labels_count_steps_and_checkpoints():
    ops = [Op("insert", ("a", "b")), Op("checkpoint"), Op("insert", ("c",)), Op("delete", ("a",)),
           Op("checkpoint"), Op("settle"), Op("checkpoint")]  # fmt: skip
    labels = [step_label(ops, n) for n in range(len(ops))]
    assert labels[0] == "indexing 2 documents (the initial load)"
    assert labels[1].startswith("checkpoint 1 of 3") and labels[6].startswith("checkpoint 3 of 3")
    assert labels[2] == "step 1 of 1: insert 1 documents" and labels[3] == "step 1 of 1: delete 1 documents"
    assert labels[5] == "settling (the engine's maintenance)"
