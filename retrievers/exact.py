"""Exact (filtered) nearest-neighbour search over an embedding matrix: the reference an approximate
index's ``ann_recall@k`` is measured against.

One implementation for every retriever that reports ANN recall (dense's FAISS indexes and the vector
database drivers), so "recall against exact search" means the same top k everywhere: the same
embeddings, the same similarity, and for a query with a metadata filter only the documents the filter
admits (:mod:`harness.filters`), never a post-filtered top k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from harness.filters import Filter, group_by_filter
from harness.model import Query

Distance = Literal["cosine", "ip", "l2"]

#: query rows scored per matrix product: bounds the (rows x documents) score block in memory
_BLOCK = 64


def similarity(q: np.ndarray, emb: np.ndarray, distance: Distance = "ip") -> np.ndarray:
    """Higher-is-better scores of every query row against every document row: inner product,
    cosine (rows normalised here), or negative squared L2 distance."""
    if distance == "cosine":
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    s = q @ emb.T
    if distance == "l2":
        s = 2 * s - (q * q).sum(axis=1, keepdims=True) - (emb * emb).sum(axis=1)[None, :]
    return s


def topk(scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` best columns (``-1`` padding where fewer are allowed), best first."""
    n = scores.shape[1]
    if allowed is not None:
        scores = np.where(allowed[None, :], scores, -np.inf)
    kk = min(k, n)
    if kk == 0:
        return np.zeros((len(scores), k)), np.full((len(scores), k), -1, dtype=np.int64)
    part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk] if kk < n else np.tile(np.arange(n), (len(scores), 1))
    ps = np.take_along_axis(scores, part, axis=1)
    order = np.argsort(-ps, axis=1, kind="stable")
    idx = np.take_along_axis(part, order, axis=1)
    sc = np.take_along_axis(ps, order, axis=1)
    idx = np.where(np.isfinite(sc), idx, -1)
    out_i = np.full((len(scores), k), -1, dtype=np.int64)
    out_s = np.full((len(scores), k), -np.inf)
    out_i[:, :kk], out_s[:, :kk] = idx, sc
    return out_s, out_i


def exact_search(
    q: np.ndarray,
    emb: np.ndarray,
    k: int,
    *,
    distance: Distance = "ip",
    queries: Sequence[Query] | None = None,
    masks: Callable[[Filter], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, positions)`` of the exact top ``k`` of each query row; with ``queries`` and
    ``masks`` a query's filter restricts its candidates to the documents its mask admits."""
    scores = np.full((len(q), k), -np.inf)
    idx = np.full((len(q), k), -1, dtype=np.int64)
    groups: list[tuple[Filter | None, list[int]]]
    if queries is not None and masks is not None:
        groups = group_by_filter(queries)
    else:
        groups = [(None, list(range(len(q))))]
    for flt, rows in groups:
        allowed = None if flt is None else masks(flt)  # type: ignore[misc]
        for start in range(0, len(rows), _BLOCK):
            block = rows[start : start + _BLOCK]
            s, i = topk(similarity(q[block], emb, distance), k, allowed)
            scores[block], idx[block] = s, i
    return scores, idx
