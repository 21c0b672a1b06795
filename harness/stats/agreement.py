"""Agreement between two graders, and between two rankings of systems.

Grades are on the judging scale 0-3 (:data:`SCALE`). Cohen's kappa (plain and quadratic-weighted)
and Krippendorff's alpha (ordinal) are computed here from the confusion matrix in a few lines of
numpy, so a run needs neither scikit-learn nor the ``krippendorff`` package; the tests check both
against those libraries (``cohen_kappa_score(..., labels=[0, 1, 2, 3])`` and
``krippendorff.alpha(..., level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])``).

The kappas are over the full scale on purpose: quadratic weights depend on the label *index*, so
dropping an unused grade (as scikit-learn does without ``labels``) would change the weights.

tau_AP (Yilmaz, Aslam and Robertson, SIGIR 2008) is Kendall's tau with errors near the top of the
ranking counting more; it is not in scipy. It is asymmetric: one ranking is the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the grades of the judging scale, in order
SCALE = (0, 1, 2, 3)


def confusion(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, k: int = len(SCALE)) -> np.ndarray:
    """``m[i, j]`` = how many items ``a`` grades ``i`` and ``b`` grades ``j`` (grades 0..k-1)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("two equal-length 1-d grade arrays are needed")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= k):
        raise ValueError(f"grades must lie in 0..{k - 1}")
    m = np.zeros((k, k), dtype=np.int64)
    np.add.at(m, (a, b), 1)
    return m


def cohen_kappa(m: np.ndarray, weights: str | None = None) -> float:
    """Cohen's kappa of a confusion matrix, unweighted or ``quadratic``/``linear`` weighted
    (scikit-learn's definition); NaN when chance agreement is perfect (both graders constant)."""
    m = np.asarray(m, dtype=np.float64)
    k = m.shape[0]
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / m.sum() if m.sum() else m
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j).astype(np.float64)
    elif weights == "quadratic":
        w = ((i - j) ** 2).astype(np.float64)
    else:
        raise ValueError(f"unknown weights {weights!r}")
    denom = float((w * expected).sum())
    if denom == 0:
        return float("nan")
    return float(1 - (w * m).sum() / denom)


def krippendorff_alpha_ordinal(m: np.ndarray) -> float:
    """Krippendorff's alpha, ordinal metric, for two coders who both graded every unit.

    The coincidence matrix of two complete coders is ``m + m.T``; the ordinal distance between
    values c and k is ``(sum of n_g for g from c to k - (n_c + n_k) / 2) ** 2`` over the pooled
    value counts n_g (Krippendorff 2011). NaN when only one value occurs (no expected disagreement).
    """
    m = np.asarray(m, dtype=np.float64)
    o = m + m.T
    nc = o.sum(axis=1)
    n = nc.sum()
    if n < 2:
        return float("nan")
    cum = np.cumsum(nc)
    k = len(nc)
    c, g = np.indices((k, k))
    lo, hi = np.minimum(c, g), np.maximum(c, g)
    between = cum[hi] - np.where(lo > 0, cum[np.maximum(lo - 1, 0)], 0.0)  # sum of n_g, g = lo..hi
    delta = (between - (nc[c] + nc[g]) / 2) ** 2
    delta[c == g] = 0.0
    expected = float((np.outer(nc, nc) * delta).sum())
    if expected == 0:
        return float("nan")
    return float(1 - (n - 1) * float((o * delta).sum()) / expected)


def binary(m: np.ndarray, threshold: int = 1) -> dict[str, float]:
    """Agreement on relevant (grade >= ``threshold``) vs not, with each grader's share of relevant."""
    m = np.asarray(m, dtype=np.float64)
    n = m.sum()
    if n == 0:
        return {"threshold": threshold, "agreement": float("nan"), "base_rate_a": float("nan"),
                "base_rate_b": float("nan")}  # fmt: skip
    rel = np.arange(m.shape[0]) >= threshold
    both = m[np.ix_(rel, rel)].sum() + m[np.ix_(~rel, ~rel)].sum()
    return {
        "threshold": threshold,
        "agreement": float(both / n),
        "base_rate_a": float(m[rel, :].sum() / n),
        "base_rate_b": float(m[:, rel].sum() / n),
    }


def tau_ap(reference: Sequence[float], estimate: Sequence[float]) -> float:
    """tau_AP (Yilmaz, Aslam and Robertson, "A new rank correlation coefficient for information
    retrieval", SIGIR 2008) of the ranking by ``estimate`` against the ranking by ``reference`` (both:
    one score per system, higher ranks first), with ties as Urbano and Marrero define them ("The
    treatment of ties in AP correlation", ICTIR 2017). Never depends on the order of the input.

    Without ties: walk the estimated ranking from the top; for the system at position i (i = 2..N)
    let C(i) be how many of the i - 1 systems above it the reference also puts above it. Then
    ``tau_AP = 2 / (N - 1) * sum(C(i) / (i - 1)) - 1``: 1 for the same order, -1 for the reverse,
    and a swap at the top costs more than one at the bottom.

    - ties in the estimate only: tau_AP_a, the mean of tau_AP over every order of the tied systems
      (each system of a tie group at each of the group's positions alike; the accuracy scenario);
    - ties in the reference: tau_AP_b, ``(t(ref, est) + t(est, ref)) / 2`` where ``t(x, y)`` walks
      y's tie groups: a system with ``p`` systems strictly above it in y scores the share of those
      that x puts strictly above it, averaged over the systems not in y's first group (the agreement
      scenario: neither ranking is the truth);
    - NaN (undefined, as Kendall's tau is) for fewer than 2 systems or where either scoring is
      constant (every system tied: no ranking).
    """
    ref = np.asarray(reference, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    if ref.shape != est.shape or ref.ndim != 1:
        raise ValueError("two equal-length 1-d score arrays are needed")
    n = ref.size
    if n < 2 or np.unique(ref).size == 1 or np.unique(est).size == 1:
        return float("nan")
    if np.unique(ref).size == n:
        return _tau_ap_a(ref, est)
    return (_tau_ap_b_half(ref, est) + _tau_ap_b_half(est, ref)) / 2


def _groups(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per system, how many systems score strictly higher (``above``) and how many tie with it
    (itself included: ``size``)."""
    above = (x[None, :] > x[:, None]).sum(axis=1)
    size = (x[None, :] == x[:, None]).sum(axis=1)
    return above, size


def _tau_ap_a(ref: np.ndarray, est: np.ndarray) -> float:
    """tau_AP of a tie-free reference against an estimate with ties: the mean over the orders of each
    tie group (a system with ``p`` above its group and ``t`` in it is at position ``p + j + 1``,
    ``j = 0..t-1``, alike; above it: the ``p`` systems above the group, which the reference puts above
    it or not, and ``j`` of its group, each above it in the reference in half the orders)."""
    n = ref.size
    p, t = _groups(est)
    total = 0.0
    for i in range(n):
        c = int(((est > est[i]) & (ref > ref[i])).sum())
        for j in range(int(t[i])):
            if p[i] + j > 0:
                total += (c + j / 2) / (p[i] + j) / t[i]
    return float(2 * total / (n - 1) - 1)


def _tau_ap_b_half(x: np.ndarray, y: np.ndarray) -> float:
    """One half of tau_AP_b: walk y's tie groups; each system below y's first group scores the share
    of the systems strictly above it in y that x also puts strictly above it."""
    p, _ = _groups(y)
    below_top = p > 0
    total = sum(float(((y > y[i]) & (x > x[i])).sum()) / p[i] for i in np.flatnonzero(below_top))
    return float(2 * total / below_top.sum() - 1)
