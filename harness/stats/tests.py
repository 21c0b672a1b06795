"""Paired significance tests on per-query scores, and multiple-testing correction.

Both systems are scored on the same queries, so tests are paired: the per-query differences
carry the evidence. One implementation, used by the comparison tables and by ``harness check``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from harness import defaults


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired tests need two equal-length 1-d arrays, got {a.shape} and {b.shape}")
    return a - b


def randomization_test(a: np.ndarray, b: np.ndarray, *, n: int = defaults.PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip permutation) test of mean(a - b) = 0.

    p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + n) over n random sign vectors s (the test
    Smucker et al. 2007 recommend for IR; the +1 keeps p > 0 and the test exact in size).
    """
    return float(randomization_tests(_diffs(a, b)[:, None], n=n, seed=seed)[0])


def randomization_tests(diffs: np.ndarray, *, n: int = defaults.PERMUTATIONS, seed: int = 0) -> np.ndarray:
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


def t_tests(diffs: np.ndarray) -> np.ndarray:
    """:func:`t_test` of many paired comparisons at once: ``diffs`` is (queries, comparisons) of
    per-query differences; the same p-values, column by column (simulations test thousands of sets)."""
    from scipy import stats

    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError("diffs must be (queries, comparisons)")
    q, m = d.shape
    if q < 2:
        return np.ones(m)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # near-equal columns: scipy's precision notice
        p = np.asarray(stats.ttest_1samp(d, 0.0, axis=0).pvalue, dtype=np.float64)
    flat = np.all(np.isclose(d, d[:1]), axis=0)  # every difference equal: as t_test, no spread to weigh
    p[flat] = np.where(d[0, flat] == 0, 1.0, 0.0)
    return p


def t_lower_bound(diffs: np.ndarray, alpha: float = defaults.ALPHA) -> float | None:
    """One-sided lower ``1 - alpha`` confidence bound of the mean paired difference (Student t, n - 1 df):
    ``mean - t(1 - alpha, n - 1) * sd / sqrt(n)``. The bound a non-inferiority test compares with
    ``-margin``: the change passes only when even this pessimistic mean is above it. None below 2 pairs."""
    from scipy import stats

    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"t_lower_bound takes a 1-d array, got shape {d.shape}")
    if d.size < 2:
        return None
    sd = float(d.std(ddof=1))
    return float(d.mean() - stats.t.ppf(1.0 - alpha, d.size - 1) * sd / np.sqrt(d.size))


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


def bootstrap_ci(
    values: np.ndarray, *, n: int = defaults.BOOTSTRAP, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean (queries resampled with replacement)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"bootstrap_ci takes a 1-d array, got shape {x.shape}")
    return bootstrap_cis(x[:, None], n=n, confidence=confidence, seed=seed)[0]


def bootstrap_cis(
    columns: np.ndarray, *, n: int = defaults.BOOTSTRAP, confidence: float = 0.95, seed: int = 0
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of every column of ``columns`` (queries x columns), from ONE resample.

    The resampled query sets depend only on (number of queries, ``n``, ``seed``), so every column
    gets the same ones (common random numbers, as the randomization test shares one sign matrix):
    a table of retrievers x metrics costs one draw. Each resample is held as per-query counts, so the
    means of every column are one matrix product ``counts @ columns`` instead of a gather per column.
    The draw is the one :func:`bootstrap_ci` always made (same generator calls, same blocks), so
    intervals equal those of the per-column gather it replaces up to the order of summation (~1e-16).
    """
    x = np.asarray(columns, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("columns must be (queries, columns)")
    size, cols = x.shape
    if cols == 0:
        return []
    if size == 0:
        return [(0.0, 0.0)] * cols
    if n == 0 or size == 1:
        return [(float(m), float(m)) for m in x.mean(axis=0)]
    means = bootstrap_means(x, n=n, seed=seed)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi)]


def bootstrap_means(columns: np.ndarray, *, n: int = defaults.BOOTSTRAP, seed: int = 0) -> np.ndarray:
    """(n, columns) means of every column over ``n`` seeded resamples of the queries (rows).

    Each resample is a row of per-query counts; a column's means are ``counts @ column``, one
    matrix-vector product per column over cache-sized slices of the counts. Every column goes through
    the same products of the same shapes, so its means are the same bits whether it is resampled
    alone or beside a hundred other columns (a matrix-matrix product would not promise that).
    """
    x = np.asarray(columns, dtype=np.float64)
    size, width = x.shape
    xt = np.ascontiguousarray(x.T)
    rng = np.random.default_rng(seed)
    means = np.empty((n, width))
    block = max(1, 2**22 // size)  # the block bootstrap_ci has always drawn in: the same random stream
    rows = max(1, 2**18 // size)  # counts rows per product: about 2 MB, stays in cache across columns
    for start in range(0, n, block):
        stop = min(n, start + block)
        k = stop - start
        idx = rng.integers(0, size, size=(k, size))
        idx += np.arange(k, dtype=idx.dtype)[:, None] * size
        counts = np.bincount(idx.ravel(), minlength=k * size).reshape(k, size).astype(np.float64)
        for a in range(0, k, rows):
            part = counts[a : a + rows]
            out = means[start + a : start + a + part.shape[0]]
            for j in range(width):
                out[:, j] = part @ xt[j]
    return means / size


def win_tie_loss(a: np.ndarray, b: np.ndarray, *, eps: float = 1e-12) -> tuple[int, int, int]:
    """Queries where a beats b, ties it, loses to it."""
    d = _diffs(a, b)
    return int((d > eps).sum()), int((np.abs(d) <= eps).sum()), int((d < -eps).sum())


def t_tests_w(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`harness.stats.weighted.t_test_w` of every column of ``x`` (differences) with the weights ``w`` of the same
    shape, at once: the p-values of :func:`harness.stats.power.simulate`'s weighted sets. A column
    with no spread or one effective query rejects exactly when its mean is not 0 (as ``t_test_w``);
    one whose weights are all 0 has no mean and never rejects."""
    from scipy import stats

    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (w * x).sum(axis=0) / total
        n_eff = total**2 / np.square(w).sum(axis=0)
        var = (w * (x - m) ** 2).sum(axis=0) / total * n_eff / (n_eff - 1)
        p = 2 * stats.t.sf(np.abs(m / np.sqrt(var / n_eff)), n_eff - 1)
    degenerate = ~(np.isfinite(p) & (var > 0) & (n_eff > 1))
    return np.where(degenerate, np.where(np.nan_to_num(m) == 0, 1.0, 0.0), p)
