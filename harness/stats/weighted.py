"""Traffic-weighted statistics: every figure of a comparison table when queries carry weights.

A golden set built from production traffic (``harness traces import``) knows how often each query
was asked; ``dataset: {path: DIR, weights: count}`` makes every figure weigh a query by that count,
so a retriever that fails the query asked 500 times a day is charged 500 times. Weights are
*importance* weights over a sample of distinct queries, not extra observations: two spans of the
same query are not two independent draws, so the uncertainty still comes from the queries, and
every test and interval uses the Kish effective sample size.

Formulas (``w`` the weights, ``W = sum w``, ``x`` or ``d`` the per-query values):

- weighted mean ``m_w = sum(w x) / W`` (= ``numpy.average(x, weights=w)``);
- effective sample size (Kish 1965, *Survey Sampling*, eq. 11.7.1): ``n_eff = W^2 / sum(w^2)``
  (``n`` when all weights are equal, 1 when one query holds all the weight);
- weighted sd: ``s_w^2 = sum(w (x - m_w)^2) / W * n_eff / (n_eff - 1)`` (the unbiased sample
  variance when the weights are equal);
- paired t-test: ``t = m_w / (s_w / sqrt(n_eff))`` on ``n_eff - 1`` degrees of freedom (Kish's
  design-effect approximation; scipy's ``ttest_1samp`` when the weights are equal); the one-sided
  lower bound ``m_w - t(1 - alpha, n_eff - 1) s_w / sqrt(n_eff)`` likewise;
- paired randomization test: the sign-flip test of ``|sum(w s d)| / W`` over random sign vectors
  ``s`` (each query's difference keeps its weight when its sign flips; the same sign matrix as the
  unweighted test, p = (1 + hits) / (1 + n));
- bootstrap: queries resampled uniformly with replacement, each carrying its weight, and the
  weighted mean of each resample ``sum(c w x) / sum(c w)`` (``c`` the resample's counts: the
  bootstrap of a ratio estimator, Efron and Tibshirani 1993, ch. 10), percentile interval;
- power and mde: :func:`harness.stats.power.figures`'s formulas with ``s_w`` and ``n_eff``;
- resampled power (``harness power --simulate``): sets of queries drawn uniformly with replacement,
  each carrying its weight, tested with the weighted paired t-test above (:func:`harness.stats.tests.t_tests_w`, beside
  the unweighted ``t_tests``: :mod:`harness.stats.power` uses it, and this module builds on that one).

Equal weights are no weights: every function here hands equal weights to the unweighted code,
so a config with ``weights:`` on an all-ones field prints the unweighted figures bit for bit.

Only the weights' ratios matter, so every function first divides them by the largest
(:func:`rescaled`): a weight field of revenues near ``1e300`` (whose sum or squares overflow) or of
sampling probabilities near ``1e-200`` (whose squares underflow to 0, which made Kish's n 0) gives
the figures the same weights times any constant give, and ``n_eff`` is at least 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness import defaults
from harness.stats import power as P
from harness.stats.tests import (
    bootstrap_cis,
    bootstrap_means,
    randomization_tests,
    t_lower_bound,
    t_test,
)


def as_weights(weights: Sequence[float] | np.ndarray | None, size: int) -> np.ndarray | None:
    """``weights`` as a float array of ``size`` (None stays None); finite, >= 0, not all 0."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (size,):
        raise ValueError(f"{w.size} weights for {size} queries")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite numbers >= 0")
    if size and not w.sum() > 0:
        raise ValueError("weights must not all be 0")
    return w


def rescaled(w: np.ndarray | None) -> np.ndarray | None:
    """``w / max(w)`` (largest weight 1): the same figures, and no sum or square over- or underflows
    (the module docstring). ``None``, empty and all-zero weights are returned as they are."""
    if w is None or w.size == 0:
        return w
    w = np.asarray(w, dtype=np.float64)
    top = float(w.max())
    return w / top if top > 0 and top != 1.0 else w


def is_uniform(w: np.ndarray | None) -> bool:
    """No weights, or all equal: the unweighted figures are the weighted ones."""
    return w is None or w.size == 0 or bool(np.all(w == w[0]))


def weighted_mean(x: np.ndarray, w: np.ndarray | None) -> float:
    """``sum(w x) / sum(w)``, summed exactly (``math.fsum``) so query order does not change a bit."""
    w = rescaled(w)
    x = np.asarray(x, dtype=np.float64)
    if is_uniform(w):
        return math.fsum(x.tolist()) / len(x) if len(x) else 0.0
    return math.fsum((w * x).tolist()) / math.fsum(w.tolist())


def paired_mean(d: np.ndarray, w: np.ndarray | None) -> float:
    """The mean paired difference of a comparison row: ``d.mean()`` as the unweighted table has
    always printed it, ``m_w`` with unequal weights."""
    w = rescaled(w)
    if is_uniform(w):
        return float(d.mean()) if d.size else 0.0
    return float(np.average(d, weights=w)) if d.size else 0.0


def effective_n(w: np.ndarray | None, size: int | None = None) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` (``size`` without weights)."""
    w = rescaled(w)
    if w is None:
        return float(size or 0)
    s2 = float(np.square(w).sum())
    return float(w.sum()) ** 2 / s2 if s2 > 0 else 0.0


def weighted_sd(x: np.ndarray, w: np.ndarray) -> float:
    """``s_w``: the weighted sd with Kish's small-sample correction (the module docstring)."""
    w = rescaled(w)
    n_eff = effective_n(w)
    if n_eff <= 1:
        return 0.0
    m = float(np.average(x, weights=w))
    var = float(np.sum(w * (x - m) ** 2) / w.sum()) * n_eff / (n_eff - 1)
    return math.sqrt(max(var, 0.0))


def randomization_tests_w(
    diffs: np.ndarray, w: np.ndarray | None, *, n: int = defaults.PERMUTATIONS, seed: int = 0
) -> np.ndarray:
    """:func:`~harness.stats.tests.randomization_tests` of ``|sum(w s d)| / W``: each query's
    difference keeps its weight when its sign flips. It is the unweighted test of ``d * w * q / W``
    (whose mean is ``sum(w d) / W``), so the sign vectors are the ones the unweighted test draws."""
    w = rescaled(w)
    if is_uniform(w):
        return randomization_tests(diffs, n=n, seed=seed)
    d = np.asarray(diffs, dtype=np.float64)
    return randomization_tests(d * (w * (d.shape[0] / float(w.sum())))[:, None], n=n, seed=seed)


def t_test_w(a: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> float:
    """Two-sided weighted paired t-test p-value (``t = m_w / (s_w / sqrt(n_eff))``, ``n_eff - 1`` df)."""
    w = rescaled(w)
    if is_uniform(w):
        return t_test(a, b)
    from scipy import stats

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n_eff = effective_n(w)
    m = float(np.average(d, weights=w))
    sd = weighted_sd(d, w)
    if n_eff <= 1 or not sd > 0:
        return 1.0 if m == 0 else 0.0
    t = m / (sd / math.sqrt(n_eff))
    return float(2 * stats.t.sf(abs(t), n_eff - 1))


def t_lower_bound_w(diffs: np.ndarray, w: np.ndarray | None, alpha: float = defaults.ALPHA) -> float | None:
    """The weighted one-sided lower ``1 - alpha`` bound of the mean paired difference (None below 2 queries)."""
    w = rescaled(w)
    if is_uniform(w):
        return t_lower_bound(diffs, alpha)
    from scipy import stats

    d = np.asarray(diffs, dtype=np.float64)
    n_eff = effective_n(w)
    if d.size < 2 or n_eff <= 1:
        return None
    m = float(np.average(d, weights=w))
    return float(m - stats.t.ppf(1.0 - alpha, n_eff - 1) * weighted_sd(d, w) / math.sqrt(n_eff))


def bootstrap_cis_w(
    columns: np.ndarray, w: np.ndarray | None, *, n: int = defaults.BOOTSTRAP, confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:  # fmt: skip
    """Percentile intervals of the weighted mean of every column: queries resampled uniformly (the
    same draw as :func:`~harness.stats.tests.bootstrap_means`), each carrying its weight."""
    w = rescaled(w)
    if is_uniform(w):
        return bootstrap_cis(columns, n=n, confidence=confidence, seed=seed)
    x = np.asarray(columns, dtype=np.float64)
    size, cols = x.shape
    if cols == 0:
        return []
    if n == 0 or size == 1:
        return [(m, m) for m in (float(np.average(x[:, j], weights=w)) for j in range(cols))]
    # the means of w*x and of w over the same resamples (bootstrap_means' draw): their ratio is the
    # weighted mean of each resample, sum(c w x) / sum(c w)
    both = bootstrap_means(np.column_stack([x * w[:, None], w]), n=n, seed=seed)
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample of zero-weight queries only: NaN, left out
        means = both[:, :cols] / both[:, cols:]
    alpha = (1 - confidence) / 2
    lo, hi = np.nanquantile(means, [alpha, 1 - alpha], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi)]


def real_queries(effective: float, design_effect: float) -> int:
    """The real queries, drawn with a set's spread of weights, that hold ``effective`` queries'
    worth of information: ``ceil(effective x deff)`` with Kish's design effect ``deff = n / n_eff``
    (at least 2, the fewest a t-test takes)."""
    return max(2, math.ceil(effective * design_effect - 1e-9))


def power_figures_w(diffs: np.ndarray, w: np.ndarray | None, alpha: float = defaults.ALPHA) -> dict[str, Any]:
    """:func:`harness.stats.power.figures` with the weighted sd ``s_w`` and ``n_eff`` queries."""
    w = rescaled(w)
    if is_uniform(w):
        return P.figures(diffs, alpha)
    d = np.asarray(diffs, dtype=np.float64)
    out: dict[str, Any] = dict.fromkeys(P.FIELDS)
    n_eff = effective_n(w)
    if d.size < 2 or n_eff < 2:
        out["power_reason"] = f"{n_eff:.1f} effective queries: power needs at least 2"
        return out
    sd = weighted_sd(d, w)
    out["sd_diff"] = sd
    scale = max(1.0, float(np.abs(d).max()))
    if not sd > P._ZERO * scale:
        out["sd_diff"] = 0.0
        out["power_reason"] = "every per-query difference is the same (sd_diff 0): no variance to plan with"
        return out
    out["mde"] = P.mde(sd, n_eff, alpha)
    delta = float(np.average(d, weights=w))
    if abs(delta) <= P._ZERO * scale:
        out["power_reason"] = "the observed difference is 0: no number of queries detects it"
        return out
    try:
        # real queries at this spread of weights, as `harness power` counts them: the n_eff the
        # t-test needs times Kish's design effect n / n_eff (harness.stats.planning)
        out["n_for_observed"] = real_queries(P.n_exact(delta, sd, alpha), d.size / n_eff)
    except ValueError:
        out["power_reason"] = "the observed difference is too small for any set size to detect at power 0.8"
    return out


