"""``harness judge serve --order``: disagreement first (a judge disputing people's grades, or two
judges disputing each other) or a seeded random order; never disagreement-first on a PPI sample."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.judging.pool import PoolRow, write_pool
from harness.judging.server import Judging

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)


def _pool(tmp_path, grades):
    rows = [PoolRow("q1", "query", f"d{i}", "", f"text {i}", "bm25", i + 1, g) for i, g in enumerate(grades)]
    return write_pool(tmp_path / "pool.csv", rows)


def _walk(j: Judging) -> list[int]:
    """The rows the page presents, in order, grading each 0 as it comes."""
    seen = []
    i = j.next_ungraded()
    while i is not None and len(seen) < 20:
        seen.append(i)
        j.grade(i, 0)
        i = j.next_ungraded(i)
    return seen


def test_disputed_grades_come_back_first_largest_gap_first(tmp_path):
    from harness.judging.order import choose

    pool = _pool(tmp_path, [1, 3, None, 2, None, 0])
    judge = tmp_path / "judge.txt"  # rows 1 (3 vs 0: gap 3) and 5 (0 vs 1) are disputed; row 3 agrees
    judge.write_text("q1 0 d1 0\nq1 0 d3 2\nq1 0 d5 1\nq1 0 d0 1\n", encoding="utf-8")
    j = Judging(pool)
    choose(j, str(pool), "disagreement", [str(judge)], 0)
    assert _walk(j) == [1, 5, 2, 4]  # disputed (gap 3, then 1), then the ungraded in file order


def test_two_judges_order_the_ungraded_by_their_gap(tmp_path):
    from harness.judging.agree import read_grades
    from harness.judging.order import disagreement

    pool = _pool(tmp_path, [None, None, None, 2])
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("q1 0 d0 0\nq1 0 d1 0\nq1 0 d2 3\nq1 0 d3 0\n", encoding="utf-8")
    b.write_text("q1 0 d0 1\nq1 0 d1 3\nq1 0 d2 3\nq1 0 d3 3\n", encoding="utf-8")
    j = Judging(pool)
    j.order, j.review = disagreement(j.rows, [read_grades(a), read_grades(b)])
    assert j.review == frozenset() and _walk(j) == [1, 0, 2]  # d3 is graded by people: settled


def test_random_order_is_seeded(tmp_path):
    from harness.judging.order import shuffled

    assert shuffled(10, 3) == shuffled(10, 3) != shuffled(10, 4)
    assert sorted(shuffled(10, 3)) == list(range(10))
    j = Judging(_pool(tmp_path, [None] * 10))
    j.order = shuffled(10, 3)
    assert _walk(j) == shuffled(10, 3)


def test_a_ppi_sample_is_never_served_disagreement_first(tmp_path, capsys):
    pool = _pool(tmp_path, [None] * 4)
    assert main(["judge", "sample", str(pool), "--queries", "1", "--out", str(tmp_path / "s.csv")]) == 0
    (tmp_path / "j.txt").write_text("q1 0 d0 1\n", encoding="utf-8")
    assert main(["judge", "serve", str(tmp_path / "s.csv"), "--order", "disagreement", "--against",
                 str(tmp_path / "j.txt"), "--port", "0"]) == 2  # fmt: skip
    assert "bias the prediction-powered intervals" in capsys.readouterr().err
