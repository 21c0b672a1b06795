"""harness.results.record: ``runs/<stem>.json``, the run record, read by one reader under one rule
(every reader of a record: resume, save again, the integrity check, ``evaluate`` naming a run file)."""

from __future__ import annotations

import json

import pytest

from harness.results import RunRecord
from harness.results.record import MAX_BYTES, run_stem

pytestmark = pytest.mark.core

GOOD = {"name": "bm25", "config_hash": "abc", "status": "ok", "file": f"runs/{run_stem('bm25')}.trec", "sha256": "00"}


def write(tmp_path, data, stem=None):
    path = tmp_path / "runs" / f"{stem or run_stem('bm25')}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_record_reads_with_its_fields_and_keeps_every_key_in_order(tmp_path):
    rec = RunRecord.read(write(tmp_path, {**GOOD, "params": {"k1": 1.2}, "seconds": 2, "extra": 1}))
    assert rec is not None and rec.name == "bm25" and rec.ok and rec.config_hash == "abc"
    assert rec.params == {"k1": 1.2} and rec.seconds == 2.0 and rec.cost is None
    assert list(rec.data) == [*GOOD, "params", "seconds", "extra"]
    assert rec.ref() == {"file": GOOD["file"], "sha256": "00", "config_hash": "abc"}


@pytest.mark.parametrize(
    "data",
    [
        "",  # empty
        "{not json",  # broken JSON
        "[1, 2]",  # not an object
        "[" * 100_000 + "]" * 100_000,  # nested past the parser's depth
        {k: v for k, v in GOOD.items() if k != "name"},  # no name
        {**GOOD, "name": 3},  # a name that is not text
        {k: v for k, v in GOOD.items() if k != "config_hash"},  # no config hash
        {k: v for k, v in GOOD.items() if k != "status"},  # no status
        {**GOOD, "name": "dense"},  # stored under another retriever's stem
    ],
    ids=["empty", "broken", "list", "deep", "no-name", "name-number", "no-hash", "no-status", "wrong-stem"],
)
def test_a_malformed_record_is_not_a_record(tmp_path, data):
    assert RunRecord.read(write(tmp_path, data)) is None


def test_a_missing_or_oversized_record_is_not_read(tmp_path):
    assert RunRecord.read(tmp_path / "runs" / "nothing.json") is None
    path = write(tmp_path, GOOD)
    with open(path, "r+b") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: the size alone refuses it, nothing is read
    assert RunRecord.read(path) is None


def test_beside_a_run_file_only_a_record_naming_that_file(tmp_path):
    path = write(tmp_path, GOOD)
    run = path.with_suffix(".trec")
    assert RunRecord.beside(run) is not None
    write(tmp_path, {**GOOD, "file": "runs/other.trec"})
    assert RunRecord.beside(run) is None
    write(tmp_path, {k: v for k, v in GOOD.items() if k != "file"} | {"status": "failed"})
    assert RunRecord.beside(run) is None


def test_the_folder_s_bookkeeping_reads_results_json_under_the_nesting_bound(tmp_path):
    from harness.results.folder import listed_files
    from harness.results.store import _complete

    (tmp_path / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    assert listed_files(tmp_path) is None and _complete(tmp_path / "results.json")  # no RecursionError
    (tmp_path / "results.json").write_text('{"complete": false, "files": ["table.md", 3]}')
    assert listed_files(tmp_path) == ["table.md"] and not _complete(tmp_path / "results.json")
