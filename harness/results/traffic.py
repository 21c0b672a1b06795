"""The traffic weights of a results folder as the readers of its per-query scores need them.

A folder run with ``dataset: {path, weights: count}`` records one weight per query
(``results.json``'s ``weights``, aligned with ``query_ids``); the run table weighs every figure by
them (:mod:`harness.stats.weighted`). ``harness power`` (its planning rows and ``--all-pairs``) and
a table's letter groups read the same weights here, so that each figure of a folder weighs its
queries alike. Equal weights are no weights (None): the figures are then the unweighted ones bit for
bit, and no report says "traffic-weighted".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from harness.stats.weighted import effective_n, is_uniform, rescaled

if TYPE_CHECKING:
    from harness.results import Results


def weights_of(results: Results) -> np.ndarray | None:
    """One weight per query of ``results.query_ids`` (rescaled to a largest weight of 1), or None
    when the folder is unweighted or every weight is the same."""
    w = results.weights
    if w is None:
        return None
    values = np.asarray(w.values, dtype=np.float64)
    if values.shape != (len(results.query_ids),):
        from harness.errors import InputError

        raise InputError(
            f"{values.size} weights for {len(results.query_ids)} queries", path=results.folder, field="weights"
        )
    values = rescaled(values)
    return None if is_uniform(values) else values


def describe(results: Results) -> dict[str, Any] | None:
    """``{field, effective_n, queries}`` of a weighted folder for a report's JSON (None: unweighted)."""
    w = weights_of(results)
    if w is None:
        return None
    assert results.weights is not None
    return {"field": results.weights.field, "effective_n": effective_n(w), "queries": int(w.size)}


def line(results: Results, what: str) -> str | None:
    """The report's one line saying that ``what`` is traffic-weighted, and by which field (None:
    unweighted), as the run table's legend says it."""
    d = describe(results)
    if d is None:
        return None
    return (
        f"traffic-weighted: {what} weigh each query by its {d['field']!r} (Kish effective n "
        f"{d['effective_n']:,.1f} of {d['queries']:,} queries)"
    )
