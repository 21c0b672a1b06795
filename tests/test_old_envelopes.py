"""Files written before every file the harness writes carried the common envelope still open (upgraded
on load), on fixtures main wrote at a721a61 (tests/data/old_envelopes, never regenerated): a stream
folder (``retrieval-harness/stream/1``), a traces folder (``format: harness-traces``), a synthetic
set's ``synth.json`` (``format: harness-synth``) and ``bias.json`` (no marker), a history file
(``harness-history/1``). Each reads as schema_version 1 and the commands that read it take it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.cli import main
from harness.gate import history
from harness.results.synthetic_set import BiasFigures, SynthFile
from harness.stream import StreamResults
from harness.traces.folder import TracesFile

OLD = Path(__file__).resolve().parent / "data" / "old_envelopes"


def test_an_old_stream_folder_opens_and_reports(capsys):
    doc = StreamResults.read(OLD / "stream")
    assert doc.schema_ == "retrieval-harness/stream" and doc.schema_version == 1
    assert [c.checkpoint for c in doc.retrievers["bm25"].checkpoints] == [0, 1, 2, 3]
    assert main(["report", str(OLD / "stream")]) == 0
    assert "bm25 (bm25)" in capsys.readouterr().out


def test_an_old_traces_folder_opens_and_pools(tmp_path):
    doc = TracesFile.read(OLD / "traces")
    assert doc.schema_version == 1 and doc.queries.written == 3 and doc.files == {}
    folder = tmp_path / "traces"
    shutil.copytree(OLD / "traces", folder)
    assert main(["traces", "pool", str(folder), "--out", str(tmp_path / "pool.csv")]) == 0


def test_an_old_synth_json_and_bias_json_open(tmp_path):
    synth = SynthFile.read(OLD / "synth")
    assert synth.schema_version == 1 and synth.draw.strata >= 1 and synth.queries
    bias = BiasFigures.read(OLD / "synth" / "bias.json")
    assert bias.schema_version == 1 and 0 <= bias.source_rank["at1"] <= 1
    # the figures are the file's, the envelope aside
    old = json.loads((OLD / "synth" / "bias.json").read_text())
    assert bias.figures() == old


def test_an_old_history_file_is_read_and_appended_to(tmp_path):
    hist = history.read(OLD / "history.jsonl")
    assert [n["schema_version"] for n in hist.nights] == [1]
    assert hist.nights[0]["schema"] == "retrieval-harness/history"
    from harness.gate.outputs import is_history

    assert is_history(OLD / "history.jsonl")  # `check --history` appends a night to it, not refuses it
