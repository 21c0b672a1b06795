"""Nuggets and their per-passage assignments, laid over a run for the nugget metrics.

:class:`NuggetJudgments` is what the scorer needs from the two nuggetizer files: per query its
nuggets (vital or not) and, per (query, passage), the level each nugget was assigned. Laid over a
run (:meth:`NuggetJudgments.input_for`) it gives the :class:`~harness.metrics.nuggets.NuggetInput` the
formulas read: each ranked passage's row of levels, in the run's rank order (trec_eval's: score
descending, ties to the larger doc id), zeros and ``assessed = False`` for a passage nobody assessed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.errors import InputError
from harness.metrics.names import Metric
from harness.metrics.nuggets import LEVELS, NuggetInput
from harness.nuggets.files import Assignment, NuggetRecord, read_assignments, read_nuggets
from harness.run import Run


@dataclass
class NuggetJudgments:
    """qid -> nuggets, (qid, docid) -> assignment; read from files by :meth:`load`."""

    nuggets: Mapping[str, NuggetRecord]
    assignments: Mapping[tuple[str, str], Assignment]

    @classmethod
    def load(
        cls, nuggets: str | os.PathLike[str], assignments: str | os.PathLike[str] | None = None
    ) -> NuggetJudgments:
        """Both files, checked (``FILE:LINE: field`` errors); no assignments file: nothing assessed yet."""
        ns = read_nuggets(nuggets)
        ass = read_assignments(assignments, ns) if assignments is not None else {}
        return cls(ns, ass)

    @property
    def query_ids(self) -> list[str]:
        return list(self.nuggets)

    def levels(self, qid: str, docid: str) -> np.ndarray | None:
        """The passage's level for each of the query's nuggets in order; None when never assessed.
        A nugget its record leaves out counts as not supported by that passage."""
        a = self.assignments.get((qid, docid))
        if a is None:
            return None
        return np.fromiter(
            (LEVELS.get(a.labels.get(n.text, "not_support"), 0) for n in self.nuggets[qid].nuggets), dtype=np.int8
        )

    def input_for(self, run: Run, query_ids: Sequence[str]) -> NuggetInput:
        """Per query of ``query_ids`` (the scorer's order): its nuggets' vital flags and each ranked
        passage's levels, over the run's whole ranking (the formulas cut at k). A query without
        nuggets has none (every formula gives it 0); one the run does not rank has no passages."""
        vital, levels, assessed = [], [], []
        for q in query_ids:
            rec = self.nuggets.get(q)
            ns = rec.nuggets if rec is not None else []
            v = np.fromiter((n.vital for n in ns), dtype=bool, count=len(ns))
            ranked = [d for d, _ in run.ranking(q)]
            lv = np.zeros((len(ranked), len(ns)), dtype=np.int8)
            seen = np.zeros(len(ranked), dtype=bool)
            if rec is not None:
                for r, d in enumerate(ranked):
                    row = self.levels(q, d)
                    if row is not None:
                        lv[r], seen[r] = row, True
            vital.append(v)
            levels.append(lv)
            assessed.append(seen)
        return NuggetInput(vital, levels, assessed)

    def qrels(self) -> dict[str, dict[str, int]]:
        """Judgments implied by the assignments, for scoring with nuggets alone (no qrels file): every
        query with nuggets, each assessed passage graded 2 when it supports a nugget, 1 when it only
        partially supports one, 0 when it supports none. They define the scored queries and
        ``judged@k`` (= ``nugget_assessed@k``); the nugget metrics never read them."""
        out: dict[str, dict[str, int]] = {q: {} for q in self.nuggets}
        for (q, d), a in self.assignments.items():
            out[q][d] = max((LEVELS.get(x, 0) for x in a.labels.values()), default=0)
        return out

    def check_overlap(self, run: Run, label: str) -> None:
        """Refuse a run that ranks none of the queries with nuggets (another dataset, renamed ids):
        its nugget metrics would all be 0 and look like a bad retriever."""
        if not any(q in self.nuggets for q in run.query_ids):
            raise InputError(
                f"run {label} shares no query ids with the nuggets file "
                f"(run e.g. {', '.join(map(repr, run.query_ids[:3])) or 'none'}; "
                f"nuggets e.g. {', '.join(map(repr, list(self.nuggets)[:3]))}); are they from the same dataset?"
            )


def for_metrics(
    metrics: Sequence[Metric],
    nuggets: str | os.PathLike[str] | None,
    assignments: str | os.PathLike[str] | None,
    *,
    qrels_given: bool,
    flags: tuple[str, str, str] = ("--nuggets", "--assignments", "--qrels"),
) -> NuggetJudgments | None:
    """The nugget judgments the asked metrics need, read and checked before any scoring; None when
    no nugget metric is asked and no nuggets file given. Without qrels only nugget metrics can be
    scored (``judged@k`` excepted: the assignments imply it). ``flags``: how the three inputs are
    named in errors (the command's flags, or a config's fields)."""
    nug = [m.name for m in metrics if m.needs_nuggets]
    if nuggets is None:
        if nug:
            raise InputError(f"{', '.join(nug)} needs a nuggets file", field=flags[0])
        if assignments is not None:
            raise InputError(f"assignments need their nuggets file ({flags[0]})", field=flags[1])
        return None
    if not qrels_given:
        other = [m.name for m in metrics if not m.needs_nuggets and m.kind != "judged"]
        if other:
            raise InputError(
                f"{', '.join(other)} needs qrels; with nuggets alone ask nugget metrics (e.g. nugget_vital@10)",
                field=flags[2],
            )
    return NuggetJudgments.load(nuggets, assignments)
