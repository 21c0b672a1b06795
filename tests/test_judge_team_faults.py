"""``harness judge auto --judge module:Class`` against a team's class that fails, in a
real ``harness`` process: every failure of the class (its import, its
constructor, ``grade`` raising, exiting or returning what is no grade, a ``batch_size`` or
``concurrency`` that is no whole number, a module given as a file path) is one line naming the judge
and the call, exit 2, and the grades it gave before are kept; a team's judge cannot take a name the
page or the built-ins write (a person's grades would be overwritten, its grades pass for theirs);
numpy integer grades are grades."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.conftest import run_harness

pytestmark = pytest.mark.core

JUDGES = '''
import sys

import numpy as np


class Raises:
    name = "raises"

    def grade(self, pairs):
        raise ValueError("model backend exploded")


class ReturnsNone:
    name = "returns-none"

    def grade(self, pairs):
        pass


class InitRaises:
    name = "init-raises"

    def __init__(self):
        raise RuntimeError("cannot load judge model")

    def grade(self, pairs):
        return [1] * len(pairs)


class BadBatch:
    name = "bad-batch"
    batch_size = "lots"

    def grade(self, pairs):
        return [1] * len(pairs)


class NanConcurrency:
    name = "nan-concurrency"
    concurrency = float("nan")

    def grade(self, pairs):
        return [1] * len(pairs)


class Exits:
    name = "exits"

    def grade(self, pairs):
        sys.exit(4)


class LaterRaises:
    """Grades the first batch of 4, then fails."""

    name = "later-raises"
    batch_size = 4

    def __init__(self):
        self.calls = 0

    def grade(self, pairs):
        self.calls += 1
        if self.calls > 1:
            raise OSError("GPU fell off the bus")
        return [2] * len(pairs)


class Person:
    name = "person"

    def grade(self, pairs):
        return [0] * len(pairs)


class Llm:
    name = "llm:gpt-judge"

    def grade(self, pairs):
        return [0] * len(pairs)


class Numpy:
    name = "numpy"
    batch_size = np.int64(3)
    concurrency = 2.0

    def grade(self, pairs):
        return list(np.arange(len(pairs), dtype=np.int64) % 4)
'''

N = 12


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "judges.py").write_text(JUDGES, encoding="utf-8")
    rows = [PoolRow(f"q{i % 3}", f"query {i % 3}", f"d{i}", "", f"text {i}", "bm25", 1) for i in range(N)]
    return write_pool(tmp_path / "pool.csv", rows)


def _auto(tmp_path: Path, judge: str, out: str = "g.csv"):
    return run_harness("judge", "auto", "pool.csv", "--judge", judge, "--out", out, "--no-progress",
                       cwd=tmp_path, cwd_on_path=True, env={"HARNESS_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip


@pytest.mark.parametrize(
    ("judge", "says"),
    [
        ("judges:Raises", "judge 'raises': grade() raised ValueError: model backend exploded (at judges.py:"),
        ("judges:ReturnsNone", "judge 'returns-none': grade() must return one grade (0-3 or None) per pair, each an "
                               "int; it returned None for 12 pairs"),
        ("judges:InitRaises", "judge 'judges:InitRaises': __init__() raised RuntimeError: cannot load judge model"),
        ("judges:BadBatch", "judge 'bad-batch': its `batch_size` must be a whole number, not 'lots' (str)"),
        ("judges:NanConcurrency", "judge 'nan-concurrency': its `concurrency` must be a whole number, not nan"),
        ("judges:Exits", "judge 'exits': grade() raised SystemExit: the judge called sys.exit(4) (at judges.py:"),
        ("./judges:Raises", "'./judges' is not a module name (dotted Python names, not a file path) (put its folder "
                            "on PYTHONPATH and name the module: judges:Raises)"),
        ("judges:LaterRaises", "judge 'later-raises': grade() raised OSError: GPU fell off the bus"),
    ],
)  # fmt: skip
def test_a_failing_team_judge_is_one_line_naming_it_and_the_call(tmp_path: Path, judge: str, says: str) -> None:
    _setup(tmp_path)
    proc = _auto(tmp_path, judge)
    lines = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    if judge == "judges:LaterRaises":  # the grades given before the failure are written
        assert [r.grade for r in read_pool(tmp_path / "g.csv")][:4] == [2, 2, 2, 2]


@pytest.mark.parametrize("judge", ["judges:Person", "judges:Llm"])
def test_a_team_judge_cannot_take_a_name_the_page_or_a_built_in_writes(tmp_path: Path, judge: str) -> None:
    """An output a person graded on the page: a team judge named `person` would pass the check that
    protects those grades and overwrite them; it is refused before anything is read or written."""
    _setup(tmp_path)
    assert _auto(tmp_path, "judges:Numpy", "graded.csv").returncode == 0
    graded = tmp_path / "graded.csv"
    with graded.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:  # what `judge serve` leaves after a person graded every row
        r["grade"], r["judge"], r["judge_key"] = "3", "person", ""
    with graded.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    before = graded.read_bytes()
    proc = _auto(tmp_path, judge, "graded.csv")
    lines = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "a team's judge needs a name of its own" in lines[0], proc.stderr
    assert graded.read_bytes() == before


def test_numpy_integer_grades_and_settings_are_accepted(tmp_path: Path) -> None:
    _setup(tmp_path)
    proc = _auto(tmp_path, "judges:Numpy")
    assert proc.returncode == 0, proc.stderr
    grades = [r.grade for r in read_pool(tmp_path / "g.csv")]
    assert grades == [i % 3 % 4 for i in range(N)] and all(type(g) is int for g in grades)
