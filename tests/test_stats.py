"""harness.stats.compare: the statistics of a comparison table, against hand-computed and scipy
values and the properties a reviewer relies on."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from harness.stats import bootstrap_ci, bootstrap_cis, compare, holm

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)


def _values(rng: np.random.Generator, n: int = 40) -> dict[str, dict[str, np.ndarray]]:
    base = rng.random(n)
    return {
        "base": {"ndcg@10": base, "recall@100": rng.random(n)},
        "better": {"ndcg@10": np.clip(base + 0.2 + 0.05 * rng.standard_normal(n), 0, 1), "recall@100": rng.random(n)},
        "worse": {"ndcg@10": np.clip(base - 0.3, 0, 1), "recall@100": rng.random(n)},
    }


def test_identical_systems_are_not_different():
    v = np.array([0.1, 0.5, 0.9, 0.0, 1.0, 0.3])
    sig, ci = compare({"a": {"m": v}, "b": {"m": v.copy()}}, "a", seed=3)
    t = sig["b"]["m"]
    assert t["p_value"] == 1.0 and t["p_t"] == 1.0 and t["p_holm"] == 1.0
    assert t["delta"] == 0.0 and (t["ci_low"], t["ci_high"]) == (0.0, 0.0)
    assert (t["wins"], t["ties"], t["losses"]) == (0, 6, 0)
    assert not t["significant"]
    assert ci["a"]["m"] == ci["b"]["m"]
    assert "a" not in sig  # the baseline is not compared with itself


def test_against_exact_permutation_test_and_scipy():
    a = np.array([0.9, 0.7, 0.8, 0.4, 0.95, 0.6, 0.75, 0.85, 0.5, 0.65])
    b = np.array([0.8, 0.72, 0.6, 0.45, 0.7, 0.5, 0.7, 0.6, 0.52, 0.4])
    sig, _ = compare({"b": {"m": b}, "a": {"m": a}}, "b", seed=0, permutations=40000)
    t = sig["a"]["m"]
    d = a - b
    # exhaustive: every one of the 2^10 sign vectors
    signs = np.array(list(itertools.product([-1, 1], repeat=d.size)))
    exact = np.mean(np.abs(signs @ d) / d.size >= abs(d.mean()) - 1e-12)
    assert t["p_value"] == pytest.approx(exact, abs=0.006)
    assert t["p_t"] == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-12)
    assert t["delta"] == pytest.approx(d.mean(), rel=1e-12)
    assert (t["wins"], t["ties"], t["losses"]) == (7, 0, 3)
    # one comparison: Holm changes nothing
    assert t["p_holm"] == t["p_value"]


def test_holm_over_the_whole_table():
    sig, _ = compare(_values(np.random.default_rng(0)), "base", seed=1, permutations=2000)
    entries = [t for ms in sig.values() for t in ms.values()]
    raw = [t["p_value"] for t in entries]
    # hand Holm: sorted p times (m - rank), running max, capped at 1
    m = len(raw)
    order = np.argsort(raw, kind="stable")
    expected = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * raw[i]))
        expected[i] = running
    assert [t["p_holm"] for t in entries] == pytest.approx(expected.tolist())
    assert all(t["p_holm"] >= t["p_value"] for t in entries)
    # monotone: a smaller raw p never gets a larger adjusted p
    ranked = sorted(entries, key=lambda t: t["p_value"])
    assert all(x["p_holm"] <= y["p_holm"] for x, y in itertools.pairwise(ranked))


def test_clear_differences_are_significant_in_the_right_direction():
    sig, _ = compare(_values(np.random.default_rng(0)), "base", seed=0, permutations=5000)
    better, worse = sig["better"]["ndcg@10"], sig["worse"]["ndcg@10"]
    assert better["significant"] and better["delta"] > 0 and better["ci_low"] > 0
    assert worse["significant"] and worse["delta"] < 0 and worse["ci_high"] < 0
    # every sign flip of an all-positive difference vector has a smaller |mean|: the floor of the test
    assert better["p_value"] == pytest.approx(1 / 5001)
    assert not sig["better"]["recall@100"]["significant"]


def test_intervals_are_the_seeded_bootstrap_of_each_mean():
    vals = _values(np.random.default_rng(5))
    _, ci = compare(vals, None, seed=7, bootstrap=500)
    for r, ms in vals.items():
        for m, v in ms.items():
            assert ci[r][m] == list(bootstrap_ci(v, n=500, seed=7))
            assert ci[r][m][0] <= v.mean() <= ci[r][m][1]


def test_no_baseline_means_no_tests():
    sig, ci = compare(_values(np.random.default_rng(1)), None)
    assert sig == {} and set(ci) == {"base", "better", "worse"}


def test_deterministic_with_the_seed_and_free_of_query_order():
    vals = _values(np.random.default_rng(2))
    qids = [f"q{i:03d}" for i in range(40)]
    one = compare(vals, "base", seed=11, query_ids=qids)
    assert one == compare(vals, "base", seed=11, query_ids=qids)
    assert one != compare(vals, "base", seed=12, query_ids=qids)
    perm = np.random.default_rng(9).permutation(40)
    shuffled = {r: {m: v[perm] for m, v in ms.items()} for r, ms in vals.items()}
    assert compare(shuffled, "base", seed=11, query_ids=[qids[i] for i in perm]) == one


def test_nan_scores_leave_only_that_query_out():
    a = np.array([0.2, 0.4, np.nan, 0.8])
    b = np.array([0.1, 0.4, 0.5, 0.6])
    sig, ci = compare({"b": {"m": b}, "a": {"m": a}}, "b", seed=0)
    t = sig["a"]["m"]
    assert t["delta"] == pytest.approx(np.mean([0.1, 0.0, 0.2]))
    assert (t["wins"], t["ties"], t["losses"]) == (2, 1, 0)
    assert ci["a"]["m"] == list(bootstrap_ci(np.array([0.2, 0.4, 0.8]), seed=0))


def test_bad_input():
    with pytest.raises(ValueError, match="baseline"):
        compare({"a": {"m": np.zeros(3)}}, "nope")
    with pytest.raises(ValueError, match="same queries"):
        compare({"a": {"m": np.zeros(3)}, "b": {"m": np.zeros(4)}}, "a")
    with pytest.raises(ValueError, match="query ids"):
        compare({"a": {"m": np.zeros(3)}}, None, query_ids=["q1"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=60), st.integers(0, 2**31))
def test_ci_contains_the_mean(xs, seed):
    v = np.array(xs)
    _, ci = compare({"a": {"m": v}}, None, seed=seed, bootstrap=200)
    lo, hi = ci["a"]["m"]
    assert lo - 1e-12 <= v.mean() <= hi + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_is_monotone_and_bounded(ps):
    adj = holm(ps)
    assert all(p <= a <= 1.0 for p, a in zip(ps, adj))
    order = np.argsort(ps, kind="stable")
    assert all(adj[i] <= adj[j] for i, j in itertools.pairwise(order))


def _gather_bootstrap_ci(x: np.ndarray, n: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    """The per-column bootstrap as main had it before the shared resample (a gather per interval)."""
    rng = np.random.default_rng(seed)
    means = np.empty(n)
    block = max(1, 2**22 // x.size)
    for start in range(0, n, block):
        stop = min(n, start + block)
        means[start:stop] = x[rng.integers(0, x.size, size=(stop - start, x.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


@pytest.mark.parametrize("size", [2, 37, 5000, 2**20 + 1])  # the last: 3 resamples per drawing block
def test_shared_resample_draws_what_the_per_column_gather_drew(size):
    """Same generator calls, same blocks: the intervals of before, up to the order of summation."""
    x = np.random.default_rng(size).random(size)
    n = 10 if size > 10**5 else 400
    assert bootstrap_ci(x, n=n, seed=5) == pytest.approx(_gather_bootstrap_ci(x, n, 5), rel=1e-12, abs=1e-15)


def test_a_column_interval_does_not_depend_on_its_neighbours():
    cols = np.random.default_rng(3).random((300, 70))
    together = bootstrap_cis(cols, n=300, seed=9)
    assert together == [bootstrap_ci(cols[:, j], n=300, seed=9) for j in range(70)]
    assert bootstrap_cis(cols[:, 33:40], n=300, seed=9) == together[33:40]


PINNED = (0.3475, 0.595)  # bootstrap_ci(np.arange(20) / 20, n=1000, seed=0), the same before and after


def test_bootstrap_values_pinned():
    """The seeded draw is part of the results: a change here changes every saved interval."""
    lo, hi = bootstrap_ci(np.arange(20) / 20, n=1000, seed=0)
    assert (lo, hi) == pytest.approx(_gather_bootstrap_ci(np.arange(20) / 20, 1000, 0), rel=1e-12)
    assert (round(lo, 6), round(hi, 6)) == PINNED


def test_compare_shares_one_resample_for_intervals_and_differences():
    vals = _values(np.random.default_rng(4))
    sig, ci = compare(vals, "base", seed=2, bootstrap=300, permutations=500)
    for r, ms in vals.items():
        for m, v in ms.items():
            assert ci[r][m] == list(bootstrap_ci(v, n=300, seed=2))
            if r != "base":
                d = v - vals["base"][m]
                assert (sig[r][m]["ci_low"], sig[r][m]["ci_high"]) == bootstrap_ci(d, n=300, seed=2)
