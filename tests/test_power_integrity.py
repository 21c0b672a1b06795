"""``harness power`` reads a suite folder through the integrity check, as it reads a results folder:
an interrupted dataset (``complete: false``), an edited run file or an
interrupted suite (``suite.json``'s ``complete: false``) is exit 2 naming the file, and
``--allow-incomplete`` makes each a warning, in the wording of ``report``, ``check`` and ``baseline``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli import main
from tests.test_suite import SUITE, write_suite_config

pytestmark = pytest.mark.core


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """A finished two-dataset suite (demo as ``support``, ``tiny``) of three retrievers (``--all-pairs``
    needs three), as ``harness run`` writes it."""
    root = tmp_path_factory.mktemp("suite")
    config = write_suite_config(root, SUITE + "  bm25_low: {type: bm25, k1: 0.5, b: 0.3}\n")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["run", "--config", str(config), "--out", "out", "--no-progress"]) == 0
    finally:
        os.chdir(cwd)
    return root / "out"


def _copy(suite: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(suite, to)
    for p in to.rglob("*"):  # the stored runs are written read-only
        if p.is_file():
            os.chmod(p, 0o644)
    return to


def _refused_then_warned(capsys, folder: Path, name: str, *args: str) -> None:
    capsys.readouterr()
    assert main(["power", str(folder), *args]) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: results ") and name in lines[0], lines
    assert "--allow-incomplete" in lines[0]
    assert main(["power", str(folder), *args, "--allow-incomplete"]) == 0
    err = capsys.readouterr().err
    assert name in err and "warning" in err and "read anyway: --allow-incomplete" in err, err


@pytest.mark.parametrize("args", [(), ("--all-pairs", "--draws", "100", "--swap-draws", "0")])
def test_an_edited_run_file_of_a_suite_member_is_refused_then_warned_about(suite, tmp_path, capsys, args):
    folder = _copy(suite, tmp_path / "s")
    assert main(["power", str(folder), *args]) == 0
    run = next((folder / "tiny" / "runs").glob("*.trec"))
    run.write_text(run.read_text(encoding="utf-8").replace(" Q0 ", " Q0 x", 1), encoding="utf-8")
    _refused_then_warned(capsys, folder, str(run), *args)


def test_an_interrupted_suite_member_is_refused_then_warned_about(suite, tmp_path, capsys):
    folder = _copy(suite, tmp_path / "s")
    path = folder / "support" / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["complete"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    _refused_then_warned(capsys, folder, str(path))
    capsys.readouterr()
    assert main(["power", str(folder), "--format", "json", "--allow-incomplete"]) == 0
    assert set(json.loads(capsys.readouterr().out)["datasets"]) == {"support", "tiny"}


def test_an_interrupted_suite_is_refused_then_warned_about(suite, tmp_path, capsys):
    folder = _copy(suite, tmp_path / "s")
    path = folder / "suite.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["complete"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    _refused_then_warned(capsys, folder, str(path))


def test_a_plain_results_folder_was_read_through_the_check_already(suite, tmp_path, capsys):
    """``power DIR`` of one results folder goes through Results.open (so it did before this change)."""
    folder = _copy(suite / "tiny", tmp_path / "r")
    run = next((folder / "runs").glob("*.trec"))
    run.write_text(run.read_text(encoding="utf-8").replace(" Q0 ", " Q0 x", 1), encoding="utf-8")
    _refused_then_warned(capsys, folder, str(run))
