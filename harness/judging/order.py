"""The order the judging page presents a pool in: the file's, disagreement first, or random.

- ``disagreement`` with one judge's grades: the rows people graded where the judge gave another
  grade come back first, the largest difference first (each until graded again this session), then
  the ungraded rows. With two judges' grades: the ungraded rows where the two differ most first.
  Where people and a judge disagree is where the judge's errors, or the people's slips, are.
- ``random``: a seeded shuffle, for a calibration sample of pairs (``--calibrate``).

Grades made disagreement-first are chosen by the judge's answers, so they are no random sample:
the page refuses that order on a ``harness judge sample`` file, which prediction-powered intervals
rely on being graded in full and unselected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.judging.agree import Grades, read_grades
from harness.judging.pool import PoolRow
from harness.judging.sample import check_seed, is_sample


def disagreement(rows: Sequence[PoolRow], judges: Sequence[Grades]) -> tuple[list[int], frozenset[int]]:
    """``(order, review)``: every row index, disagreement first; ``review``: graded rows to show again."""
    if not 1 <= len(judges) <= 2:
        raise ValueError("one or two judges' grades")
    keys = [(r.query_id, r.doc_id) for r in rows]
    gap: dict[int, int] = {}
    review: set[int] = set()
    for i, (r, k) in enumerate(zip(rows, keys)):
        a = judges[0].grades.get(k)
        b = r.grade if len(judges) == 1 else judges[1].grades.get(k)
        if a is None or b is None or a == b:
            continue
        if len(judges) == 1:
            review.add(i)  # people graded it, the judge disagrees: present it again
        elif r.grade is not None:
            continue  # two judges disagree, but people have settled it
        gap[i] = abs(a - b)
    first = sorted(gap, key=lambda i: (-gap[i], i))
    rest = [i for i in range(len(rows)) if i not in gap]
    return first + rest, frozenset(review)


def shuffled(n: int, seed: int) -> list[int]:
    """A seeded random order of ``n`` rows (numpy's generator: the same on every machine)."""
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


def choose(judging: Any, pool: str, order: str, against: Sequence[str], seed: int) -> None:
    """Set the page's order on ``judging`` (a :class:`~harness.judging.server.Judging`): ``pool``,
    ``disagreement`` against one or two judges' grade files, or ``random`` with ``seed``; refusing
    what would bias a sample."""
    if order != "disagreement" and against:
        raise InputError("--against goes with --order disagreement", field="--against")
    if order == "random":
        judging.order = shuffled(len(judging.rows), check_seed(seed))
    elif order == "disagreement":
        if is_sample(pool):
            raise InputError(
                "a `judge sample` file is graded in full and in its own order: grades chosen by a judge's "
                "answers would bias the prediction-powered intervals (use --order pool or random)",
                field="--order",
            )
        if not 1 <= len(against) <= 2:
            raise InputError("--order disagreement needs --against GRADES (once or twice)", field="--against")
        judging.order, judging.review = disagreement(judging.rows, [read_grades(p) for p in against])
