"""Nugget metrics: does the retrieved context hold what an answer needs? (TREC RAG 2024's
AutoNuggetizer, castorini/nuggetizer, applied to the top k of a ranking instead of an answer).

A query's *nuggets* are atomic facts an answer needs, each ``vital`` or ``okay``. A judge or a person
says, for a passage, whether it ``support``s, ``partial_support``s or does ``not_support`` each
nugget (``nuggetizer assign --input-kind retrieval`` writes exactly this, one record per (query,
passage)). The retrieved context then holds a nugget as well as its best passage does, so per query:

    best_k(n) = max over the *assessed* passages p in the run's top k of level(p, n)
    level: support = 2 > partial_support = 1 > not_support = 0

A passage of the top k that nobody assessed counts as ``not_support`` (level 0), as an unjudged
document counts non-relevant in trec_eval; how many there are is ``nugget_assessed@k`` (read it
beside the others, as ``judged@k`` is read beside nDCG). Then nuggetizer's four formulas
(``nuggetizer.core.metrics.calculate_nugget_scores``) over ``best_k``; V is the query's vital
nuggets, A all of them:

    nugget_strict_vital@k = |{n in V : best_k(n) = 2}| / |V|
    nugget_strict_all@k   = |{n in A : best_k(n) = 2}| / |A|
    nugget_vital@k        = (|{n in V : best_k(n) = 2}| + 0.5 |{n in V : best_k(n) = 1}|) / |V|
    nugget_all@k          = (|{n in A : best_k(n) = 2}| + 0.5 |{n in A : best_k(n) = 1}|) / |A|

each 0 when its denominator is 0 (a query with no vital nugget scores 0 on the vital ones, as
nuggetizer scores it). The sums are small integers and halves, so they and nuggetizer's are the
same doubles, and so are the quotients: the test compares them bit for bit (1e-12 asked).

Pure numpy: the scorer hands a :class:`NuggetInput` (built from the nugget files and a run by
:mod:`harness.nuggets`) to the registered compute functions below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.metrics.registry import UNIT, register

#: the assignment labels nuggetizer writes, as levels; ``failed`` (nuggetizer's mark for a reply it
#: could not parse) scores as ``not_support``, as ``calculate_nugget_scores`` scores it
LEVELS = {"support": 2, "partial_support": 1, "not_support": 0, "failed": 0}
#: the importance labels nuggetizer writes; only ``vital`` counts in the vital formulas (``failed``:
#: nuggetizer's mark for a reply it could not parse, counted among all nuggets as it counts it)
IMPORTANCES = ("vital", "okay", "failed")


@dataclass
class NuggetInput:
    """Per scored query (in the scorer's query order) what the nugget formulas read.

    ``vital[i]``: bool array, one entry per nugget of query ``i`` (its nuggets, retrieved or not);
    ``levels[i]``: int8 array ``(ranked passages, nuggets)``: the level each ranked passage was
    assigned for each nugget, in rank order (0 for a passage never assessed); ``assessed[i]``: bool
    array, one per ranked passage, true when the passage has an assignment record.
    """

    vital: list[np.ndarray]
    levels: list[np.ndarray]
    assessed: list[np.ndarray]

    def __post_init__(self) -> None:
        if not (len(self.vital) == len(self.levels) == len(self.assessed)):
            raise ValueError("vital, levels and assessed must hold one entry per query each")

    def best(self, k: int) -> list[np.ndarray]:
        """Per query, each nugget's best level over the top ``k`` ranked passages (0 when none)."""
        out = []
        for v, lv in zip(self.vital, self.levels):
            top = np.asarray(lv, dtype=np.int8)[:k]
            out.append(top.max(axis=0) if top.size else np.zeros(len(v), dtype=np.int8))
        return out


def _score(best: Sequence[np.ndarray], vital: Sequence[np.ndarray], *, strict: bool, vital_only: bool) -> np.ndarray:
    """One of nuggetizer's four formulas over each query's best levels (see the module docstring)."""
    out = np.zeros(len(best))
    for i, (b, v) in enumerate(zip(best, vital)):
        sel = b[np.asarray(v, dtype=bool)] if vital_only else b
        if len(sel) == 0:
            continue
        supported = float(np.count_nonzero(sel == 2))
        if not strict:
            supported += 0.5 * float(np.count_nonzero(sel == 1))
        out[i] = supported / len(sel)
    return out


def nugget_assessed(ctx: NuggetInput, k: int) -> np.ndarray:
    """Share of the top k passages that carry an assignment record (the nugget ``judged@k``).

        nugget_assessed@k = |{r <= min(k, n) : passage r is assessed}| / min(k, n)

    n = passages retrieved; 0 when nothing is retrieved.
    """
    out = np.zeros(len(ctx.assessed))
    for i, a in enumerate(ctx.assessed):
        top = np.asarray(a, dtype=bool)[:k]
        if len(top):
            out[i] = np.count_nonzero(top) / len(top)
    return out


@register("nugget_strict_vital", cutoff="required", source="nuggets", bounds=UNIT)
def _strict_vital(ctx: NuggetInput, k: int) -> np.ndarray:
    """nugget_strict_vital@k = |{n vital : best_k(n) = support}| / |vital nuggets| (0 with none);
    best_k(n): the best assignment of nugget n among the assessed passages of the top k
    (support > partial_support > not_support; unassessed passages count not_support)."""
    return _score(ctx.best(k), ctx.vital, strict=True, vital_only=True)


@register("nugget_strict_all", cutoff="required", source="nuggets", bounds=UNIT)
def _strict_all(ctx: NuggetInput, k: int) -> np.ndarray:
    """nugget_strict_all@k = |{n : best_k(n) = support}| / |nuggets| (0 with none);
    best_k(n) as in nugget_strict_vital@k."""
    return _score(ctx.best(k), ctx.vital, strict=True, vital_only=False)


@register("nugget_vital", cutoff="required", source="nuggets", bounds=UNIT)
def _vital(ctx: NuggetInput, k: int) -> np.ndarray:
    """nugget_vital@k = (|{n vital : best_k(n) = support}| + 0.5 |{n vital : best_k(n) = partial_support}|)
    / |vital nuggets| (0 with none); best_k(n) as in nugget_strict_vital@k."""
    return _score(ctx.best(k), ctx.vital, strict=False, vital_only=True)


@register("nugget_all", cutoff="required", source="nuggets", bounds=UNIT)
def _all(ctx: NuggetInput, k: int) -> np.ndarray:
    """nugget_all@k = (|{n : best_k(n) = support}| + 0.5 |{n : best_k(n) = partial_support}|) / |nuggets|
    (0 with none); best_k(n) as in nugget_strict_vital@k."""
    return _score(ctx.best(k), ctx.vital, strict=False, vital_only=False)


@register("nugget_assessed", cutoff="required", source="nuggets", bounds=UNIT)
def _assessed(ctx: NuggetInput, k: int) -> np.ndarray:
    """nugget_assessed@k = assessed passages in the top min(k, n) / min(k, n), n = passages retrieved
    (0 when none): how far the nugget assignments reach the ranking, as judged@k for qrels."""
    return nugget_assessed(ctx, k)
