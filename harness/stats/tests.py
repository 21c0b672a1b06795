"""Paired significance tests on per-query scores, and multiple-testing correction.

Both systems are scored on the same queries, so tests are paired: the per-query differences
carry the evidence. One implementation, used by the comparison tables and by ``harness check``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired tests need two equal-length 1-d arrays, got {a.shape} and {b.shape}")
    return a - b


def randomization_test(a: np.ndarray, b: np.ndarray, *, n: int = 10000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip permutation) test of mean(a - b) = 0.

    p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + n) over n random sign vectors s (the test
    Smucker et al. 2007 recommend for IR; the +1 keeps p > 0 and the test exact in size).
    """
    return float(randomization_tests(_diffs(a, b)[:, None], n=n, seed=seed)[0])


def randomization_tests(diffs: np.ndarray, *, n: int = 10000, seed: int = 0) -> np.ndarray:
    """:func:`randomization_test` for many comparisons at once: ``diffs`` is (queries, comparisons).

    The same sign vectors serve every column (one matrix product), so a table of retrievers x
    metrics costs about as much as one test.
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError("diffs must be (queries, comparisons)")
    q, m = d.shape
    if q == 0 or m == 0:
        return np.ones(m)
    observed = np.abs(d.mean(axis=0))
    rng = np.random.default_rng(seed)
    hits = np.zeros(m, dtype=np.int64)
    block = max(1, min(n, 2**23 // max(q, 1)))
    done = 0
    while done < n:
        k = min(block, n - done)
        signs = (rng.integers(0, 2, size=(k, q), dtype=np.int8) * 2 - 1).astype(np.float64)
        means = np.abs(signs @ d) / q
        hits += np.count_nonzero(means >= observed - 1e-12, axis=0)
        done += k
    p = (hits + 1) / (n + 1)
    p[~np.any(d, axis=0)] = 1.0
    return p


def t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value (1.0 when every difference is equal, so no evidence)."""
    from scipy import stats

    d = _diffs(a, b)
    if d.size < 2 or np.allclose(d, d[0]):
        return 1.0 if d.size < 2 or d[0] == 0 else 0.0
    return float(stats.ttest_rel(a, b).pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def bootstrap_ci(values: np.ndarray, *, n: int = 1000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean (queries resampled with replacement)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (0.0, 0.0)
    if n == 0 or x.size == 1:
        m = float(x.mean())
        return (m, m)
    rng = np.random.default_rng(seed)
    means = np.empty(n)
    block = max(1, 2**22 // x.size)
    for start in range(0, n, block):
        stop = min(n, start + block)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def win_tie_loss(a: np.ndarray, b: np.ndarray, *, eps: float = 1e-12) -> tuple[int, int, int]:
    """Queries where a beats b, ties it, loses to it."""
    d = _diffs(a, b)
    return int((d > eps).sum()), int((np.abs(d) <= eps).sum()), int((d < -eps).sum())
