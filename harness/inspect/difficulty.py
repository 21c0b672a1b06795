"""Difficulty, from a results folder: which queries can tell the retrievers apart.

A query every retriever answers perfectly (ceiling) or not at all (floor) adds the same to every
mean and so cannot separate them; a set made mostly of such queries, or of ties, decides nothing
whatever the statistics say. Per retriever and metric: the share of queries at the ceiling (score
>= 1 - 1e-12) and at the floor (<= 1e-12); per metric: the queries at the ceiling for every
retriever, at the floor for every retriever (unanswerable, or missing judgments), the queries where
every retriever ties (within 1e-12), and the headroom (1 - the best mean).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from harness.results import Results

EPS = 1e-12


def difficulty(results: Results) -> dict[str, Any]:
    """``difficulty`` ({retriever: {metric: {ceiling, floor}}}, shares), ``all_ceiling``,
    ``all_floor``, ``all_tie`` ({metric: sorted query ids}), ``headroom`` ({metric: 1 - best mean})
    and ``judged_at_10`` ({retriever: share}, as the run recorded it)."""
    qids = np.asarray(results.query_ids, dtype=object)
    retrievers = [r for r in results.per_query if r not in results.failures]
    metrics: list[str] = []
    for r in retrievers:
        metrics += [m for m in results.per_query[r] if m not in metrics]
    per: dict[str, dict[str, dict[str, float]]] = {r: {} for r in retrievers}
    out: dict[str, Any] = {"difficulty": per, "all_ceiling": {}, "all_floor": {}, "all_tie": {}, "headroom": {}}
    n = len(qids)
    for m in metrics:
        having = [r for r in retrievers if m in results.per_query[r]]
        if not having or not n:
            continue
        x = np.vstack([results.scores(r)[m] for r in having])  # (retrievers, queries)
        ceiling, floor = x >= 1 - EPS, x <= EPS
        for r, c, f in zip(having, ceiling, floor):
            per[r][m] = {"ceiling": float(c.sum() / n), "floor": float(f.sum() / n)}
        out["all_ceiling"][m] = sorted(qids[ceiling.all(axis=0)].tolist())
        out["all_floor"][m] = sorted(qids[floor.all(axis=0)].tolist())
        out["all_tie"][m] = sorted(qids[(x.max(axis=0) - x.min(axis=0)) <= EPS].tolist())
        means = np.nanmean(x, axis=1) if np.isfinite(x).any() else np.full(len(having), np.nan)
        out["headroom"][m] = float(1 - np.nanmax(means)) if np.isfinite(means).any() else None
    out["judged_at_10"] = {r: results.judged_at_10.get(r) for r in retrievers}
    return out
