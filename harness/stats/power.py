"""Power and sample size of the paired t-test: how many queries a golden set needs.

"Not significant" on a small set says little unless the set could have seen the difference at all.
Topic set size design (Sakai, "Topic set size design", Information Retrieval Journal 2016) answers it
from the variance of the per-query differences: with ``n`` queries and a standard deviation ``sd`` of
the differences, the paired t-test at level ``alpha`` detects a true mean difference ``delta`` with
probability

    power = P(T' > t(1 - alpha/2, n - 1)) + P(T' < -t(1 - alpha/2, n - 1)),
    T' ~ noncentral t(df = n - 1, nc = delta / sd * sqrt(n))

(statsmodels' ``TTestPower``; one-sided ``larger`` keeps the first term at ``t(1 - alpha)``). The
*minimum detectable effect* (mde) is the ``delta`` where that power reaches 0.8, the *queries needed*
the smallest ``n`` where it does. Both are found with a root finder on scipy's noncentral t, so the
harness needs no statsmodels at run time (the tests compare the figures with it).

Normal theory can be off for IR differences (many ties, a few large swings): :func:`simulate` gives
the resampling estimate (sets drawn with replacement from the real differences, centred and shifted,
tested with the harness's own paired t-test) to print beside it, not to replace it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from harness import defaults
from harness.stats.tests import t_tests, t_tests_w

#: the power the figures are computed at unless told otherwise (the usual 80% of study design)
POWER = 0.8
#: alternatives: the table's and the gate's test are two-sided; non-inferiority is one-sided
ALTERNATIVES = ("two-sided", "larger")
#: what the mde is, in words (it ignores Holm: one comparison at the nominal alpha)
LABEL = "one comparison, before Holm"
#: sd_diff, mde, n_for_observed and the reason they are null: the fields a comparison gains
FIELDS = ("sd_diff", "mde", "n_for_observed", "power_reason")
_XTOL = 1e-13
#: below this (relative to the largest difference) an sd or a mean is rounding noise, i.e. 0
_ZERO = 1e-12


def power(effect: float, n: float, alpha: float, alternative: str = "two-sided") -> float:
    """Power of the paired t-test for a standardized effect (mean difference / sd) with ``n`` pairs."""
    from scipy import stats

    _check_alternative(alternative)
    df = n - 1.0
    nc = effect * math.sqrt(n)
    if alternative == "two-sided":
        crit = stats.t.isf(alpha / 2.0, df)
        lower = float(stats.nct.cdf(-crit, df, nc))
        # the far tail underflows to NaN for a large effect at few pairs (scipy's nctdtr): it is ~0 there
        return _upper(crit, df, nc) + (0.0 if math.isnan(lower) else lower)
    return _upper(float(stats.t.isf(alpha, df)), df, nc)


def _upper(crit: float, df: float, nc: float) -> float:
    """P(T' > crit); scipy gives NaN for an astronomically large ``nc`` (an sd of 1e-300), where it is 1."""
    from scipy import stats

    p = float(stats.nct.sf(crit, df, nc))
    return (1.0 if nc > crit else 0.0) if math.isnan(p) else p


@functools.lru_cache(maxsize=256)
def effect_for(n: float, alpha: float, target: float = POWER, alternative: str = "two-sided") -> float:
    """The standardized effect the test detects with probability ``target`` at ``n`` pairs (n >= 2).

    It depends on the set size only, not on the scores: a table's comparisons share one root (cached)."""
    from scipy.optimize import brentq

    _check(alpha, target)
    if n < 2:
        raise ValueError(f"a t-test needs at least 2 pairs, got {n}")
    hi = 1.0
    while power(hi, n, alpha, alternative) < target:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"no effect reaches power {target} with {n} pairs")
    return float(brentq(lambda d: power(d, n, alpha, alternative) - target, 0.0, hi, xtol=_XTOL, rtol=1e-15))


def mde(sd: float, n: float, alpha: float, target: float = POWER, alternative: str = "two-sided") -> float:
    """Minimum detectable effect: the true mean difference detected with probability ``target``."""
    return float(sd * effect_for(n, alpha, target, alternative))


def n_exact(delta: float, sd: float, alpha: float, target: float = POWER, alternative: str = "two-sided") -> float:
    """Pairs (a real number, as statsmodels' ``solve_power(nobs=None)``) that detect ``delta``; >= 2."""
    from scipy.optimize import brentq

    _check(alpha, target)
    if not (sd > 0 and math.isfinite(sd)):
        raise ValueError(f"the sd of the differences must be a positive number, got {sd}")
    effect = abs(delta) / sd
    if not effect > 0:
        raise ValueError("a difference of 0 cannot be detected with any number of queries")
    if power(effect, 2.0, alpha, alternative) >= target:
        return 2.0
    hi = 4.0
    while power(effect, hi, alpha, alternative) < target:
        hi *= 2.0
        if hi > 1e15:
            raise ValueError(f"no number of queries reaches power {target}")
    return float(brentq(lambda n: power(effect, n, alpha, alternative) - target, 2.0, hi, xtol=1e-10, rtol=1e-15))


def queries_needed(delta: float, sd: float, alpha: float, target: float = POWER, alternative: str = "two-sided") -> int:
    """Whole queries needed to detect ``delta`` at power ``target`` (:func:`n_exact` rounded up)."""
    n = n_exact(delta, sd, alpha, target, alternative)
    return math.ceil(n)


def figures(diffs: np.ndarray, alpha: float = defaults.ALPHA, target: float = POWER) -> dict[str, Any]:
    """``sd_diff``, ``mde`` and ``n_for_observed`` of one comparison's per-query differences.

    Each figure that cannot be computed is None and ``power_reason`` says why: fewer than 2 queries
    (no sd), every difference equal (sd 0: the test has nothing to weigh), a mean difference of 0
    (no number of queries detects it).
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    out: dict[str, Any] = dict.fromkeys(FIELDS)
    if d.size < 2:
        out["power_reason"] = f"{d.size} quer{'y' if d.size == 1 else 'ies'}: power needs at least 2"
        return out
    sd = float(d.std(ddof=1))
    out["sd_diff"] = sd
    if not sd > _ZERO * max(1.0, float(np.abs(d).max())):
        out["sd_diff"] = 0.0
        out["power_reason"] = "every per-query difference is the same (sd_diff 0): no variance to plan with"
        return out
    out["mde"] = mde(sd, d.size, alpha, target)
    delta = float(d.mean())
    if abs(delta) <= _ZERO * max(1.0, float(np.abs(d).max())):
        out["power_reason"] = "the observed difference is 0: no number of queries detects it"
        return out
    try:
        out["n_for_observed"] = queries_needed(delta, sd, alpha, target)
    except ValueError:
        out["power_reason"] = f"the observed difference is too small for any set size to detect at power {target:g}"
    return out


def simulate(
    diffs: np.ndarray,
    shift: float,
    *,
    sets: int = 4000,
    alpha: float = defaults.ALPHA,
    n: int | None = None,
    seed: int = defaults.SEED,
    weights: np.ndarray | None = None,
) -> float:
    """Share of ``sets`` resampled query sets in which the paired t-test rejects at ``alpha``.

    Each set draws ``n`` (default: as many as there are) differences with replacement from
    ``diffs`` centred on 0 and shifted by ``shift``: the real shape of the differences (ties,
    swings) with a known true mean, so the share is the test's power at ``shift`` without the
    normal approximation. The test is the harness's own (:func:`harness.stats.tests.t_tests`).

    ``weights`` (traffic weights, one per difference; unequal): each drawn query keeps its weight
    (drawn uniformly, as the weighted bootstrap draws), the differences are centred on their
    weighted mean, and each set is tested with the weighted paired t-test
    (:func:`harness.stats.tests.t_tests_w`, Kish's n).
    """
    d = np.asarray(diffs, dtype=np.float64)
    keep = ~np.isnan(d)
    d = d[keep]
    size = d.size if n is None else int(n)
    if d.size < 2 or size < 2:
        raise ValueError("simulation needs at least 2 differences")
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)[keep]
        base = d - float(np.average(d, weights=w)) + shift
        tests = (t_tests_w(base[idx], w[idx]) for idx in resampled_sets(d.size, size, sets, seed))
    else:
        base = d - d.mean() + shift
        tests = (t_tests(base[idx]) for idx in resampled_sets(d.size, size, sets, seed))
    return sum(int(np.count_nonzero(p < alpha)) for p in tests) / sets


def resampled_sets(values: int, size: int, sets: int, seed: int) -> Iterator[np.ndarray]:
    """The query sets of :func:`simulate`: ``sets`` sets of ``size`` indices into ``values`` drawn
    uniformly with replacement, as (size, k) blocks of at most 4M indices (columns are sets)."""
    rng = np.random.default_rng(seed)
    block = max(1, min(sets, 2**22 // size))
    done = 0
    while done < sets:
        k = min(block, sets - done)
        yield rng.integers(0, values, size=(size, k))
        done += k


def sentence(
    retriever: str, metric: str, entry: Mapping[str, Any] | Any, *, queries: int | None = None, target: float = POWER
) -> str | None:
    """The legend's sentence for one comparison (a ``significance[retriever][metric]`` entry):

    "with 83 queries this set detects ndcg@10 differences of 0.096 or more (80% power, one
    comparison, before Holm); dense's +0.043 would need 410 queries". None when the entry holds no
    mde (older results, or a reason it is null: then :func:`reason_sentence`).
    """
    get = entry.get
    m = get("mde")
    if m is None:
        return None
    if queries is None:
        queries = sum(int(get(k, 0) or 0) for k in ("wins", "ties", "losses"))
    n = queries
    text = f"with {n} queries this set detects {metric} differences of {m:.3f} or more ({target:.0%} power, {LABEL})"
    delta, need = get("delta"), get("n_for_observed")
    if delta is not None and need is not None:
        enough = "; the set is large enough" if need <= n else ""
        text += f"; {retriever}'s {delta:+.3f} would need {need:,} queries{enough}"
    elif get("power_reason"):
        text += f"; {retriever}: {get('power_reason')}"
    return text


def reason_sentence(retriever: str, metric: str, entry: Mapping[str, Any] | Any) -> str | None:
    """Why a comparison has no power figures (zero variance, too few queries), or None."""
    why = entry.get("power_reason")
    return f"{retriever} {metric}: {why}" if why and entry.get("mde") is None else None


def _check(alpha: float, target: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < target < 1:
        raise ValueError(f"power must be in (0, 1), got {target}")
    if target <= alpha:
        raise ValueError(f"power must be above alpha ({alpha}), got {target}")


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
