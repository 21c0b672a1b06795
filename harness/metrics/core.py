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


def _at(cum: np.ndarray, k: int | None) -> np.ndarray:
    """Column k-1 of a per-rank cumulative matrix (the last column when k exceeds the depth)."""
    depth = cum.shape[1]
    kk = depth if k is None else min(k, depth)
    if kk == 0:
        return np.zeros(cum.shape[0])
    return cum[:, kk - 1]


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


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
    cum = np.cumsum(rel, axis=1, dtype=np.float64)
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    logs = _log_ranks(max(depth, ideal.shape[1]))
    cache: dict[str, np.ndarray] = {}

    def dcg_cum(exponential: bool) -> np.ndarray:
        key = f"dcg{exponential}"
        if key not in cache:
            cache[key] = np.cumsum(_gain(grades, exponential) / logs[:depth], axis=1)
            cache["i" + key] = np.cumsum(_gain(ideal, exponential) / logs[: ideal.shape[1]], axis=1)
        return cache[key], cache["i" + key]

    def ap_cum() -> np.ndarray:
        if "ap" not in cache:
            cache["ap"] = np.cumsum(np.where(rel, cum / ranks, 0.0), axis=1)
        return cache["ap"]

    out: dict[str, np.ndarray] = {}
    for m in metrics:
        k = m.k
        if m.kind == "hit_rate":
            v = (_at(cum, k) > 0).astype(np.float64)
        elif m.kind == "precision":
            v = _at(cum, k) / float(k)
        elif m.kind == "recall":
            v = _safe_div(_at(cum, k), num_rel)
        elif m.kind == "mrr":
            has = rel.any(axis=1) if depth else np.zeros(nq, dtype=bool)
            first = np.argmax(rel, axis=1) if depth else np.zeros(nq, dtype=np.int64)
            if k is not None:
                has &= first < k
            v = np.where(has, 1.0 / (first + 1.0), 0.0)
        elif m.kind in ("ndcg", "ndcg_exp"):
            dcg, idcg = dcg_cum(m.kind == "ndcg_exp")
            v = _safe_div(_at(dcg, k), _at(idcg, k))
        elif m.kind == "map":
            v = _safe_div(_at(ap_cum(), k), num_rel)
        elif m.kind == "r_precision":
            if depth == 0:
                v = np.zeros(nq)
            else:
                col = np.clip(num_rel.astype(np.int64), 1, depth) - 1
                v = _safe_div(cum[np.arange(nq), col], num_rel)
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
