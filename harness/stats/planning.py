"""The figures of ``harness power``: per retriever x metric, what a set of queries can detect.

Pure numbers from per-query arrays (the command line reads the results folder): for each retriever
against the reference (the baseline), the sd of the per-query differences, the minimum detectable
effect at the set's size (or at ``queries``), the queries a target difference needs, and optionally
the resampling estimate of the power at the mde (:func:`harness.stats.power.simulate`).

A folder with one retriever has no differences: its figures come from sqrt(2) x the sd of its
per-query scores, the conservative estimate of topic set size design (two uncorrelated systems), and
each row says so.

**Traffic weights** (``weights``, one per query: ``dataset: {weights: count}``). The row uses the
run table's weighted estimators (:mod:`harness.stats.weighted`): the weighted mean difference
``m_w``, the weighted sd ``s_w`` (Kish's correction) and Kish's effective sample size
``n_eff = (sum w)^2 / sum w^2``. The weights are importance weights over distinct queries, so the
paired t-test behind every figure has ``n_eff`` observations' worth of information, not ``n`` and
not ``sum w``: the mde at the set is ``s_w x effect(n_eff)``. A *number of queries* in a plan
(``--queries N``, the queries a difference needs) is a number of real queries drawn with the same
spread of weights: Kish's design effect ``deff = n / n_eff`` turns ``N`` real queries into
``N / deff`` effective ones, and the ``n_eff`` the t-test needs into ``ceil(n_eff x deff)`` real
queries (``effective_needed`` keeps the effective figure; the run table's ``n_for_observed`` counts
real queries too, :func:`harness.stats.weighted.power_figures_w`). Planning with ``n`` would overstate
what a skewed set detects by up to ``sqrt(deff)``. Equal weights are no weights: the rows are the
unweighted ones, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.stats import power as pw
from harness.stats.weighted import effective_n, is_uniform, real_queries, rescaled, weighted_sd


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
    #: traffic-weighted rows only (None otherwise, and left out of the JSON): Kish's effective n of
    #: the ``n`` queries, the design effect ``n / n_eff``, and the effective queries ``queries_needed``
    #: stands for (``queries_needed = ceil(effective_needed x design_effect)``)
    n_eff: float | None = None
    design_effect: float | None = None
    effective_needed: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.n_eff is None:  # an unweighted row's JSON is as it always was
            for key in ("n_eff", "design_effect", "effective_needed"):
                out.pop(key)
        return out


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
    weights: np.ndarray | None = None,
) -> list[PlanRow]:
    """Rows for every retriever of ``values`` against ``reference`` (or ``reference`` alone when it is the
    only one) on every metric of ``metrics``; NaN scores leave their query out of that pair.
    ``weights`` (one per query, aligned with the values): the weighted rows of the module doc."""
    others = [r for r in values if r != reference]
    rows = []
    for m in metrics:
        if not others:
            x = np.asarray(values[reference][m], dtype=np.float64)
            ok = ~np.isnan(x)
            _, sd, n_eff = _spread(x[ok], _weights(weights, ok))
            sd = None if sd is None else math.sqrt(2.0) * sd
            rows.append(_row(reference, m, None, int(ok.sum()), None, sd, "sqrt(2) x sd of scores", alpha, target,
                             delta, queries, n_eff=n_eff))  # fmt: skip
            continue
        for r in others:
            full = np.asarray(values[r][m], dtype=np.float64) - np.asarray(values[reference][m], dtype=np.float64)
            ok = ~np.isnan(full)
            d, w = full[ok], _weights(weights, ok)
            mean, sd, n_eff = _spread(d, w)
            row = _row(r, m, reference, d.size, mean, sd, "observed", alpha, target, delta, queries, n_eff=n_eff)
            if simulate and row.mde is not None:
                row.simulated_power = pw.simulate(
                    d, row.mde, sets=simulate, alpha=alpha, n=row.mde_queries, seed=seed, weights=w
                )
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


def _weights(weights: np.ndarray | None, ok: np.ndarray) -> np.ndarray | None:
    """The weights of the queries ``ok`` keeps, rescaled; None when unweighted or all equal there
    (or all 0 there: nothing to weigh by)."""
    if weights is None:
        return None
    w = rescaled(np.asarray(weights, dtype=np.float64)[ok])
    return None if is_uniform(w) or not float(w.sum()) > 0 else w


def _spread(x: np.ndarray, w: np.ndarray | None) -> tuple[float | None, float | None, float | None]:
    """Mean, sd (n - 1) and, weighted, Kish's n of ``x``: the plain figures without ``w``, the run
    table's weighted ones (``m_w``, ``s_w``, ``n_eff``: :mod:`harness.stats.weighted`) with it."""
    if w is None:
        return (float(x.mean()) if x.size else None), (float(np.std(x, ddof=1)) if x.size >= 2 else None), None
    mean = float(np.average(x, weights=w)) if x.size else None
    return mean, (weighted_sd(x, w) if x.size >= 2 else None), effective_n(w)


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
    *,
    n_eff: float | None = None,
) -> PlanRow:
    """One row; ``n_eff`` (traffic-weighted: Kish's n of the ``n`` queries): the t-test at effective
    queries, and real queries by the design effect ``n / n_eff`` (the module doc)."""
    at = queries if queries is not None else n
    row = PlanRow(retriever, metric, baseline, n, mean, sd, source, at, None, None, None)
    deff = 1.0
    if n_eff is not None:
        deff = n / n_eff
        row.n_eff, row.design_effect = n_eff, deff
    # unweighted: the whole number, as always; weighted: n_eff itself at the set's size (the run table's mde)
    at_eff = at if n_eff is None else (n_eff if queries is None else at / deff)
    if sd is None or at_eff < 2:
        if n_eff is None:
            row.reason = f"{n} quer{'y' if n == 1 else 'ies'}: power needs at least 2"
        else:
            row.reason = f"{at_eff:.1f} effective queries (of {at:,}): power needs at least 2"
        return row
    if not sd > 1e-12:
        row.sd_diff = 0.0
        row.reason = "every per-query difference is the same (sd 0): no variance to plan with"
        return row
    row.mde = pw.mde(sd, at_eff, alpha, target)
    want = delta if delta is not None else (abs(mean) if mean is not None else None)
    row.target_delta = want
    if want is None:
        row.reason = "one retriever: pass --delta for the queries a difference needs"
    elif want <= 1e-12:
        row.reason = "the observed difference is 0: no number of queries detects it"
    else:
        try:
            need = pw.n_exact(want, sd, alpha, target)
        except ValueError:
            row.reason = "the difference is too small for any practical set size"
            return row
        row.queries_needed = math.ceil(need)  # pw.queries_needed
        if n_eff is not None:  # the effective queries the test needs, as real ones at this spread
            row.effective_needed = need
            row.queries_needed = real_queries(need, deff)
    return row
