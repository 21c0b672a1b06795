"""Rank fusion of any number of runs: reciprocal rank fusion and weighted score fusion.

Pure functions over :class:`~harness.run.Run` arrays (numpy, no Python loop over documents).
ranx has the same methods, but through numba-compiled dicts (a JIT start-up cost and numba as a
runtime dependency); ranx stays the test oracle instead.

Semantics, the same for every method:
- a run's ranks are its canonical order (score descending, ties by doc id descending), 1-based;
- a document missing from a run gets that run's *floor*: RRF adds nothing for it; weighted fusion
  gives it the lowest normalised score that run can give on that query (0 under ``minmax``; the
  list's lowest z-score under ``zscore``), so not being retrieved is never better than being
  retrieved last;
- ``minmax`` maps a list to [0, 1]; a list whose scores are all equal (one document, say) maps
  to 1, so the run still says "these, not the others"; ``zscore`` maps to (s - mean) / std, and a
  list with std 0 to 0;
- a query absent from a run (or with an empty list there) takes nothing from that run;
- the fused run is canonical too: fused scores equal as trec_eval sees them (float32) are ordered
  by doc id descending.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from harness.errors import InputError
from harness.run import PAD, Run

Normalization = Literal["minmax", "zscore"]
RRF_K = 60


def rrf(
    runs: Sequence[Run], *, k: float = RRF_K, weights: Sequence[float] | None = None, depth: int | None = None
) -> Run:
    """Reciprocal rank fusion (Cormack et al., 2009): ``sum_i w_i / (k + rank_i(d))``, ``w_i = 1``
    unless ``weights`` are given."""
    if k < 0:
        raise InputError(f"rrf k must be >= 0, got {k}", field="rrf_k")
    w = _weights(runs, weights, default=1.0)
    recip = [np.broadcast_to(1.0 / (k + np.arange(1.0, r.depth + 1.0)), r.scores.shape) for r in runs]
    return _fuse(runs, w, recip, floors=None, depth=depth)


def weighted(
    runs: Sequence[Run],
    *,
    weights: Sequence[float] | None = None,
    normalize: Normalization = "minmax",
    depth: int | None = None,
) -> Run:
    """Weighted sum of per-query normalised scores (CombSUM with weights; ``1/n`` each by default)."""
    w = _weights(runs, weights, default=1.0 / max(len(runs), 1))
    norm = [normalize_scores(r, normalize) for r in runs]
    floors = [_floor(r, n, normalize) for r, n in zip(runs, norm)]
    return _fuse(runs, w, norm, floors=floors, depth=depth)


def normalize_scores(run: Run, method: Normalization) -> np.ndarray:
    """Per-query normalised scores, shaped like ``run.scores`` (padding stays -inf)."""
    return normalize_rows(run.scores, run.indices >= 0, method)


def normalize_rows(scores: np.ndarray, valid: np.ndarray, method: Normalization) -> np.ndarray:
    """Row-wise ``minmax`` or ``zscore`` over the ``valid`` entries (the others become -inf)."""
    out = np.full(scores.shape, -np.inf)
    rows = valid.any(axis=1)
    if not rows.any():
        return out
    s = np.where(valid[rows], scores[rows], np.nan)
    if method == "minmax":
        lo, hi = np.nanmin(s, axis=1, keepdims=True), np.nanmax(s, axis=1, keepdims=True)
        span = hi - lo
        z = np.where(span > 0, (s - lo) / np.where(span > 0, span, 1.0), 1.0)
    elif method == "zscore":
        mean, std = np.nanmean(s, axis=1, keepdims=True), np.nanstd(s, axis=1, keepdims=True)
        z = np.where(std > 0, (s - mean) / np.where(std > 0, std, 1.0), 0.0)
    else:
        raise InputError(f"unknown normalization {method!r} (minmax or zscore)", field="normalize")
    out[rows] = np.where(valid[rows], z, -np.inf)
    return out


def _floor(run: Run, norm: np.ndarray, method: Normalization) -> np.ndarray:
    """Per query, the normalised score a document missing from ``run`` gets."""
    if method == "minmax":
        return np.zeros(len(run))
    valid = run.indices >= 0
    lowest = np.where(valid, norm, np.inf).min(axis=1, initial=np.inf)
    return np.where(np.isfinite(lowest), lowest, 0.0)


def _weights(runs: Sequence[Run], weights: Sequence[float] | None, default: float) -> np.ndarray:
    if not runs:
        raise InputError("fusion needs at least one run", field="of")
    if weights is None:
        return np.full(len(runs), default)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(runs),):
        raise InputError(f"{len(w)} weights for {len(runs)} runs (one weight per run)", field="weights")
    if not np.isfinite(w).all() or (w < 0).any():
        raise InputError("weights must be finite and >= 0", field="weights")
    return w


def _vocabulary(runs: Sequence[Run]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One doc-id vocabulary for all runs, and each run's map into it (identity when shared)."""
    first = runs[0].doc_ids
    if all(r.doc_ids is first or np.array_equal(r.doc_ids, first) for r in runs):
        ident = np.arange(len(first), dtype=np.int64)
        return first, [ident] * len(runs)
    pos: dict[str, int] = {}
    maps = [
        np.fromiter((pos.setdefault(d, len(pos)) for d in r.doc_ids), dtype=np.int64, count=len(r.doc_ids))
        for r in runs
    ]
    return np.asarray(list(pos), dtype=object), maps


def _fuse(
    runs: Sequence[Run],
    w: np.ndarray,
    contributions: Sequence[np.ndarray],
    floors: Sequence[np.ndarray] | None,
    depth: int | None,
) -> Run:
    """Sum ``w_i * contribution_i`` per (query, doc) over the runs; missing docs get ``floors``."""
    vocab, maps = _vocabulary(runs)
    qids: dict[str, int] = {}
    for r in runs:
        for q in r.query_ids:
            qids.setdefault(q, len(qids))
    nq, nv = len(qids), max(len(vocab), 1)
    keys, vals = [], []
    const = np.zeros(nq)
    for i, r in enumerate(runs):
        rows = np.fromiter((qids[q] for q in r.query_ids), dtype=np.int64, count=len(r))
        valid = r.indices >= 0
        c = np.asarray(contributions[i], dtype=np.float64)
        if floors is not None:
            # a missing doc gets the floor: add it to every doc, and only the excess to those present
            present = valid.any(axis=1)
            const[rows[present]] += w[i] * floors[i][present]
            c = c - floors[i][:, None]
        rr = np.broadcast_to(rows[:, None], r.indices.shape)[valid]
        keys.append(rr * nv + maps[i][r.indices[valid]])
        vals.append(w[i] * c[valid])
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    val = np.concatenate(vals) if vals else np.zeros(0)
    uniq, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=val, minlength=uniq.size)
    row, doc = uniq // nv, uniq % nv
    total = total + const[row]
    counts = np.bincount(row, minlength=nq)
    width = int(counts.max(initial=0))
    col = np.arange(uniq.size) - np.concatenate(([0], np.cumsum(counts)[:-1]))[row]
    idx = np.full((nq, width), PAD, dtype=np.int64)
    sc = np.full((nq, width), -np.inf)
    idx[row, col], sc[row, col] = doc, total
    fused = Run(list(qids), vocab, idx, sc)
    return fused.cut(depth) if depth is not None and depth < fused.depth else fused
