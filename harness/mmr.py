"""Maximal Marginal Relevance (Carbonell and Goldstein, 1998) as a pure function on arrays.

Pick first the candidate with the highest relevance; then repeatedly the candidate maximising
``lambda * rel(d) - (1 - lambda) * max_{s in selected} sim(d, s)``. The max runs over the
documents **already selected** only (a widely copied tutorial also takes it over the unselected
ones: that is not MMR). Ties go to the better original rank, i.e. the lower index, so
``lambda = 1`` returns the relevance order, stably.

A running vector of each candidate's max similarity to the selection is updated with one row per
pick, so the cost is O(n * k) rather than O(n * k^2).
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError


def _validate(
    relevance: object, similarity: object, lambda_: float, k: int | None
) -> tuple[np.ndarray, np.ndarray, int]:
    try:
        rel = np.asarray(relevance, dtype=np.float64)
        sim = np.asarray(similarity, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(f"relevance and similarity must be numeric arrays ({e})", field="mmr") from None
    if rel.ndim != 1:
        raise InputError(f"relevance must be 1-D (n,), got shape {rel.shape}", field="relevance")
    n = rel.shape[0]
    if sim.shape != (n, n):
        raise InputError(
            f"similarity must have shape ({n}, {n}) to match relevance, got {sim.shape}", field="similarity"
        )
    if not np.isfinite(rel).all():
        raise InputError(
            f"relevance has a non-finite value at index {int(np.flatnonzero(~np.isfinite(rel))[0])}", field="relevance"
        )
    if not np.isfinite(sim).all():
        i, j = map(int, np.argwhere(~np.isfinite(sim))[0])
        raise InputError(f"similarity has a non-finite value at [{i}, {j}]", field="similarity")
    try:
        lam = float(lambda_)
    except (TypeError, ValueError):
        raise InputError(f"lambda must be a number in [0, 1], got {lambda_!r}", field="lambda") from None
    if not 0.0 <= lam <= 1.0:
        raise InputError(f"lambda must be in [0, 1], got {lambda_!r}", field="lambda")
    if k is None:
        kk = n
    else:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise InputError(f"k must be an integer or None, got {k!r}", field="k")
        if k < 0:
            raise InputError(f"k must be >= 0, got {k}", field="k")
        kk = min(int(k), n)
    return rel, sim, kk


def mmr_order(relevance: np.ndarray, similarity: np.ndarray, lambda_: float, k: int | None = None) -> list[int]:
    """Indices of the candidates in MMR order: ``k`` of them (all when ``None``; at most n).

    ``relevance[i]`` is candidate i's relevance to the query; ``similarity[i, j]`` the similarity
    of candidates i and j (the diagonal is never read). Candidates are given in their original
    rank order: on equal objective values the lower index wins. ``lambda_`` in [0, 1] weighs
    relevance against novelty; 1 is the relevance order, 0 pure novelty after the first pick.
    Bad shapes, non-finite values or a lambda outside [0, 1] raise :class:`InputError` (a ValueError).
    """
    rel, sim, k = _validate(relevance, similarity, lambda_, k)
    lam = float(lambda_)
    if k == 0:
        return []
    # column j of `similarity` is sim(., j): transpose once so each pick reads one contiguous row
    sim_t = np.ascontiguousarray(sim.T)
    gain = lam * rel
    first = int(np.argmax(rel))  # argmax returns the first (best-ranked) of equal maxima
    order = [first]
    chosen = np.zeros(rel.shape[0], dtype=bool)
    chosen[first] = True
    max_sim = sim_t[first].copy()
    objective = np.empty_like(rel)
    for _ in range(1, k):
        np.subtract(gain, (1.0 - lam) * max_sim, out=objective)
        objective[chosen] = -np.inf
        j = int(np.argmax(objective))
        order.append(j)
        chosen[j] = True
        np.maximum(max_sim, sim_t[j], out=max_sim)
    return order
