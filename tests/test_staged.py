"""harness.io.staged: the one staged writer and envelope reader every folder-writing command uses.
A lock held by another real process refuses a second writer in one line (two commands, one
``--out``), for every command that writes a folder; a staged folder is published whole or not at all;
the envelope reader refuses what the harness did not write in one located line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.io import staged
from tests.conftest import one_line_error, run_harness

REPO = Path(__file__).resolve().parent.parent

HOLD = """
import sys, time
from harness.io import staged
with staged.lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def held(tmp_path):
    """``tmp_path/out`` locked by another process (as a command writing it holds it)."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    yield out, proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.parametrize(
    "argv",
    [
        ["stream", "--config", "{cfg}", "--out", "{out}"],
        ["run", "--config", "{cfg}", "--out", "{out}", "--no-progress"],
        ["convert", "demo", "--out", "{out}"],
        ["synth", "generate", "--dataset", "demo", "--out", "{out}", "--queries", "3", "--generator", "extract",
         "--no-progress"],
    ],
    ids=["stream", "run", "convert", "synth"],
)  # fmt: skip
def test_a_second_command_to_a_folder_being_written_is_refused_in_one_line(held, tmp_path, argv):
    out, pid = held
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\nstream: {steps: 1}\n")
    args = [a.format(cfg=cfg, out=out) for a in argv]
    one_line_error(run_harness(*args, cwd=tmp_path), f"pid {pid}", "is writing this folder")
    assert not out.exists()  # nothing of the second written


def test_a_staged_folder_is_published_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError), staged.Staged(out, "thing", 1) as folder:
        folder.write("a.txt", b"a")
        raise RuntimeError("killed halfway")
    assert not out.exists() and not list(tmp_path.glob(".out.*"))
    with staged.Staged(out, "thing", 1) as folder:
        folder.write("runs/a.txt", b"a")
        folder.finish("thing.json", {"figure": 1})
    doc = json.loads((out / "thing.json").read_text())
    assert doc == {"schema": "retrieval-harness/thing", "schema_version": 1, "figure": 1, "complete": True,
                   "files": {"runs/a.txt": hashlib.sha256(b"a").hexdigest()}}  # fmt: skip
    assert not list(tmp_path.glob(".out.*"))
    with pytest.raises(InputError, match="already exists"), staged.Staged(out, "thing", 1):
        pass


def test_a_killed_writers_staging_folder_is_removed_by_the_next(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.thing-{dead.stdout.strip()}"
    stale.mkdir()
    with staged.Staged(tmp_path / "out", "thing", 1) as folder:
        folder.finish("thing.json", {})
    assert not stale.exists()


class _Doc(staged.Ordered):
    figure: int


def _envelope(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "thing.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize(
    "doc, says",
    [
        ({"schema": "retrieval-harness/other", "schema_version": 1, "figure": 1}, "not a thing file"),
        ({"schema": "retrieval-harness/thing", "schema_version": 9, "figure": 1}, "newer than this harness"),
        ({"schema": "retrieval-harness/thing", "schema_version": "1", "figure": 1}, "schema_version"),
        ({"schema": "retrieval-harness/thing", "schema_version": 1}, "figure: missing"),
        ({"schema": "retrieval-harness/thing", "schema_version": 1, "figure": "x"}, 'figure: must be a whole number'),
        ({"schema": "retrieval-harness/thing", "schema_version": 1, "figure": 1, "files": {"gone.txt": "0"}},
         "gone.txt: listed in thing.json but missing"),
        ({"schema": "retrieval-harness/thing", "schema_version": 1, "figure": 1, "complete": False}, "incomplete"),
    ],
)  # fmt: skip
def test_the_envelope_reader_refuses_in_one_located_line(tmp_path, doc, says):
    p = _envelope(tmp_path, doc)
    with pytest.raises(InputError) as e:
        staged.open_envelope(p, "thing", _Doc, version=1)
    assert says in str(e.value) and "thing" in str(e.value)


def test_the_envelope_reader_is_bounded_and_an_ordered_model_writes_back_its_bytes(tmp_path, monkeypatch):
    p = _envelope(tmp_path, {"schema": "retrieval-harness/thing", "schema_version": 1, "z": [1], "figure": 2})
    staged.write_json(p, json.loads(p.read_text()))
    doc = staged.open_envelope(p, "thing", _Doc, version=1)
    assert doc.figure == 2
    again = tmp_path / "again.json"
    doc.write(again)
    assert again.read_bytes() == p.read_bytes()
    monkeypatch.setattr(staged, "MAX_BYTES", 10)
    with pytest.raises(InputError, match="larger than"):
        staged.open_envelope(p, "thing", _Doc, version=1)


def test_check_out_modes(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    assert staged.check_out(tmp_path / "new", "new") == tmp_path / "new"
    with pytest.raises(InputError, match="already exists"):
        staged.check_out(tmp_path / "empty", "new")
    staged.check_out(tmp_path / "empty", "new_or_empty")
    with pytest.raises(InputError, match="new or empty"):
        staged.check_out(tmp_path / "full", "new_or_empty")
    with pytest.raises(InputError, match="did not write"):
        staged.check_out(tmp_path / "full", "owned", owned_by=lambda p: False)
    staged.check_out(tmp_path / "full", "owned", owned_by=lambda p: (p / "mine.txt").is_file())
