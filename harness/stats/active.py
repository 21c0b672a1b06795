"""Active statistical inference for a mean (Zrnic and Candes, ICML 2024, "Active Statistical
Inference", arXiv:2403.03208; reference code tijana-zrnic/active-inference).

The setting: ``N`` units (queries), a model's prediction ``f_i`` (the metric under a judge's grades)
for every one, and the true value ``Y_i`` (the metric under people's grades) only where a label was
collected. Unit ``i`` is labelled with a probability ``pi_i`` fixed before the draw (it may depend on
the predictions, never on the labels); ``xi_i`` is 1 when it was drawn and labelled. The estimate
of the mean is the mean of the terms

    T_i = lam * f_i + (Y_i - lam * f_i) * xi_i / pi_i

which is unbiased for any ``lam`` fixed in advance (``E[xi_i] = pi_i``): the model's value corrected,
where a label was drawn, by the inverse-probability weighted error. Its ``1 - alpha`` interval is
``mean(T) -/+ z_{1-alpha/2} * sqrt(var(T, ddof=1) / N)`` (the paper's Theorem 1, a CLT over units).

``lam`` is power-tuned as the paper does (its "power tuning" section, the PPI++ device of
Angelopoulos, Duchi and Zrnic): writing ``T_i = A_i - lam * B_i`` with ``A_i = Y_i xi_i / pi_i`` and
``B_i = f_i (xi_i / pi_i - 1)``, the variance ``var(A) - 2 lam cov(A, B) + lam^2 var(B)`` is smallest
at ``lam = cov(A, B) / var(B)``, estimated from the same units (consistent, so the interval stays
asymptotically valid). ``lam = 1`` is the paper's plain active estimator (its notebooks' choice);
``lam = 0`` the inverse-probability (Horvitz-Thompson) estimator on the labels alone, the
"people only" figure beside it.

Two choices the reference notebooks make differently, said here so the figures can be compared:
the variance uses ``ddof=1`` (the notebooks' ``np.std`` is ``ddof=0``: a factor ``sqrt(N / (N - 1))``
on the width), and ``lam`` is not clipped (ppi_py clips PPI++'s to [0, 1]; here a judge whose errors
run against the truth may earn a ``lam`` outside it, and the plug-in minimum is what the paper
tunes). When ``B`` does not vary (every ``pi`` is 1, or every prediction is 0), ``lam`` is 0: any
``lam`` gives the same terms there, and 0 is the one that does not divide by zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness import defaults
from harness.stats.ppi import Interval, _z

#: the smallest inclusion probability accepted: below it one label's weight 1/pi swamps the sum
MIN_PI = 1e-6


@dataclass(frozen=True)
class ActiveInput:
    """The units, checked: predictions for all, labels where drawn, and the design."""

    y: np.ndarray  # people's value; 0 where not labelled (never read there)
    yhat: np.ndarray
    pi: np.ndarray
    xi: np.ndarray  # 1.0 drawn and labelled, 0.0 otherwise


Values = np.ndarray | list[float]


def check_input(y: Values, yhat: Values, pi: Values, xi: Values) -> ActiveInput:
    """One 1-d float64 array each, of one length; ``pi`` in ``[MIN_PI, 1]``; ``xi`` 0 or 1; ``y``
    finite where ``xi`` is 1 (elsewhere it may be NaN: nobody labelled that unit)."""
    yh = np.asarray(yhat, dtype=np.float64)
    p = np.asarray(pi, dtype=np.float64)
    x = np.asarray(xi, dtype=np.float64)
    yy = np.asarray(y, dtype=np.float64)
    if not (yh.ndim == p.ndim == x.ndim == yy.ndim == 1) or not (yh.size == p.size == x.size == yy.size):
        raise ValueError("y, yhat, pi and xi must be 1-d arrays of one length (one value per unit)")
    if yh.size < 2:
        raise ValueError("active inference needs at least 2 units")
    if not np.all(np.isfinite(yh)):
        raise ValueError("yhat holds a value that is not finite")
    if not np.all((p >= MIN_PI) & (p <= 1)):
        raise ValueError(f"every pi must be in [{MIN_PI:g}, 1]")
    if not np.all((x == 0) | (x == 1)):
        raise ValueError("xi must be 0 or 1")
    if not np.all(np.isfinite(yy[x == 1])):
        raise ValueError("y must be finite on every labelled unit")
    return ActiveInput(np.where(x == 1, yy, 0.0), yh, p, x)


def terms(a: ActiveInput, lam: float) -> np.ndarray:
    """``lam * f + (Y - lam * f) * xi / pi``, one per unit."""
    return lam * a.yhat + (a.y - lam * a.yhat) * a.xi / a.pi


def power_tuning(a: ActiveInput) -> float:
    """``cov(A, B) / var(B)`` with ``A = Y xi / pi`` and ``B = f (xi / pi - 1)`` (0 when ``B`` is constant)."""
    w = a.xi / a.pi
    big_a, big_b = a.y * w, a.yhat * (w - 1)
    var_b = float(np.var(big_b, ddof=1))
    if not var_b > 0:
        return 0.0
    cov = float(np.sum((big_a - big_a.mean()) * (big_b - big_b.mean()))) / (big_a.size - 1)
    return cov / var_b


def active_mean_ci(
    y: Values,
    yhat: Values,
    pi: Values,
    xi: Values,
    alpha: float = defaults.ALPHA,
    lam: float | None = None,
) -> tuple[Interval, float]:
    """The active interval of the mean and the ``lam`` used (power-tuned when ``lam`` is None)."""
    a = check_input(y, yhat, pi, xi)
    if lam is None:
        lam = power_tuning(a)
    t = terms(a, lam)
    est = float(t.mean())
    se = float(np.sqrt(np.var(t, ddof=1) / t.size))
    z = _z(alpha)
    return Interval(est, est - z * se, est + z * se), float(lam)


def spread_budget(u: np.ndarray, budget: float, mix: float) -> np.ndarray:
    """Inclusion probabilities proportional to ``u``, mixed with uniform, summing to ``budget``.

    ``pi = (1 - mix) * budget * u / sum(u) + mix * budget / N`` (the paper's rule, Section 5, with
    the uniform share of the robust variant), then every ``pi`` above 1 set to 1 and the budget it
    frees spread over the others in proportion, until none is above 1 (so the sum stays ``budget``
    and the ordering by ``u`` is kept). A zero ``u`` everywhere is the uniform design. ``pi`` below
    :data:`MIN_PI` is left for the caller to clip and say so. ``u`` may be 2-d: one design per row
    (the coverage benchmark draws thousands at once)."""
    u = np.asarray(u, dtype=np.float64)
    n = u.shape[-1] if u.ndim else 0
    if u.ndim not in (1, 2) or n == 0 or not 0 < budget <= n:
        raise ValueError(f"budget must be in (0, {n}] and u 1-d or 2-d")
    if not 0 <= mix <= 1:
        raise ValueError("mix must be in [0, 1]")
    if np.any(u < 0) or not np.all(np.isfinite(u)):
        raise ValueError("u must be finite and >= 0")
    u2 = np.atleast_2d(u)
    total = u2.sum(axis=1, keepdims=True)
    shape = np.where(total > 0, u2 / np.where(total > 0, total, 1.0), 1.0 / n)
    w = (1 - mix) * shape + mix / n  # each row sums to 1
    capped = np.zeros(u2.shape, dtype=bool)
    pi = w * budget
    for _ in range(n + 1):
        left = budget - capped.sum(axis=1, keepdims=True)
        mass = np.where(capped, 0.0, w).sum(axis=1, keepdims=True)
        free = np.maximum((~capped).sum(axis=1, keepdims=True), 1)
        # w / mass first: left * w underflows for a subnormal w (then 0 / mass gave a pi of 0)
        with np.errstate(over="ignore"):  # a capped entry's own ratio may overflow: np.where drops it
            share = np.where(mass > 0, left * (w / np.where(mass > 0, mass, 1.0)), left / free)
        pi = np.where(capped, 1.0, share)
        over = ~capped & (pi >= 1)
        if not over.any():
            break
        capped |= over
    pi = np.minimum(pi, 1.0)
    return pi if u.ndim == 2 else pi[0]
