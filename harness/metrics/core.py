"""The one implementation of every judgment-based metric, on ranked blocks of queries.

Input per block of queries (a :class:`Ranked`): the judged documents found in the rankings, as
``(row, rank - 1, grade)`` triples in canonical rank order (from a padded grade matrix with
:meth:`Ranked.from_dense`, or straight from the array path's lookup); ``num_rel[i]`` the number of
judged documents with grade >= 1; ``ideal[i]`` the positive judged grades sorted descending (zero
padded); and, for the metrics that ask for them, every judged document (grade 0 included) and
each ranking's length. Definitions follow trec_eval (docs/architecture.md, "Metric definitions"); each
metric's formula is the docstring of its compute function below, which is also its one registration
(:mod:`harness.metrics.registry`).

Notation: ``rel_k`` counts relevant (grade >= 1) documents in the top k and R = ``num_rel``.
Every metric is 0 for a query with R = 0 or with nothing retrieved (``judged@k``: nothing
retrieved); nothing is rounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.metrics.registry import UNIT, Metric, register, spec


def _log_ranks(n: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..n; gains are divided by it (not multiplied by its inverse) so
    every per-query value is bit-for-bit trec_eval's."""
    return np.log2(np.arange(2, n + 2, dtype=np.float64))


def _gain(grades: np.ndarray, exponential: bool) -> np.ndarray:
    positive = np.maximum(grades, 0.0)
    return np.where(positive > 0, np.exp2(positive) - 1.0, 0.0) if exponential else positive


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


class _Terms:
    """The non-zero terms of a per-rank sum (gains, precisions), packed left per query in rank order.

    Summing them one column at a time adds exactly the terms trec_eval adds, in its order (adding
    the zeros in between would not change a bit, but costs a pass over every rank), so a cut at k
    costs O(queries x relevant found) instead of O(queries x depth).
    """

    def __init__(self, nq: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        counts = np.bincount(rows, minlength=nq)
        width = int(counts.max(initial=0))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        slot = np.arange(rows.size) - starts[rows]
        self.ranks = np.full((nq, width), np.iinfo(np.int64).max, dtype=np.int64)
        self.values = np.zeros((nq, width))
        self.ranks[rows, slot] = cols + 1
        self.values[rows, slot] = values

    def sum_to(self, k: int | None) -> np.ndarray:
        """Per query, the sequential sum of the terms at ranks <= k (all ranks when k is None)."""
        acc = np.zeros(self.values.shape[0])
        for j in range(self.values.shape[1]):
            acc += self.values[:, j] if k is None else np.where(self.ranks[:, j] <= k, self.values[:, j], 0.0)
        return acc


def _nth_in_row(rows: np.ndarray, nq: int) -> np.ndarray:
    """For row-sorted entries, 1 for the first entry of each row, 2 for the second..."""
    starts = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=nq))[:-1]))
    return np.arange(rows.size) - starts[rows] + 1


class Ranked:
    """One block of ranked queries as every judgment metric sees it: the judged documents found in
    the rankings, as sparse ``(row, rank - 1, grade)`` triples in row-major (rank) order, with the
    intermediate sums that several metrics share (relevant found in the top k, gain and precision
    terms) computed once per block and cached.

    Only ranked documents with a nonzero grade matter to the grade-based metrics, and they are a
    small share of a ranking, so nothing here passes over every rank of every query. When
    ``complete_judged`` is true the triples also hold every ranked document judged 0 (what
    ``judged@k`` needs); ``retrieved`` is each query's ranking length.
    """

    def __init__(
        self,
        shape: tuple[int, int],
        rows: np.ndarray,
        cols: np.ndarray,
        grades: np.ndarray,
        num_rel: np.ndarray,
        ideal: np.ndarray,
        *,
        complete_judged: bool = False,
        retrieved: np.ndarray | None = None,
        num_nonrel: np.ndarray | None = None,
    ) -> None:
        self.nq, self.depth = shape
        self._num_nonrel = num_nonrel
        self.rows, self.cols = rows, cols
        self.grades = np.asarray(grades, dtype=np.float64)
        self.num_rel = np.asarray(num_rel, dtype=np.float64)
        self.ideal = ideal
        self.complete_judged = complete_judged
        self._retrieved = retrieved
        rel = self.grades >= 1.0
        self.rel_rows, self.rel_cols = rows[rel], cols[rel]
        self.logs = _log_ranks(max(self.depth, ideal.shape[1]))
        self._counts: dict[int, np.ndarray] = {}
        self._terms: dict[str, _Terms] = {}

    @classmethod
    def from_dense(
        cls,
        grades: np.ndarray,
        num_rel: np.ndarray,
        ideal: np.ndarray,
        *,
        judged: np.ndarray | None = None,
        retrieved: np.ndarray | None = None,
        num_nonrel: np.ndarray | None = None,
    ) -> Ranked:
        """From a ``(queries, depth)`` grade matrix (0 for unjudged and padding) and, optionally,
        the matching judged-at-all matrix."""
        grades = np.asarray(grades, dtype=np.float64)
        rows, cols = np.nonzero(grades != 0 if judged is None else (judged | (grades != 0)))
        return cls(
            grades.shape,
            rows,
            cols,
            grades[rows, cols],
            num_rel,
            ideal,
            complete_judged=judged is not None,
            retrieved=retrieved,
            num_nonrel=num_nonrel,
        )

    @property
    def num_nonrel(self) -> np.ndarray:
        """Documents judged non-relevant (grade 0) per query, retrieved or not (float64)."""
        if self._num_nonrel is None:
            raise ValueError("this metric needs the judged non-relevant counts (compute(..., num_nonrel=...))")
        return np.asarray(self._num_nonrel, dtype=np.float64)

    @property
    def retrieved(self) -> np.ndarray:
        """Ranking length per query (float64)."""
        if self._retrieved is None:
            raise ValueError("this metric needs the ranking lengths (compute(..., retrieved=...))")
        return np.asarray(self._retrieved, dtype=np.float64)

    def _cut(self, k: int | None) -> int:
        return self.depth if k is None else min(k, self.depth)

    def found(self, k: int | None) -> np.ndarray:
        """Relevant docs in the top k (integer counts: exact in any order)."""
        kk = self._cut(k)
        if kk not in self._counts:
            sel = self.rel_rows if kk >= self.depth else self.rel_rows[self.rel_cols < kk]
            self._counts[kk] = np.bincount(sel, minlength=self.nq).astype(np.float64)
        return self._counts[kk]

    def judged_in_top(self, k: int | None) -> np.ndarray:
        """Documents carrying any judgment (grade 0 and negatives too) in the top k."""
        if not self.complete_judged:
            raise ValueError("this metric needs every judged document (compute(..., judged=...))")
        kk = self._cut(k)
        sel = self.rows if kk >= self.depth else self.rows[self.cols < kk]
        return np.bincount(sel, minlength=self.nq).astype(np.float64)

    def first_relevant(self) -> tuple[np.ndarray, np.ndarray]:
        """Per query: whether any relevant doc was retrieved, and the 0-based rank of the first."""
        has = np.zeros(self.nq, dtype=bool)
        first = np.zeros(self.nq, dtype=np.int64)
        if self.rel_rows.size:
            starts = np.flatnonzero(np.concatenate(([True], self.rel_rows[1:] != self.rel_rows[:-1])))
            has[self.rel_rows[starts]] = True
            first[self.rel_rows[starts]] = self.rel_cols[starts]
        return has, first

    def gain_terms(self, exponential: bool) -> _Terms:
        key = f"gain{exponential}"
        if key not in self._terms:
            pos = self.grades > 0
            rows, cols, g = self.rows[pos], self.cols[pos], self.grades[pos]
            self._terms[key] = _Terms(self.nq, rows, cols, (np.exp2(g) - 1.0 if exponential else g) / self.logs[cols])
        return self._terms[key]

    def precision_terms(self) -> _Terms:
        if "ap" not in self._terms:
            rows, cols = self.rel_rows, self.rel_cols
            self._terms["ap"] = _Terms(self.nq, rows, cols, _nth_in_row(rows, self.nq) / (cols + 1.0))
        return self._terms["ap"]


# ----------------------------------------------------------------------------- the metrics
# Each is declared once: its @register line (name, aliases, cutoff rule, inputs) and its formula.


@register("hit_rate", cutoff="optional", aliases=("hitrate", "hit", "success"), bounds=UNIT)
def hit_rate(r: Ranked, k: int | None) -> np.ndarray:
    """1 if any relevant doc is in the top k (trec_eval success.k): ``hit_rate@k = 1[rel_k > 0]``."""
    return (r.found(k) > 0).astype(np.float64)


@register("mrr", cutoff="optional", aliases=("recip_rank", "rr"), bounds=UNIT)
def mrr(r: Ranked, k: int | None) -> np.ndarray:
    """Reciprocal rank of the first relevant doc within the top k, else 0 (trec_eval recip_rank).

    ``mrr@k = 1 / min{rank r : grade_r >= 1}`` if that rank is <= k, else 0.
    """
    has, first = r.first_relevant()
    if k is not None:
        has &= first < k
    return np.where(has, 1.0 / (first + 1.0), 0.0)


@register("precision", cutoff="required", aliases=("p",), bounds=UNIT)
def precision(r: Ranked, k: int | None) -> np.ndarray:
    """Relevant in the top k divided by k, even when fewer were retrieved (trec_eval P.k): ``rel_k / k``."""
    return r.found(k) / float(k)


@register("recall", cutoff="optional", aliases=("r",), bounds=UNIT)
def recall(r: Ranked, k: int | None) -> np.ndarray:
    """Relevant in the top k over all relevant judged (trec_eval recall.k): ``rel_k / R``."""
    return _safe_div(r.found(k), r.num_rel)


@register("hits", cutoff="optional", bounds=(0.0, math.inf))
def hits(r: Ranked, k: int | None) -> np.ndarray:
    """Number of relevant docs in the top k, a count (ranx hits@k): ``hits@k = rel_k``.

    Not a rate: ``hit_rate@k`` (alias ``success``) is the 0/1 variant.
    """
    return r.found(k).copy()


@register("ndcg", cutoff="optional", aliases=("ndcg_cut",), ideal=True, bounds=UNIT)
def ndcg(r: Ranked, k: int | None) -> np.ndarray:
    """nDCG with linear gain = grade (trec_eval ndcg_cut.k / ndcg).

    ``ndcg@k = sum_{r<=k} g_r / log2(r+1)  /  sum_{r<=k} g*_r / log2(r+1)``, with
    ``g = max(grade, 0)`` and ``g*`` the ideal ranking (all judged grades sorted descending).
    """
    return _ndcg(r, k, exponential=False)


@register("ndcg_exp", cutoff="optional", aliases=("ndcg_burges",), ideal=True, bounds=UNIT)
def ndcg_exp(r: Ranked, k: int | None) -> np.ndarray:
    """nDCG with exponential gain 2^grade - 1 (ranx ndcg_burges).

    As ``ndcg@k`` with ``g = 2^grade - 1`` for grade > 0, else 0 (ideal gains likewise).
    """
    return _ndcg(r, k, exponential=True)


def _ndcg(r: Ranked, k: int | None, exponential: bool) -> np.ndarray:
    width = r.ideal.shape[1] if k is None else min(k, r.ideal.shape[1])
    idcg = np.cumsum(_gain(r.ideal[:, :width], exponential) / r.logs[:width], axis=1)
    return _safe_div(r.gain_terms(exponential).sum_to(k), idcg[:, -1] if width else np.zeros(r.nq))


@register("map", cutoff="optional", aliases=("ap", "map_cut"), bounds=UNIT)
def average_precision(r: Ranked, k: int | None) -> np.ndarray:
    """Average precision, cut at k (trec_eval map_cut.k; ``map``: the whole ranking).

    ``map@k = sum_{r<=k, grade_r >= 1} (rel_r / r)  /  R``.
    """
    return _safe_div(r.precision_terms().sum_to(k), r.num_rel)


@register("r_precision", cutoff="none", aliases=("rprec", "r-precision", "rprecision"), bounds=UNIT)
def r_precision(r: Ranked, k: int | None) -> np.ndarray:
    """Relevant in the top R over R, R = number of relevant judged (trec_eval Rprec): ``rel_R / R``."""
    within = r.rel_cols < r.num_rel[r.rel_rows]
    return _safe_div(np.bincount(r.rel_rows[within], minlength=r.nq).astype(np.float64), r.num_rel)


@register("judged", cutoff="optional", judged=True, bounds=UNIT)
def judged(r: Ranked, k: int | None) -> np.ndarray:
    """Share of the top k that carries any judgment, whatever its grade (ir_measures Judged@k).

    ``judged@k = |{r <= min(k, n) : doc_r is judged}| / min(k, n)``, n = documents retrieved (so a
    ranking shorter than k is not penalised, as in ir_measures / OpenNIR); 0 when nothing is
    retrieved. Grade 0 and negative grades count as judged; it needs no relevant document.
    """
    count = r.judged_in_top(k)
    n = r.retrieved
    return _safe_div(count, n if k is None else np.minimum(n, float(k)))


@register("bpref", cutoff="none", judged=True, bounds=UNIT)
def bpref(r: Ranked, k: int | None) -> np.ndarray:
    """Binary preference: how many judged non-relevant docs are ranked above each relevant one
    (trec_eval bpref, Buckley & Voorhees 2004); unjudged documents are skipped, not counted wrong.

    ``bpref = 1/R * sum_{retrieved r, grade_r >= 1} (1 - min(n_r, R) / min(N, R))``, with ``n_r``
    the documents judged non-relevant (grade 0) ranked above r, N the documents judged
    non-relevant for the query (retrieved or not), and the term 1 when ``n_r = 0``. Negative
    grades count as unjudged (trec_eval's pool markers). The whole ranking; no cutoff.
    """
    keep = r.grades >= 0  # the triples hold every judged doc (registered judged=True)
    rows, cols, grades = r.rows[keep], r.cols[keep], r.grades[keep]
    nonrel = grades < 1
    starts = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=r.nq))[:-1]))
    before = np.cumsum(nonrel) - nonrel  # non-relevant docs earlier in the block
    above = (before - np.concatenate(([0], np.cumsum(nonrel)))[starts[rows]]).astype(np.float64)
    rel = ~nonrel
    rows, cols, above = rows[rel], cols[rel], above[rel]
    num_rel, num_nonrel = r.num_rel[rows], r.num_nonrel[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(above > 0, 1.0 - np.minimum(above, num_rel) / np.minimum(num_nonrel, num_rel), 1.0)
    return _safe_div(_Terms(r.nq, rows, cols, terms).sum_to(None), r.num_rel)


# ----------------------------------------------------------------------------- dispatch


def compute(
    grades: np.ndarray,
    num_rel: np.ndarray,
    ideal: np.ndarray,
    metrics: Sequence[Metric],
    *,
    judged: np.ndarray | None = None,
    retrieved: np.ndarray | None = None,
    num_nonrel: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Per-query values (float64, shape ``(n_queries,)``) of every metric, keyed by name.

    ``judged`` (bool, the shape of ``grades``), ``retrieved`` (ranking lengths) and ``num_nonrel``
    (judged grade-0 documents per query: ``bpref``) are needed only by metrics registered with
    ``judged=True``; see :func:`needs_judged`.
    """
    ranked = Ranked.from_dense(grades, num_rel, ideal, judged=judged, retrieved=retrieved, num_nonrel=num_nonrel)
    return compute_ranked(ranked, metrics)


def compute_ranked(ranked: Ranked, metrics: Sequence[Metric]) -> dict[str, np.ndarray]:
    """Per-query values of every metric for one block in sparse form (see :class:`Ranked`)."""
    out: dict[str, np.ndarray] = {}
    for m in metrics:
        s = spec(m.kind)
        if s.needs_embeddings:
            raise ValueError(f"{m.name} is computed from embeddings, not judgments")
        out[m.name] = s.compute(ranked, m.k)
    return out


def ideal_length(metrics: Sequence[Metric], max_num_rel: int) -> int:
    """How many ideal grades the metrics need (nDCG): the largest cutoff, or every judged doc when uncut."""
    need = 0
    for m in metrics:
        if spec(m.kind).ideal:
            need = max(need, max_num_rel if m.k is None else min(m.k, max_num_rel))
    return need


def needs_judged(metrics: Sequence[Metric]) -> bool:
    """Whether any metric needs the judged-at-all matrix (so callers build it only then)."""
    return any(spec(m.kind).judged for m in metrics)
