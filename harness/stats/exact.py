"""The exact paired sign-flip test, for a handful of paired values (a suite's per-dataset means).

With n pairs there are only 2**n sign assignments, so the test enumerates all of them instead of
sampling: p = #{s : |mean(s * d)| >= |mean(d)|} / 2**n. The smallest p it can give is 2 / 2**n (the
observed signs and their mirror image), so below :func:`min_pairs` pairs it cannot reject at alpha
whatever the data: 5 datasets give at best p = 0.0625, 6 give 0.03125.
"""

from __future__ import annotations

import math

import numpy as np

#: above this many pairs the 2**n assignments are sampled (seeded), not enumerated
MAX_EXACT = 20


def sign_flip_p(diffs: np.ndarray | list[float], *, samples: int = 100_000, seed: int = 0) -> float:
    """Two-sided p of mean(d) = 0 over every sign assignment (1.0 when every difference is 0)."""
    d = np.asarray(diffs, dtype=np.float64)
    n = d.size
    if n == 0 or not np.any(d):
        return 1.0
    observed = abs(d.mean())
    if n <= MAX_EXACT:
        # row i of the sign matrix: the bits of i (all 2**n assignments exactly once)
        bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
        means = np.abs((bits * 2 - 1) @ d) / n
        return float(np.count_nonzero(means >= observed - 1e-12) / 2**n)
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(samples, n), dtype=np.int8) * 2 - 1
    hits = np.count_nonzero(np.abs(signs @ d) / n >= observed - 1e-12)
    return float((hits + 1) / (samples + 1))


def min_p(n: int) -> float:
    """The smallest p :func:`sign_flip_p` can give with ``n`` pairs (1.0 for none)."""
    return 1.0 if n <= 0 else min(1.0, 2.0 / 2**n)


def min_pairs(alpha: float) -> int:
    """Fewest pairs with which the test can reject (p < ``alpha``): 6 at 0.05."""
    return max(1, math.floor(math.log2(2.0 / alpha) + 1e-12) + 1)
