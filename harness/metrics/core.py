"""The one implementation of every judgment-based metric, on ranked grade matrices.

Input per block of queries: ``grades[i, j]`` is the judged grade of the document at rank ``j+1``
of query ``i`` (0 for unjudged and for padding), already in canonical order; ``num_rel[i]`` the
number of judged documents with grade >= 1; ``ideal[i]`` the positive judged grades sorted
descending (zero padded). Definitions follow trec_eval (DESIGN section 5):

- ``hit_rate@k`` = 1[rel_k > 0]                                  (success.k)
- ``mrr@k``      = 1 / rank of the first relevant doc if <= k, else 0   (recip_rank)
- ``precision@k``= rel_k / k                                       (P.k)
- ``recall@k``   = rel_k / R                                       (recall.k)
- ``ndcg@k``     = sum_{r<=k} g_r / log2(r+1)  /  sum_{r<=k} g*_r / log2(r+1),
                   g = max(grade, 0), g* the ideal (all judged grades sorted)   (ndcg_cut.k)
- ``ndcg_exp@k`` = the same with g = 2^grade - 1 for grade > 0                  (ndcg_burges)
- ``map@k``      = sum_{r<=k, rel_r} (rel_r / r)  /  R             (map_cut.k; map: k = inf)
- ``r_precision``= rel_R / R                                       (Rprec)

where ``rel_k`` counts relevant (grade >= 1) documents in the top k and R = ``num_rel``.
Every metric is 0 for a query with R = 0 or with nothing retrieved; nothing is rounded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.metrics.names import Metric


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


def compute(
    grades: np.ndarray,
    num_rel: np.ndarray,
    ideal: np.ndarray,
    metrics: Sequence[Metric],
) -> dict[str, np.ndarray]:
    """Per-query values (float64, shape ``(n_queries,)``) of every metric, keyed by name."""
    grades = np.asarray(grades, dtype=np.float64)
    nq, depth = grades.shape
    num_rel = np.asarray(num_rel, dtype=np.float64)
    rel = grades >= 1.0
    logs = _log_ranks(max(depth, ideal.shape[1]))
    counts: dict[int, np.ndarray] = {}
    terms: dict[str, _Terms] = {}

    def found(k: int | None) -> np.ndarray:
        """Relevant docs in the top k (integer counts: exact in any order)."""
        kk = depth if k is None else min(k, depth)
        if kk not in counts:
            counts[kk] = np.count_nonzero(rel[:, :kk], axis=1).astype(np.float64)
        return counts[kk]

    def gain_terms(exponential: bool) -> _Terms:
        key = f"gain{exponential}"
        if key not in terms:
            rows, cols = np.nonzero(grades > 0)
            g = grades[rows, cols]
            terms[key] = _Terms(nq, rows, cols, (np.exp2(g) - 1.0 if exponential else g) / logs[cols])
        return terms[key]

    def precision_terms() -> _Terms:
        if "ap" not in terms:
            rows, cols = np.nonzero(rel)
            terms["ap"] = _Terms(nq, rows, cols, _nth_in_row(rows, nq) / (cols + 1.0))
        return terms["ap"]

    out: dict[str, np.ndarray] = {}
    for m in metrics:
        k = m.k
        if m.kind == "hit_rate":
            v = (found(k) > 0).astype(np.float64)
        elif m.kind == "precision":
            v = found(k) / float(k)
        elif m.kind == "recall":
            v = _safe_div(found(k), num_rel)
        elif m.kind == "mrr":
            has = rel.any(axis=1) if depth else np.zeros(nq, dtype=bool)
            first = np.argmax(rel, axis=1) if depth else np.zeros(nq, dtype=np.int64)
            if k is not None:
                has &= first < k
            v = np.where(has, 1.0 / (first + 1.0), 0.0)
        elif m.kind in ("ndcg", "ndcg_exp"):
            exponential = m.kind == "ndcg_exp"
            width = ideal.shape[1] if k is None else min(k, ideal.shape[1])
            idcg = np.cumsum(_gain(ideal[:, :width], exponential) / logs[:width], axis=1)
            v = _safe_div(gain_terms(exponential).sum_to(k), idcg[:, -1] if width else np.zeros(nq))
        elif m.kind == "map":
            v = _safe_div(precision_terms().sum_to(k), num_rel)
        elif m.kind == "r_precision":
            within = np.arange(depth)[None, :] < num_rel[:, None]
            v = _safe_div(np.count_nonzero(rel & within, axis=1).astype(np.float64), num_rel)
        else:  # pragma: no cover - parse_metric guards this
            raise ValueError(f"{m.name} is not a judgment-based metric")
        out[m.name] = v
    return out


def ideal_length(metrics: Sequence[Metric], max_num_rel: int) -> int:
    """How many ideal grades nDCG needs: the largest cutoff, or every judged doc when uncut."""
    need = 0
    for m in metrics:
        if m.kind in ("ndcg", "ndcg_exp"):
            need = max(need, max_num_rel if m.k is None else min(m.k, max_num_rel))
    return need
