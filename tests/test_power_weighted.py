"""Traffic weights in ``harness power DIR``: its planning rows and ``--all-pairs``
(Tukey HSD, randomized Tukey HSD, letter groups, swap rate) use the run table's weighted estimators
(Kish's effective n), checked against statsmodels' ``DescrStatsW``, ``TTestPower`` and ``WLS`` and
against direct enumerations; all-equal weights print today's unweighted tables byte for byte."""

from __future__ import annotations

import json
import math
from itertools import combinations, permutations, product
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import studentized_range
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import DescrStatsW

from harness.cli import main
from harness.engine import score
from harness.results import Results
from harness.results import groups as G
from harness.run import Run
from harness.stats import allpairs as ap
from harness.stats import weighted as W
from harness.stats.planning import plan

QIDS = [f"q{i:02d}" for i in range(40)]
QRELS = {q: {f"r{q}a": 2, f"r{q}b": 1, "x0": 0} for q in QIDS}
#: production counts: a skewed spread (Kish n about 22 of 40)
COUNTS = {q: float(1 + (i * 7) % 13) ** 2 for i, q in enumerate(QIDS)}


def _kish(d: np.ndarray, w: np.ndarray) -> DescrStatsW:
    """statsmodels' weighted statistics with the weights scaled to sum to Kish's n_eff: its ddof=1
    variance is then s_w^2 and its t-test has n_eff - 1 degrees of freedom (harness.stats.weighted)."""
    n_eff = w.sum() ** 2 / (w**2).sum()
    return DescrStatsW(d, weights=w * n_eff / w.sum())


# --------------------------------------------------------------------------- planning rows
def test_a_weighted_plan_row_is_statsmodels_kish_t_test_and_ttestpower():
    rng = np.random.default_rng(3)
    n = 60
    d = rng.normal(0.04, 0.2, size=n)
    w = rng.integers(1, 80, size=n).astype(float) ** 1.5
    d[7] = np.nan  # a query without a score leaves the pair with its weight
    ok = ~np.isnan(d)
    dd, ww = d[ok], w[ok]
    n_eff = ww.sum() ** 2 / (ww**2).sum()
    deff = ok.sum() / n_eff
    (row,) = plan({"a": {"m": np.zeros(n)}, "b": {"m": d}}, "a", ["m"], alpha=0.05, weights=w)
    k = _kish(dd, ww)
    assert row.delta == pytest.approx(DescrStatsW(dd, weights=ww).mean, rel=1e-12)
    assert row.sd_diff == pytest.approx(k.std_ddof(1), rel=1e-12)
    assert row.n == ok.sum() and row.n_eff == pytest.approx(n_eff) and row.design_effect == pytest.approx(deff)
    power = TTestPower()
    assert row.mde == pytest.approx(row.sd_diff * power.solve_power(None, nobs=n_eff, alpha=0.05, power=0.8), rel=1e-6)
    need = power.solve_power(abs(row.delta) / row.sd_diff, nobs=None, alpha=0.05, power=0.8)
    assert row.effective_needed == pytest.approx(need, rel=1e-6)
    assert row.queries_needed == math.ceil(need * deff)
    # the test behind the figures is the run table's weighted t-test: statsmodels' at Kish's n
    assert W.t_test_w(dd, np.zeros(dd.size), ww) == pytest.approx(k.ttest_mean(0.0)[1], rel=1e-10)
    # --queries N: N real queries at the same spread of weights are N / deff effective ones
    (at,) = plan({"a": {"m": np.zeros(n)}, "b": {"m": d}}, "a", ["m"], alpha=0.05, weights=w, queries=200)
    assert at.mde == pytest.approx(row.sd_diff * power.solve_power(None, nobs=200 / deff, alpha=0.05, power=0.8))
    # equal weights: the unweighted row, field for field
    ones = plan({"a": {"m": np.zeros(n)}, "b": {"m": d}}, "a", ["m"], alpha=0.05, weights=np.full(n, 7.0))
    assert ones == plan({"a": {"m": np.zeros(n)}, "b": {"m": d}}, "a", ["m"], alpha=0.05)
    assert "n_eff" not in ones[0].to_json()


def test_the_weighted_simulation_reaches_the_power_it_was_sized_for():
    """Resampled weighted sets of n queries, tested with the weighted t-test, reject about 80% of the
    time at the mde: the design effect turned n real queries into the right effective n."""
    rng = np.random.default_rng(11)
    n = 80
    d = rng.normal(0.0, 0.25, size=n)
    w = rng.pareto(1.5, size=n) + 0.2
    (row,) = plan({"a": {"m": np.zeros(n)}, "b": {"m": d}}, "a", ["m"], alpha=0.05, weights=w, simulate=3000)
    assert row.design_effect > 1.5 and abs(row.simulated_power - 0.8) < 0.06


# --------------------------------------------------------------------------- all pairs
def _wls(x: np.ndarray, w: np.ndarray):
    """statsmodels' weighted least squares of score ~ C(system) + C(query), query j weighing w_j."""
    import pandas as pd
    import statsmodels.formula.api as smf

    k, n = x.shape
    frame = pd.DataFrame({"score": x.ravel(), "system": np.repeat(np.arange(k), n).astype(str),
                          "query": np.tile(np.arange(n), k).astype(str)})  # fmt: skip
    return smf.wls("score ~ C(system) + C(query)", data=frame, weights=np.tile(w, k)).fit()


def test_weighted_tukey_hsd_is_the_wls_two_way_fit():
    rng = np.random.default_rng(5)
    k, n = 4, 18
    x = np.clip(rng.random((k, n)) * 0.7 + np.array([0.0, 0.05, 0.1, 0.2])[:, None], 0, 1)
    w = rng.integers(1, 30, size=n).astype(float)
    fit = _wls(x, w)
    names = list("abcd")
    mse, df, pairs = ap.tukey_hsd(x, names, weights=w)
    n_eff = w.sum() ** 2 / (w**2).sum()
    r = np.asarray(fit.resid).reshape(k, n)
    assert mse == pytest.approx(float(w @ (r * r).sum(axis=0)) / w.sum() * n_eff / (n_eff - 1) / (k - 1), rel=1e-9)
    assert df == pytest.approx((k - 1) * (n_eff - 1))
    effect = {0: 0.0, **{i: fit.params[f"C(system)[T.{i}]"] for i in range(1, k)}}
    for p, (i, j) in zip(pairs, combinations(range(k), 2)):
        assert p.delta == pytest.approx(effect[i] - effect[j], abs=1e-12)  # WLS's system effects
        assert p.delta == pytest.approx(np.average(x[i], weights=w) - np.average(x[j], weights=w), abs=1e-12)
        assert p.q == pytest.approx(abs(p.delta) / math.sqrt(mse / n_eff), rel=1e-12)
        assert p.p == pytest.approx(float(studentized_range.sf(p.q, k, df)), rel=1e-9)
    # two systems: q / sqrt(2) is the weighted paired t of the run table, and Tukey's p is its p
    (pair,) = ap.tukey_hsd(x[:2], ["a", "b"], weights=w)[2]
    kish = _kish(x[0] - x[1], w)
    assert pair.q / math.sqrt(2) == pytest.approx(abs(kish.ttest_mean(0.0)[0]), rel=1e-10)
    assert pair.p == pytest.approx(kish.ttest_mean(0.0)[1], rel=1e-5)
    # equal weights are no weights, bit for bit
    assert ap.tukey_hsd(x, names, weights=np.full(n, 3.0)) == ap.tukey_hsd(x, names)


def test_weighted_randomized_tukey_against_the_exact_permutation_distribution():
    """Every one of the (3!)^4 arrangements, each query's weight going with its scores' column."""
    x = np.array([[0.9, 0.7, 0.8, 0.6], [0.5, 0.6, 0.4, 0.6], [0.1, 0.3, 0.2, 0.35]])
    w = np.array([1.0, 6.0, 2.0, 0.5])
    k, n = x.shape
    ranges = []
    for choice in product(list(permutations(range(k))), repeat=n):
        means = np.array([sum(w[i] * x[p[j], i] for i, p in enumerate(choice)) for j in range(k)]) / w.sum()
        ranges.append(means.max() - means.min())
    ranges = np.array(ranges)
    m = x @ w / w.sum()
    exact = [float((ranges >= abs(m[a] - m[b]) - 1e-12).mean()) for a, b in combinations(range(k), 2)]
    mine = ap.randomized_tukey(x, 20_000, seed=1, weights=w)
    assert max(abs(a - b) for a, b in zip(mine, exact)) < 0.01
    assert exact != pytest.approx(ap.randomized_tukey(x, 20_000, seed=1), abs=0.01)  # the weights matter here


def test_weighted_swap_rate_against_an_independent_simulation():
    rng = np.random.default_rng(7)
    x = np.clip(rng.random((4, 120)) * 0.6 + np.array([0.0, 0.02, 0.05, 0.15])[:, None], 0, 1)
    w = rng.pareto(1.2, size=120) + 0.1

    def simulate(n: int, draws: int, seed: int) -> float:
        r = np.random.default_rng(seed)
        swaps = cells = 0.0
        for _ in range(draws):
            pick = r.choice(120, 2 * n, replace=False)
            a = [np.average(x[s, pick[:n]], weights=w[pick[:n]]) for s in range(4)]
            b = [np.average(x[s, pick[n:]], weights=w[pick[n:]]) for s in range(4)]
            for i, j in combinations(range(4), 2):
                da, db = a[i] - a[j], b[i] - b[j]
                if abs(da) > 1e-12:
                    swaps += 0.5 if abs(db) <= 1e-12 else float(da * db < 0)
                    cells += 1
        return swaps / cells

    points = ap.swap_rates(x, [5, 20, 60], 1000, seed=3, weights=w)
    for p in points:
        assert p.rate == pytest.approx(simulate(p.n, 1000, seed=11), abs=0.03)
    assert ap.swap_rates(x, [5, 20], 300, seed=3, weights=np.ones(120)) == ap.swap_rates(x, [5, 20], 300, seed=3)


# --------------------------------------------------------------------------- the command
def _run(rng: np.random.Generator, name: str, worst: int) -> Run:
    rankings = {}
    for q in QIDS:
        docs = [f"x{i}" for i in range(8)]
        docs.insert(int(rng.integers(0, worst)), f"r{q}a")
        rankings[q] = [(d, float(len(docs) - i)) for i, d in enumerate(docs)]
    return Run.from_lists(rankings, name=name)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """The same four runs scored three ways: unweighted, weighted by an all-ones field, by counts."""
    rng = np.random.default_rng(0)
    runs = {n: _run(rng, n, worst) for n, worst in (("bm25", 4), ("better", 2), ("worse", 8), ("mid", 5))}
    root = tmp_path_factory.mktemp("weighted")
    out = {}
    for label, weights in (("plain", None), ("ones", dict.fromkeys(QIDS, 1.0)), ("count", COUNTS)):
        res = score(runs, QRELS, ["ndcg@10", "mrr@10"], baseline="bm25", seed=0,
                    stats={"permutations": 500, "bootstrap": 200}, weights=weights, weights_field=label)  # fmt: skip
        res.save(root / label)
        out[label] = root / label
    return out


def _power(capsys, folder: Path, *args: str) -> str:
    assert main(["power", str(folder), *args]) == 0
    return capsys.readouterr().out


ARGS = {
    "table": ["--simulate", "300"],
    "table-json": ["--format", "json", "--delta", "0.05", "--queries", "60"],
    "pairs": ["--all-pairs", "--draws", "1000", "--swap-draws", "100"],
    "pairs-json": ["--all-pairs", "--draws", "1000", "--swap-draws", "100", "--format", "json"],
}


@pytest.mark.parametrize("kind", ARGS)
def test_equal_weights_print_the_unweighted_tables_byte_for_byte(folders, capsys, kind):
    plain = _power(capsys, folders["plain"], *ARGS[kind])
    ones = _power(capsys, folders["ones"], *ARGS[kind]).replace(str(folders["ones"]), str(folders["plain"]))
    assert ones == plain and "traffic-weighted" not in ones and '"weights"' not in ones


def test_a_weighted_folders_planning_table_is_weighted_and_says_so(folders, capsys):
    res = Results.load(folders["count"])
    w = np.array(res.weights.values)
    out = json.loads(_power(capsys, folders["count"], "--format", "json"))["results"]
    assert out["weights"]["field"] == "count"
    assert out["weights"]["effective_n"] == pytest.approx(res.weights.effective_n)
    for row in out["rows"]:
        d = res.scores(row["retriever"])[row["metric"]] - res.scores("bm25")[row["metric"]]
        # the run table's weighted delta, sd and Kish n
        assert row["delta"] == pytest.approx(res.significance[row["retriever"]][row["metric"]].delta, rel=1e-12)
        assert row["sd_diff"] == pytest.approx(W.weighted_sd(d, w), rel=1e-12)
        assert row["n_eff"] == pytest.approx(W.effective_n(w)) and row["n"] == len(QIDS)
        assert row["mde"] == res.significance[row["retriever"]][row["metric"]].mde  # the run table's, exactly
        # the queries a difference needs: real queries at this spread, in the run table and here alike
        assert row["queries_needed"] == res.significance[row["retriever"]][row["metric"]].n_for_observed
    text = _power(capsys, folders["count"])
    lines = [ln for ln in text.splitlines() if ln.startswith("traffic-weighted:")]
    assert len(lines) == 1 and "'count'" in lines[0] and "Kish effective n" in lines[0]


def test_a_weighted_folders_all_pairs_and_letters_are_weighted(folders, capsys):
    res = Results.load(folders["count"])
    out = json.loads(_power(capsys, folders["count"], *ARGS["pairs-json"]))
    assert out["weights"]["field"] == "count"
    names = [r for r in res.summary]
    for m, figures in out["metrics"].items():
        # the means the letters are drawn for are the run table's weighted means
        for r in names:
            assert figures["means"][r] == pytest.approx(res.summary[r][m], rel=1e-12)
        x = np.vstack([res.scores(r)[m] for r in names])
        mse, df, _ = ap.tukey_hsd(x, names, weights=np.array(res.weights.values))
        assert figures["tukey"]["mse"] == pytest.approx(mse) and figures["tukey"]["df"] == pytest.approx(df)
        assert figures["effective_n"] == pytest.approx(res.weights.effective_n)
    text = _power(capsys, folders["count"], *ARGS["pairs"])
    assert sum(ln.startswith("traffic-weighted:") for ln in text.splitlines()) == 1
    # the table's letters beside the weighted means: the same weighted test
    figures = G.table_groups(res, names, ["ndcg@10"], 0.05)["ndcg@10"]
    assert figures.means == pytest.approx([res.summary[r]["ndcg@10"] for r in names], rel=1e-12)
    assert figures.effective_n == pytest.approx(res.weights.effective_n)
