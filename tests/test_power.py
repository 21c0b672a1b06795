"""Power and sample size (harness.stats.power): every figure against statsmodels' TTestPower, the
paired tests it rests on against scipy, and the figures a comparison and its legend carry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import DescrStatsW

from harness.stats import compare, t_lower_bound, t_test, t_tests
from harness.stats import power as pw
from harness.stats.planning import plan, planning

SM = TTestPower()


@pytest.mark.parametrize("n", [5, 10, 50, 83, 300, 1000])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1])
def test_effect_for_is_statsmodels_root(n, alpha):
    """Our root has power 0.8 by statsmodels' own power function (to 1e-9), and equals its solve_power
    (statsmodels' solver stops earlier, how early depends on its start value: they agree to 1e-4 relative)."""
    mine = pw.effect_for(n, alpha)
    assert SM.power(mine, n, alpha) == pytest.approx(0.8, abs=1e-9)
    assert mine == pytest.approx(TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8), rel=1e-4)


@pytest.mark.parametrize("n", [20, 300])
def test_one_sided_matches_statsmodels(n):
    mine = pw.effect_for(n, 0.05, 0.9, "larger")
    assert SM.power(mine, n, 0.05, alternative="larger") == pytest.approx(0.9, abs=1e-9)
    assert pw.power(0.3, n, 0.025, "larger") == pytest.approx(SM.power(0.3, n, 0.025, alternative="larger"), abs=1e-12)


@pytest.mark.parametrize("effect", [0.02, 0.08, 0.1, 0.3, 1.0, 2.0])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_queries_needed_matches_statsmodels(effect, alpha):
    exact = SM.solve_power(effect_size=effect, alpha=alpha, power=0.8)
    assert pw.n_exact(effect, 1.0, alpha) == pytest.approx(exact, rel=1e-6)
    assert pw.queries_needed(effect * 0.25, 0.25, alpha) == math.ceil(exact)


def test_planning_calculator_is_statsmodels():
    """``harness power --sd 0.25 --delta 0.02``: statsmodels says 1228.31 -> 1229 queries."""
    exact = SM.solve_power(effect_size=0.02 / 0.25, alpha=0.05, power=0.8)
    out = planning(0.25, alpha=0.05, delta=0.02, queries=83)
    assert out["queries_needed"] == math.ceil(exact) == 1229
    assert out["mde"] == pytest.approx(0.25 * SM.solve_power(nobs=83, alpha=0.05, power=0.8), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 5000), st.floats(0.01, 1.0))
def test_mde_and_queries_needed_are_inverse(n, sd):
    """The mde at n is detected by n queries and not by n - 1 (n_exact is n up to the root's tolerance)."""
    m = pw.mde(sd, n, 0.05)
    assert pw.n_exact(m, sd, 0.05) == pytest.approx(n, rel=1e-7)
    assert pw.mde(sd, n + 1, 0.05) < m


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40), st.integers(1, 4))
def test_t_tests_equal_t_test_column_by_column(values, shift):
    d = np.array(values)
    cols = np.column_stack([d, d * shift, np.zeros_like(d), np.full_like(d, 0.5)])
    zeros = np.zeros_like(d)
    expected = [t_test(cols[:, j], zeros) for j in range(cols.shape[1])]
    np.testing.assert_allclose(t_tests(cols), expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("alpha", [0.05, 0.025])
def test_lower_bound_against_scipy_and_statsmodels(alpha):
    d = np.random.default_rng(3).normal(0.01, 0.2, 137)
    independent = d.mean() - stats.t.ppf(1 - alpha, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    assert t_lower_bound(d, alpha) == pytest.approx(independent, abs=1e-12)
    low, _ = DescrStatsW(d).tconfint_mean(alpha=2 * alpha)  # two-sided at 2 alpha: the same lower end
    assert t_lower_bound(d, alpha) == pytest.approx(low, abs=1e-12)
    assert t_lower_bound(d[:1], alpha) is None


def test_figures_null_with_reasons():
    assert pw.figures(np.array([0.1]))["power_reason"].startswith("1 query")
    flat = pw.figures(np.full(20, 0.05))
    assert flat["sd_diff"] == 0.0 and flat["mde"] is None and "sd_diff 0" in flat["power_reason"]
    zero = pw.figures(np.array([0.1, -0.1, 0.2, -0.2]))
    assert zero["mde"] is not None and zero["n_for_observed"] is None and "difference is 0" in zero["power_reason"]
    d = np.random.default_rng(0).normal(0.04, 0.3, 83)
    f = pw.figures(d)
    assert f["sd_diff"] == pytest.approx(d.std(ddof=1))
    assert f["mde"] == pytest.approx(f["sd_diff"] * SM.solve_power(nobs=83, alpha=0.05, power=0.8), abs=1e-6)
    exact = SM.solve_power(effect_size=abs(d.mean()) / f["sd_diff"], alpha=0.05, power=0.8)
    assert f["n_for_observed"] == math.ceil(exact) and f["power_reason"] is None


def test_compare_carries_power_figures_and_sentence():
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, 83)
    values = {"bm25": {"ndcg@10": base}, "dense": {"ndcg@10": np.clip(base + rng.normal(0.04, 0.3, 83), 0, 1)}}
    sig, _ = compare(values, "bm25", permutations=200, bootstrap=50)
    entry = sig["dense"]["ndcg@10"]
    d = values["dense"]["ndcg@10"] - base
    assert entry == {**entry, **pw.figures(d)}
    text = pw.sentence("dense", "ndcg@10", entry)
    assert text.startswith(f"with 83 queries this set detects ndcg@10 differences of {entry['mde']:.3f} or more")
    assert f"dense's {entry['delta']:+.3f} would need {entry['n_for_observed']:,} queries" in text


def test_zero_variance_comparison_says_so():
    base = np.linspace(0, 1, 30)
    sig, _ = compare({"a": {"m": base}, "b": {"m": base + 0.1}}, "a", permutations=50, bootstrap=20)
    entry = sig["b"]["m"]
    assert entry["mde"] is None and entry["sd_diff"] == 0.0
    assert pw.sentence("b", "m", entry) is None
    assert "sd_diff 0" in pw.reason_sentence("b", "m", entry)


def test_simulation_uses_the_shape_of_the_differences():
    """Normal differences: the resampled rejection rate at the mde is the noncentral-t 0.8."""
    d = np.random.default_rng(5).normal(0.0, 0.2, 300)
    m = pw.mde(d.std(ddof=1), 300, 0.05)
    assert pw.simulate(d, m, sets=2000, seed=1) == pytest.approx(0.8, abs=0.03)
    assert pw.simulate(d, 0.0, sets=2000, seed=1) == pytest.approx(0.05, abs=0.015)


def test_plan_one_retriever_uses_sqrt2_sd():
    scores = np.random.default_rng(2).uniform(0, 1, 50)
    (row,) = plan({"bm25": {"ndcg@10": scores}}, "bm25", ["ndcg@10"], alpha=0.05, delta=0.05)
    assert row.sd_source.startswith("sqrt(2)") and row.sd_diff == pytest.approx(math.sqrt(2) * scores.std(ddof=1))
    assert row.queries_needed == pw.queries_needed(0.05, row.sd_diff, 0.05)


@pytest.mark.parametrize(
    "bad", [dict(alpha=0.05, target=1.5), dict(alpha=0.0, target=0.8), dict(alpha=0.5, target=0.4)]
)
def test_bad_levels_refused(bad):
    with pytest.raises(ValueError):
        pw.effect_for(50, bad["alpha"], bad["target"])


def test_extreme_effects_are_figures_not_nan():
    """An sd of 1e-300 makes the noncentral t's tail NaN in scipy: the power is 1 there (2 queries)."""
    assert pw.power(1e10, 2, 0.05) == 1.0 and pw.power(1e10, 2, 0.05, "larger") == 1.0
    assert pw.queries_needed(0.02, 1e-300, 0.05) == 2


def test_planning_a_hopeless_difference_is_one_line(capsys):
    from harness.cli import main

    assert main(["power", "--sd", "0.25", "--delta", "1e-9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --delta: 1e-09 with sd 0.25: no number of queries")
