"""The one rule for every ``module:Class`` a user names (:mod:`harness.imports`): the config's folder, then
the working folder, then ``PYTHONPATH``; the same from the ``harness`` console script (which puts no folder of
its own on the path) as from ``python -m harness``; the path restored after; an error naming every folder
looked in (before: ``--judge my_judges:KeywordJudge`` from the folder holding ``my_judges.py`` exited 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.imports import TargetNotFound, load_target, search_folders
from harness.judging.judge import judge_class
from harness.judging.pool import PoolRow, write_pool
from tests.conftest import OVERLAP_CODE, REPO

pytestmark = pytest.mark.core

JUDGE = """
class KeywordJudge:
    def __init__(self, word="alpha"):
        self.word = word
        self.name = "keyword:" + word

    def grade(self, pairs):
        return [3 if self.word in p.text.split() else 0 for p in pairs]
"""

#: the console script: ``sys.path[0]`` is its bin folder, never the working folder (as ``-m``/``-c`` make it)
CONSOLE = (
    "import os, sys\n"
    "sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]\n"
    "from harness.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _console(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", CONSOLE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _unique(tmp_path: Path, code: str, prefix: str) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"  # imports are cached per process: a name of its own
    (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")
    return name


def test_a_judge_in_the_working_folder_is_found_by_the_console_script(tmp_path):
    (tmp_path / "my_judges.py").write_text(JUDGE, encoding="utf-8")
    rows = [PoolRow("q1", "query", f"d{i}", "", f"text {'alpha' if i % 2 else 'beta'}", "bm25", 1) for i in range(4)]
    write_pool(tmp_path / "pool.csv", rows)
    proc = _console("judge", "auto", "pool.csv", "--judge", "my_judges:KeywordJudge", "--out", "kw.csv",
                    "--no-progress", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "kw.csv").exists()


def test_a_missing_judge_module_names_the_folders_looked_in(tmp_path):
    write_pool(tmp_path / "pool.csv", [PoolRow("q1", "query", "d1", "", "text", "bm25", 1)])
    proc = _console("judge", "auto", "pool.csv", "--judge", "my_judgs:KeywordJudge", "--out", "kw.csv",
                    "--no-progress", cwd=tmp_path)  # fmt: skip
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"no module named 'my_judgs' in the working folder ({tmp_path.resolve()})" in lines[0]
    assert "PYTHONPATH" in lines[0] and "--judge" in lines[0]


def test_a_python_retriever_in_the_working_folder_runs_from_a_config_elsewhere(tmp_path):
    (tmp_path / "team_overlap.py").write_text(OVERLAP_CODE, encoding="utf-8")
    (tmp_path / "configs").mkdir()
    cfg = tmp_path / "configs" / "team.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  team: {type: python, class: team_overlap:Overlap}\n",
        encoding="utf-8",
    )
    proc = _console("run", "--config", str(cfg), "--out", str(tmp_path / "out"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FAILED" not in proc.stdout


def test_a_missing_retriever_module_names_the_config_folder_then_the_working_folder(tmp_path):
    work = tmp_path / "work"
    (work / "configs").mkdir(parents=True)
    cfg = work / "configs" / "team.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  team: {type: python, class: team_overlapp:Overlap}\n",
        encoding="utf-8",
    )
    proc = _console("run", "--config", str(cfg), "--out", str(tmp_path / "out"), "--no-progress", cwd=work)
    assert proc.returncode == 2, proc.stderr
    assert (
        f"no module named 'team_overlapp' in the config's folder ({(work / 'configs').resolve()}), "
        f"the working folder ({work.resolve()}) or on PYTHONPATH"
    ) in proc.stderr


def test_the_config_folder_comes_before_the_working_folder_and_the_path_is_restored(tmp_path, monkeypatch):
    config_dir, work = tmp_path / "config", tmp_path / "work"
    config_dir.mkdir()
    work.mkdir()
    name = f"twin_{uuid.uuid4().hex[:8]}"
    (config_dir / f"{name}.py").write_text("WHERE = 'config'\n", encoding="utf-8")
    (work / f"{name}.py").write_text("WHERE = 'work'\n", encoding="utf-8")
    only_work = _unique(work, "WHERE = 'work only'\n", "solo")
    monkeypatch.chdir(work)
    before = list(sys.path)
    assert search_folders(config_dir) == (config_dir.resolve(), work.resolve())
    assert load_target(f"{name}:WHERE", config_dir) == "config"
    assert load_target(f"{only_work}:WHERE", config_dir) == "work only"
    assert sys.path == before
    with pytest.raises(TargetNotFound, match=r"the config's folder .* the working folder"):
        load_target("surely_no_module_xyz:X", config_dir)
    assert sys.path == before


def test_a_module_that_needs_a_missing_package_says_so_not_that_it_is_missing(tmp_path, monkeypatch):
    name = _unique(tmp_path, "import surely_not_installed_abc\nX = 1\n", "needs")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModuleNotFoundError) as e:
        load_target(f"{name}:X")
    assert not isinstance(e.value, TargetNotFound) and e.value.name == "surely_not_installed_abc"


def test_judge_class_looks_in_the_working_folder(tmp_path, monkeypatch):
    name = _unique(tmp_path, JUDGE, "judges")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert judge_class(f"{name}:KeywordJudge").__name__ == "KeywordJudge"
    with pytest.raises(InputError, match=r"no module named 'nope_xyz' in the working folder"):
        judge_class("nope_xyz:KeywordJudge")
