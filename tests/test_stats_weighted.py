"""harness.stats.weighted and the weights threaded through compare, score, the table and the gate:
the weighted mean equals numpy.average(weights=), the weighted randomization test, t-test and
bootstrap agree with direct implementations written here from the formulas in the module's
docstring, and a config weighted by an all-ones field prints the unweighted figures bit for bit."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as sps

from harness.stats import compare
from harness.stats import weighted as W
from tests.conftest import QUICK_RUN, copy_demo, run_harness

pytestmark = pytest.mark.core

FLOATS = st.floats(-1, 1, allow_nan=False, width=64)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, n, elements=FLOATS), arrays(np.float64, n, elements=st.floats(0.01, 1e3))
        )
    )
)
def test_weighted_mean_is_numpy_average(xw):
    x, w = xw
    assert W.weighted_mean(x, w) == pytest.approx(np.average(x, weights=w), rel=1e-12, abs=1e-12)
    assert W.effective_n(w) == pytest.approx(w.sum() ** 2 / (w**2).sum())


def test_effective_n_bounds():
    assert W.effective_n(np.ones(7)) == pytest.approx(7)
    assert W.effective_n(np.array([1.0, 0, 0, 0])) == pytest.approx(1)
    assert W.effective_n(np.array([3.0, 1.0])) == pytest.approx(16 / 10)


def _data(q=12, m=3, seed=0):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.05, 0.2, size=(q, m))
    w = rng.integers(1, 50, size=q).astype(np.float64)
    return d, w


def test_weighted_randomization_test_is_the_direct_sign_flip_test():
    """Direct: the same sign vectors (one block: the generator's first k x q draws), statistic
    |sum_i w_i s_i d_i| / sum w per vector, p = (1 + #{stat >= observed}) / (1 + n)."""
    d, w = _data()
    n, seed = 3000, 7
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(n, d.shape[0]), dtype=np.int8) * 2 - 1
    for j in range(d.shape[1]):
        obs = abs(sum(w[i] * d[i, j] for i in range(len(w)))) / w.sum()
        stat = np.array([abs(sum(w[i] * s[i] * d[i, j] for i in range(len(w)))) / w.sum() for s in signs])
        direct = (1 + np.count_nonzero(stat >= obs - 1e-12)) / (n + 1)
        assert W.randomization_tests_w(d, w, n=n, seed=seed)[j] == pytest.approx(direct, abs=1e-15)


def test_weighted_randomization_test_near_the_exact_permutation_distribution():
    """Exact: all 2^q sign vectors of 10 queries; the Monte Carlo p is within its standard error."""
    d, w = _data(q=10, m=1, seed=3)
    obs = abs(w @ d[:, 0]) / w.sum()
    stats_ = [abs((np.array(s) * w) @ d[:, 0]) / w.sum() for s in itertools.product((-1, 1), repeat=10)]
    exact = np.mean(np.array(stats_) >= obs - 1e-12)
    p = W.randomization_tests_w(d, w, n=20000, seed=1)[0]
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / 20000) + 1e-3


def test_weighted_t_test_and_bound_are_the_kish_formulas():
    """Direct: m = sum(w d)/W, n_eff = W^2/sum w^2, s^2 = sum(w (d-m)^2)/W * n_eff/(n_eff-1),
    t = m / (s / sqrt(n_eff)) on n_eff - 1 df (Kish 1965)."""
    rng = np.random.default_rng(5)
    a, b = rng.uniform(size=30), rng.uniform(size=30)
    w = rng.integers(1, 20, size=30).astype(float)
    d = a - b
    big_w = w.sum()
    m = (w * d).sum() / big_w
    n_eff = big_w**2 / (w**2).sum()
    s = math.sqrt((w * (d - m) ** 2).sum() / big_w * n_eff / (n_eff - 1))
    t = m / (s / math.sqrt(n_eff))
    assert W.t_test_w(a, b, w) == pytest.approx(2 * sps.t.sf(abs(t), n_eff - 1), rel=1e-12)
    assert W.t_lower_bound_w(d, w, 0.05) == pytest.approx(m - sps.t.ppf(0.95, n_eff - 1) * s / math.sqrt(n_eff))
    # equal weights: scipy's paired t-test exactly
    assert W.t_test_w(a, b, np.full(30, 4.0)) == sps.ttest_rel(a, b).pvalue


def test_weighted_bootstrap_is_the_direct_ratio_bootstrap():
    """Direct: resample query indices uniformly (the generator's first n x q integers), weighted
    mean sum(w x)/sum(w) of each resample, 2.5% and 97.5% quantiles."""
    d, w = _data(q=25, m=2, seed=9)
    n, seed = 500, 4
    idx = np.random.default_rng(seed).integers(0, 25, size=(n, 25))
    for j, (lo, hi) in enumerate(W.bootstrap_cis_w(d, w, n=n, seed=seed)):
        means = [np.average(d[i, j], weights=w[i]) for i in idx]
        elo, ehi = np.quantile(means, [0.025, 0.975])
        assert (lo, hi) == (pytest.approx(elo, abs=1e-12), pytest.approx(ehi, abs=1e-12))


def test_compare_with_all_ones_weights_is_unweighted_bit_for_bit():
    rng = np.random.default_rng(2)
    values = {r: {m: rng.uniform(size=40) for m in ("ndcg@10", "mrr@10")} for r in ("a", "b", "c")}
    values["b"]["ndcg@10"][3] = np.nan
    qids = [f"q{i:02d}" for i in rng.permutation(40)]
    plain = compare(values, "a", query_ids=qids, bootstrap=300, permutations=300)
    ones = compare(values, "a", query_ids=qids, bootstrap=300, permutations=300, weights=np.ones(40))
    assert json.dumps(plain) == json.dumps(ones)
    weighted = compare(values, "a", query_ids=qids, bootstrap=300, permutations=300, weights=np.arange(1.0, 41))
    assert weighted != plain
    order = np.argsort(np.array(qids, dtype=object), kind="stable")
    d = (values["c"]["mrr@10"] - values["a"]["mrr@10"])[order]
    assert weighted[0]["c"]["mrr@10"]["delta"] == pytest.approx(np.average(d, weights=np.arange(1.0, 41)[order]))


# --------------------------------------------------------------------------- through harness run / check
def _weighted_demo(tmp_path: Path) -> Path:
    demo = copy_demo(tmp_path / "demo")
    lines = (demo / "queries.jsonl").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        rec = json.loads(line)
        rec["ones"], rec["count"] = 1, 1 + (i * 7) % 13
        out.append(json.dumps(rec))
    (demo / "queries.jsonl").write_text("\n".join(out) + "\n")
    return demo


def _config(tmp_path: Path, demo: Path, weights: str | None, name: str) -> Path:
    ds = f"{{path: {demo}, weights: {weights}}}" if weights else f"{{path: {demo}}}"
    cfg = tmp_path / name
    cfg.write_text(f"dataset: {ds}\n{QUICK_RUN}retrievers:\n  bm25: {{type: bm25}}\n"
                   "  bm25b: {type: bm25, k1: 0.6, b: 0.3}\n  bm25c: {type: bm25, k1: 2.0, b: 0.9}\n")  # fmt: skip
    return cfg


FIGURES = ("summary", "intervals", "significance", "per_query", "query_ids")


def test_all_ones_weights_print_the_unweighted_figures_and_unequal_ones_are_weighted(tmp_path):
    demo = _weighted_demo(tmp_path)
    runs = {}
    for label, weights in (("plain", None), ("ones", "ones"), ("count", "count")):
        cfg = _config(tmp_path, demo, weights, f"{label}.yaml")
        p = run_harness("run", "--config", str(cfg), "--out", str(tmp_path / label), "--no-progress")
        assert p.returncode == 0, p.stderr[-3000:]
        runs[label] = (p.stdout, json.loads((tmp_path / label / "results.json").read_text()))
    plain, ones, count = runs["plain"][1], runs["ones"][1], runs["count"][1]
    for key in FIGURES:
        assert json.dumps(plain[key]) == json.dumps(ones[key]), key
    assert "weights" not in plain and ones["weights"]["field"] == "ones"

    def body(stdout: str) -> list[str]:  # the table rows, without the legend's weighting line
        return [ln for ln in stdout.splitlines() if ln.startswith("|") or "Power vs" in ln]

    assert body(runs["plain"][0]) == body(runs["ones"][0])
    assert "Traffic-weighted" in runs["ones"][0] and "Traffic-weighted" not in runs["plain"][0]
    # unequal weights: the summary is numpy's weighted average of the per-query scores
    w = np.array(count["weights"]["values"])
    for r, metrics in count["summary"].items():
        for m, v in metrics.items():
            assert v == pytest.approx(np.average(count["per_query"][r][m], weights=w), rel=1e-12)
    assert count["weights"]["effective_n"] == pytest.approx(w.sum() ** 2 / (w**2).sum())
    # the gate weighs too: check's means are the weighted means
    p = run_harness("check", "--baseline", str(tmp_path / "plain"), "--current", str(tmp_path / "count"),
                    "--format", "json")  # fmt: skip
    assert p.returncode in (0, 1), p.stderr[-2000:]
    report = json.loads(p.stdout)
    row = report["results"]["bm25b"]["ndcg@10"]
    cur = np.array(count["per_query"]["bm25b"]["ndcg@10"])
    assert row["current"] == pytest.approx(np.average(cur, weights=w), rel=1e-12)
    assert any("traffic-weighted" in n for n in report["notes"])


def _all_figures(d: np.ndarray, w: np.ndarray) -> list[float]:
    """Every weighted figure of one set of per-query differences (two columns), flattened."""
    a, b = d[:, 0], d[:, 1]
    out = [W.weighted_mean(a, w), W.paired_mean(a - b, w), W.effective_n(w), W.weighted_sd(a, w),
           W.t_test_w(a, b, w), W.t_lower_bound_w(a - b, w) or 0.0]  # fmt: skip
    out += [x for ci in W.bootstrap_cis_w(d, w, n=200, seed=3) for x in ci]
    out += list(W.randomization_tests_w(d, w, n=300, seed=2))
    p = W.power_figures_w(a - b, w)
    out += [p["sd_diff"] or 0.0, p["mde"] or 0.0, float(p["n_for_observed"] or 0)]
    return out


@pytest.mark.extra  # statsmodels (the dev install's), not the core's
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 30),
    exponent=st.floats(-250, 250),
    spread=st.floats(0, 40),
)
def test_every_weighted_figure_is_the_same_at_any_scale_of_the_weights(seed, n, exponent, spread):
    """w and c*w (c from 1e-250 to 1e250) give the same figures, Kish's n is >= 1 for positive weights,
    and the mean is statsmodels' DescrStatsW mean of the unscaled weights (squares
    of 1e-200 underflowed to n_eff 0; sums near 1e308 overflowed)."""
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(seed)
    d = rng.normal(0.05, 0.2, size=(n, 2))
    w = np.exp(rng.uniform(0, spread, size=n))  # up to e^40 ~ 2e17 between the smallest and the largest
    c = 10.0**exponent
    base, scaled = _all_figures(d, w), _all_figures(d, w * c)
    assert scaled == pytest.approx(base, rel=1e-9, abs=1e-12)
    assert W.effective_n(w * c) >= 1.0
    assert W.weighted_mean(d[:, 0], w * c) == pytest.approx(DescrStatsW(d[:, 0], weights=w).mean, rel=1e-9)


def test_weights_at_the_ends_of_the_float_range() -> None:
    """Subnormal and near-maximal weights: Kish's n is the one of their ratios, never 0 or NaN."""
    assert W.effective_n(np.array([1e-320, 1e-320])) == pytest.approx(2.0)
    assert W.effective_n(np.array([1e308, 1e308, 0.0])) == pytest.approx(2.0)
    assert W.effective_n(np.array([5e-200, 1e-200, 3e-200, 1e-198])) == pytest.approx(109**2 / 10035)
    x = np.array([1.0, 0.0, 0.5])
    assert W.weighted_mean(x, np.array([1e308, 1e308, 1e308 / 2])) == pytest.approx(1.25 / 2.5)
