"""Prediction-powered inference for a mean (Angelopoulos et al., Science 2023; PPI++ power tuning,
Angelopoulos, Duchi and Zrnic 2023), and the classical interval beside it.

The setting: a metric's mean over queries, where only ``n`` queries (a uniform random sample) are
graded by people (``y``, the metric under human judgments) but every query is graded by an
automatic judge (``yhat`` on the labelled queries, ``yhat_unlabelled`` on the ``N`` others). The
estimate is ``lam * mean(yhat_unlabelled) + mean(y - lam * yhat)``: the judge's mean, corrected by
the judge's average error on the labelled queries (the rectifier). Its interval carries the judge's
error, so a biased judge cannot narrow it below the truth; ``lam`` (PPI++) is chosen from the data
to minimise the variance, in [0, 1]: 0 is the classical interval on the labelled queries alone, 1
plain PPI.

These are ``ppi_py``'s ``ppi_mean_ci`` (defaults: ``lam=None``, ``lam_optim_mode="overall"``, no
weights) and ``classical_mean_ci``, reproduced in numpy so the harness does not depend on it; the
tests compare them to ``ppi_py`` to 1e-9. Note ppi_py's default alpha is 0.1; the harness's is 0.05.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from harness import defaults
from harness.stats.levels import check_level


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float


def _z(alpha: float) -> float:
    check_level(alpha)
    return float(norm.isf(alpha / 2))


def _arr(x: np.ndarray | list[float], name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-d")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds a value that is not finite")
    return a


def classical_mean_ci(y: np.ndarray | list[float], alpha: float = defaults.ALPHA) -> Interval:
    """The CLT interval ``mean +- z * std / sqrt(n)`` (population std, as ppi_py)."""
    y = _arr(y, "y")
    if y.size == 0:
        raise ValueError("no labelled values")
    m, se = float(y.mean()), float(y.std() / np.sqrt(y.size))
    z = _z(alpha)
    return Interval(m, m - z * se, m + z * se)


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> float:
    """PPI++'s lambda for a mean: ``cov(y, yhat) / ((1 + n / N) * var(yhat over all queries))``,
    clipped to [0, 1] (ppi_py's ``_calc_lam_glm`` with an identity Hessian, one coordinate).

    A judge whose figure does not vary over the queries (two runs that rank alike, so every
    per-query difference is 0; a metric at its ceiling) carries no information on how the queries
    differ: ``lam`` is 0 there, the classical interval. ppi_py divides 0 by 0 and returns NaN, an
    interval no one can use."""
    n, big_n = y.size, yhat_unlabelled.size
    cov = 2 * float(np.sum((y - y.mean()) * (yhat - yhat.mean()))) / n
    var = float(np.var(np.concatenate([yhat, yhat_unlabelled]), ddof=1))
    if not var > 0:
        return 0.0
    return float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1))


def ppi_mean_ci(
    y: np.ndarray | list[float],
    yhat: np.ndarray | list[float],
    yhat_unlabelled: np.ndarray | list[float],
    alpha: float = defaults.ALPHA,
    lam: float | None = None,
) -> tuple[Interval, float]:
    """The prediction-powered interval of the mean and the ``lam`` used (PPI++ when ``lam`` is None)."""
    y, yhat, yu = _arr(y, "y"), _arr(yhat, "yhat"), _arr(yhat_unlabelled, "yhat_unlabelled")
    if y.size != yhat.size:
        raise ValueError("y and yhat must be paired (the same labelled queries)")
    if y.size == 0 or yu.size == 0:
        raise ValueError("PPI needs labelled and unlabelled values")
    if lam is None:
        lam = power_tuning(y, yhat, yu)
    est = float((lam * yu).mean() + (y - lam * yhat).mean())
    se = float(np.sqrt(((lam * yu).std() / np.sqrt(yu.size)) ** 2 + ((y - lam * yhat).std() / np.sqrt(y.size)) ** 2))
    z = _z(alpha)
    return Interval(est, est - z * se, est + z * se), float(lam)
