"""The figures of ``harness power``: per retriever x metric, what a set of queries can detect.

Pure numbers from per-query arrays (the command line reads the results folder): for each retriever
against the reference (the baseline), the sd of the per-query differences, the minimum detectable
effect at the set's size (or at ``queries``), the queries a target difference needs, and optionally
the resampling estimate of the power at the mde (:func:`harness.stats.power.simulate`).

A folder with one retriever has no differences: its figures come from sqrt(2) x the sd of its
per-query scores, the conservative estimate of topic set size design (two uncorrelated systems), and
each row says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.stats import power as pw


@dataclass
class PlanRow:
    """One retriever x metric (``baseline`` is the retriever it is compared with; None: planning alone)."""

    retriever: str
    metric: str
    baseline: str | None
    n: int
    delta: float | None
    sd_diff: float | None
    #: ``observed`` (the differences) or ``sqrt(2) x sd of scores`` (one retriever)
    sd_source: str
    #: the set size the mde is computed at (``n``, or ``--queries``)
    mde_queries: int
    mde: float | None
    #: the difference ``queries_needed`` is for (``--delta``, else |observed delta|)
    target_delta: float | None
    queries_needed: int | None
    simulated_power: float | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    values: Mapping[str, Mapping[str, np.ndarray]],
    reference: str,
    metrics: Sequence[str],
    *,
    alpha: float,
    target: float = pw.POWER,
    delta: float | None = None,
    queries: int | None = None,
    simulate: int = 0,
    seed: int = 0,
) -> list[PlanRow]:
    """Rows for every retriever of ``values`` against ``reference`` (or ``reference`` alone when it is the
    only one) on every metric of ``metrics``; NaN scores leave their query out of that pair."""
    others = [r for r in values if r != reference]
    rows = []
    for m in metrics:
        if not others:
            scores = _finite(np.asarray(values[reference][m], dtype=np.float64))
            sd = math.sqrt(2.0) * float(np.std(scores, ddof=1)) if scores.size >= 2 else None
            rows.append(
                _row(reference, m, None, scores.size, None, sd, "sqrt(2) x sd of scores", alpha, target, delta, queries)
            )
            continue
        for r in others:
            d = _finite(np.asarray(values[r][m], dtype=np.float64) - np.asarray(values[reference][m], dtype=np.float64))
            sd = float(np.std(d, ddof=1)) if d.size >= 2 else None
            mean = float(d.mean()) if d.size else None
            row = _row(r, m, reference, d.size, mean, sd, "observed", alpha, target, delta, queries)
            if simulate and row.mde is not None:
                row.simulated_power = pw.simulate(d, row.mde, sets=simulate, alpha=alpha, n=row.mde_queries, seed=seed)
            rows.append(row)
    return rows


def planning(
    sd: float, *, alpha: float, target: float = pw.POWER, delta: float | None = None, queries: int | None = None
) -> dict[str, Any]:
    """The calculator with no results: queries needed for ``delta`` and/or the mde at ``queries``."""
    out: dict[str, Any] = {"sd_diff": sd, "alpha": alpha, "power": target, "delta": delta, "queries": queries}
    if delta is not None:
        out["n_exact"] = pw.n_exact(delta, sd, alpha, target)
        out["queries_needed"] = pw.queries_needed(delta, sd, alpha, target)
    if queries is not None:
        out["mde"] = pw.mde(sd, queries, alpha, target)
    return out


def _row(
    retriever: str,
    metric: str,
    baseline: str | None,
    n: int,
    mean: float | None,
    sd: float | None,
    source: str,
    alpha: float,
    target: float,
    delta: float | None,
    queries: int | None,
) -> PlanRow:
    at = queries if queries is not None else n
    row = PlanRow(retriever, metric, baseline, n, mean, sd, source, at, None, None, None)
    if sd is None or at < 2:
        row.reason = f"{n} quer{'y' if n == 1 else 'ies'}: power needs at least 2"
        return row
    if not sd > 1e-12:
        row.sd_diff = 0.0
        row.reason = "every per-query difference is the same (sd 0): no variance to plan with"
        return row
    row.mde = pw.mde(sd, at, alpha, target)
    want = delta if delta is not None else (abs(mean) if mean is not None else None)
    row.target_delta = want
    if want is None:
        row.reason = "one retriever: pass --delta for the queries a difference needs"
    elif want <= 1e-12:
        row.reason = "the observed difference is 0: no number of queries detects it"
    else:
        try:
            row.queries_needed = pw.queries_needed(want, sd, alpha, target)
        except ValueError:
            row.reason = "the difference is too small for any practical set size"
    return row


def _finite(v: np.ndarray) -> np.ndarray:
    return v[~np.isnan(v)]
