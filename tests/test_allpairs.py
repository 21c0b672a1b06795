"""All pairs (harness.stats.allpairs, ``harness power --all-pairs``): the Tukey HSD against a two-way
ANOVA fitted by statsmodels, the randomized Tukey HSD against its exact permutation distribution, the
letter groups' rule on any separation graph and on hypothesis-drawn score matrices, the swap rate
against an independent simulation, the CLI's JSON, text and one-line errors, and the table's letters."""

from __future__ import annotations

import json
import math
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import studentized_range

from harness.cli import main
from harness.stats import allpairs as ap


def anova_mse(x: np.ndarray) -> tuple[float, int]:
    """Residual mean square of ``score ~ C(system) + C(query)`` fitted by statsmodels' OLS."""
    import pandas as pd
    import statsmodels.formula.api as smf

    k, n = x.shape
    frame = pd.DataFrame(
        {"score": x.ravel(), "system": np.repeat(np.arange(k), n).astype(str), "query": np.tile(np.arange(n), k)}
    )
    fit = smf.ols("score ~ C(system) + C(query)", data=frame.assign(query=frame["query"].astype(str))).fit()
    return float(fit.mse_resid), int(fit.df_resid)


def test_tukey_hand_computed_and_statsmodels():
    # 3 systems x 4 queries: row means 0.5, 0.6, 0.3; residuals by hand
    x = np.array([[0.2, 0.4, 0.6, 0.8], [0.5, 0.5, 0.7, 0.7], [0.0, 0.2, 0.4, 0.6]])
    col = x.mean(axis=0)
    r = x - x.mean(axis=1, keepdims=True) - col + x.mean()
    by_hand = float((r**2).sum() / 6)
    mse, df, pairs = ap.tukey_hsd(x, ["a", "b", "c"])
    sm_mse, sm_df = anova_mse(x)
    assert df == sm_df == 6 and mse == pytest.approx(by_hand, abs=1e-15) and mse == pytest.approx(sm_mse, abs=1e-12)
    ab = pairs[0]
    assert (ab.a, ab.b) == ("a", "b") and ab.delta == pytest.approx(-0.1)
    assert ab.q == pytest.approx(0.1 / math.sqrt(mse / 4), abs=1e-12)
    assert ab.p == pytest.approx(float(studentized_range.sf(ab.q, 3, 6)), abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 6), st.integers(3, 20), st.integers(0, 2**32 - 1))
def test_tukey_mse_equals_statsmodels(k, n, seed):
    x = np.random.default_rng(seed).random((k, n))
    mse, df, _ = ap.tukey_hsd(x, [str(i) for i in range(k)], p_values=False)
    sm_mse, sm_df = anova_mse(x)
    assert df == sm_df and mse == pytest.approx(sm_mse, rel=1e-9, abs=1e-12)


def exact_randomized_p(x: np.ndarray) -> list[float]:
    """Every one of the (k!)^n ways to permute each query's scores, each counted once."""
    k, n = x.shape
    perms = list(__import__("itertools").permutations(range(k)))
    ranges = []
    for choice in product(perms, repeat=n):
        means = np.array([sum(x[p[j], i] for i, p in enumerate(choice)) for j in range(k)]) / n
        ranges.append(means.max() - means.min())
    ranges = np.array(ranges)
    means = x.mean(axis=1)
    return [float((ranges >= abs(means[a] - means[b]) - 1e-12).mean()) for a, b in combinations(range(k), 2)]


def test_randomized_tukey_against_the_exact_permutation_distribution():
    x = np.array([[0.9, 0.7, 0.8, 0.6], [0.5, 0.6, 0.4, 0.6], [0.1, 0.3, 0.2, 0.35]])  # 6^4 = 1296 arrangements
    exact = exact_randomized_p(x)
    mine = ap.randomized_tukey(x, 20_000, seed=1)
    assert max(abs(a - b) for a, b in zip(mine, exact)) < 0.01
    # more systems than the permutation table covers: the shuffling path draws the same distribution
    y = np.vstack([x, x[::-1] * 0.9, x * 0.5 + 0.1, x[[1, 0, 2]] + 0.05, x[[2, 1, 0]], x * 0.2])[:8]
    a, b = ap.max_range_null(y, 4000, 0), np.sort(ap.max_range_null(y, 4000, 1))
    assert abs(np.median(a) - np.median(b)) < 0.02


def test_identical_and_constant_systems_are_one_group_never_nan():
    x = np.tile(np.array([0.1, 0.5, 0.9, 0.3]), (4, 1))
    r = ap.all_pairs(x, ["a", "b", "c", "d"], alpha=0.05, draws=500, seed=0, swap_draws=50)
    assert all(p.p == 1.0 and p.p_randomized == 1.0 and p.q == 0.0 for p in r.pairs)
    assert r.groups == [["a", "b", "c", "d"]] and r.discriminative_power == {"tukey": 0.0, "randomized": 0.0}
    # every draw ties every pair on the first set: no order to keep or swap, the rate is undefined
    assert all(s.rate is None and s.first_tie_share == 1.0 for s in r.swap) and r.n_for_5pct is None
    json.dumps(r.to_json(), allow_nan=False)
    # perfectly additive: every query moves every system alike, mse 0, the differences are certain
    y = np.array([[0.1, 0.5, 0.9], [0.2, 0.6, 1.0], [0.4, 0.8, 1.2]])
    r = ap.all_pairs(y, ["a", "b", "c"], alpha=0.05, draws=500, seed=0)
    assert r.mse == pytest.approx(0.0, abs=1e-20) and all(p.q is None and p.p == 0.0 for p in r.pairs)
    json.dumps(r.to_json(), allow_nan=False)


# ---------------------------------------------------------------------- groups
def check_rule(names, groups, separated) -> None:
    """Every two names sharing a group are not separated; every two not separated share a group."""
    assert all(len(set(g)) == len(g) and g for g in groups)
    assert {n for g in groups for n in g} == set(names)
    for a, b in combinations(names, 2):
        share = any(a in g and b in g for g in groups)
        assert share == (frozenset((a, b)) not in separated), (a, b, groups)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 9).flatmap(lambda k: st.tuples(st.just(k), st.lists(st.booleans(), min_size=k * k, max_size=k * k)))
)
def test_letter_rule_on_any_separation_graph(drawn):
    k, bits = drawn
    names = [f"r{i}" for i in range(k)]
    separated = {frozenset((names[i], names[j])) for i, j in combinations(range(k), 2) if bits[i * k + j]}
    means = [float(b) for b in bits[:k]] + [0.0] * (k - len(bits[:k]))
    groups = ap.letter_groups(names, means, separated)
    check_rule(names, groups, separated)
    lets = ap.letters(names, groups)
    assert all(lets[n] for n in names)


def matrices():
    """Score matrices with ties (few distinct values), identical systems, one query dominating."""

    @st.composite
    def matrix(draw):
        k = draw(st.integers(3, 6))
        n = draw(st.integers(4, 14))
        values = draw(st.sampled_from([[0.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.25, 0.5, 0.75, 1.0]]))
        x = np.array(draw(st.lists(st.sampled_from(values), min_size=k * n, max_size=k * n))).reshape(k, n)
        if draw(st.booleans()):  # an identical system
            x[draw(st.integers(1, k - 1))] = x[0]
        if draw(st.booleans()):  # one query dominating
            x[:, 0] = np.linspace(0, 100, k)[draw(st.permutations(list(range(k))))]
        if draw(st.booleans()):  # a clear leader
            x[draw(st.integers(0, k - 1))] += 1.0
        return x

    return matrix()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matrices(), st.sampled_from(["randomized", "tukey"]))
def test_groups_follow_the_rule_on_score_matrices(x, source):
    names = [f"s{i}" for i in range(x.shape[0])]
    r = ap.all_pairs(x, names, alpha=0.05, draws=300, seed=0, groups_from=source)
    separated = {frozenset((p.a, p.b)) for p in r.pairs if (p.p_randomized if source == "randomized" else p.p) < 0.05}
    check_rule(names, r.groups, separated)
    assert all(not math.isnan(p.p) and not math.isnan(p.p_randomized) for p in r.pairs)
    for p in r.pairs:  # identical rows: p 1, never apart
        if np.array_equal(x[names.index(p.a)], x[names.index(p.b)]):
            assert p.p == 1.0 and p.p_randomized == 1.0
    json.dumps(r.to_json(), allow_nan=False)


def test_letters_order_best_first():
    names = ["low", "mid", "top"]
    groups = ap.letter_groups(names, [0.1, 0.5, 0.9], {frozenset(("low", "top"))})
    assert groups == [["top", "mid"], ["mid", "low"]]
    assert ap.letters(names, groups) == {"low": "b", "mid": "ab", "top": "a"}
    assert ap.codes(3) == ["a", "b", "c"] and ap.codes(26)[-1] == "z"
    assert ap.codes(28)[:2] == ["aa", "ab"] and ap.codes(28)[-1] == "bb" and len(ap.codes(677)[-1]) == 3


# ---------------------------------------------------------------------- swap rate
def simulate_swaps(x: np.ndarray, n: int, draws: int, seed: int) -> float:
    """One draw at a time: two disjoint sets by rng.choice, every pair's sign on each; a pair tied on
    the first set left out, one tied on the second only half a swap."""
    rng = np.random.default_rng(seed)
    k, total = x.shape
    swaps = cells = 0.0
    for _ in range(draws):
        pick = rng.choice(total, 2 * n, replace=False)
        a, b = x[:, pick[:n]].mean(axis=1), x[:, pick[n:]].mean(axis=1)
        for i, j in combinations(range(k), 2):
            da, db = a[i] - a[j], b[i] - b[j]
            if abs(da) <= 1e-12:
                continue
            swaps += 0.5 if abs(db) <= 1e-12 else float(da * db < 0)
            cells += 1
    return swaps / cells


def test_swap_rate_against_an_independent_simulation():
    rng = np.random.default_rng(7)
    x = np.clip(rng.random((4, 120)) * 0.6 + np.array([0.0, 0.02, 0.05, 0.15])[:, None], 0, 1)
    x[:, :30] = x[0, :30]  # ties on a quarter of the queries
    points = ap.swap_rates(x, [5, 20, 60], 1000, seed=3)
    for p in points:
        assert p.rate == pytest.approx(simulate_swaps(x, p.n, 1000, seed=11), abs=0.03)
        assert sum(b["count"] for b in p.bins) + p.first_ties == 1000 * 6 == p.cells
    assert points[0].rate > points[-1].rate  # larger sets swap less
    with pytest.raises(ValueError):
        ap.swap_rates(x, [61], 10, 0)
    assert ap.default_sizes(300) == [5, 10, 25, 50, 100, 150] and ap.default_sizes(93) == [5, 10, 25, 46]


# ---------------------------------------------------------------------- the command and the table
@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.test_report import make_results

    out = tmp_path_factory.mktemp("allpairs") / "res"
    make_results(with_failure=False).save(out)
    return out


def test_cli_json_matches_the_statistics(folder, capsys):
    from harness.results import Results

    assert main(["power", str(folder), "--all-pairs", "--draws", "2000", "--format", "json", "--sizes", "3,5"]) == 0
    out = json.loads(capsys.readouterr().out)
    results = Results.load(folder)
    names = [r for r in results.summary]
    m = out["metrics"]["ndcg@10"]
    assert set(m) >= {"tukey", "randomized", "groups", "discriminative_power", "swap_rate", "n_for_5pct"}
    x = np.vstack([results.scores(r)["ndcg@10"] for r in names])
    mse, df, pairs = ap.tukey_hsd(x, names)
    assert m["tukey"]["mse"] == pytest.approx(mse, abs=1e-15) and m["tukey"]["df"] == df
    assert [(p["a"], p["b"]) for p in m["tukey"]["pairs"]] == [(p.a, p.b) for p in pairs]
    assert m["randomized"]["draws"] == 2000 and [s["n"] for s in m["swap_rate"]] == [3, 5]
    assert set(m["swap_rate"][0]) >= {"n", "draws", "rate", "bins"}
    assert set(m["discriminative_power"]) == {"tukey", "randomized"}
    separated = {frozenset((p["a"], p["b"])) for p in m["randomized"]["pairs"] if p["p"] < 0.05}
    check_rule(names, m["groups"], separated)


def test_cli_text(folder, capsys):
    assert main(["power", str(folder), "--all-pairs", "--draws", "500", "--metrics", "ndcg@10"]) == 0
    text = capsys.readouterr().out
    assert "ndcg@10: with 30 queries this set separates" in text and "randomized Tukey HSD" in text
    assert "swap rate" in text and "Discriminative power" in text and "mrr@10" not in text


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--draws", "0"], "--draws"),
        (["--metrics", "nope@3"], "nope@3"),
        (["--swap-draws", "-1"], "--swap-draws"),
        (["--sizes", "5,x"], "--sizes"),
        (["--sizes", "16"], "above half the queries"),
        (["--delta", "0.1"], "--delta"),
    ],
)
def test_cli_bad_input_is_one_line(folder, capsys, argv, needle):
    assert main(["power", str(folder), "--all-pairs", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_cli_needs_three_retrievers_and_all_pairs(tmp_path, capsys):
    from tests.test_report import make_results

    res = make_results(with_failure=False)
    for name in ("better", "worse"):
        res.summary.pop(name)
        res.per_query.pop(name)
        res.significance.pop(name, None)
    res.save(tmp_path / "two")
    assert main(["power", str(tmp_path / "two"), "--all-pairs"]) == 2
    err = capsys.readouterr().err
    assert "at least 3" in err and "harness power DIR" in err and len(err.strip().splitlines()) == 1
    assert main(["power", str(tmp_path / "two"), "--draws", "10"]) == 2
    assert "--all-pairs" in capsys.readouterr().err


def test_table_letters_and_sentence(folder):
    from harness.results import Results
    from harness.results.formats import terminal_text
    from harness.results.html_table import to_html
    from harness.results.table import build_table, to_markdown

    results = Results.load(folder)
    table = build_table(results)
    f = table.groups["ndcg@10"]
    cmd = ap.all_pairs(
        np.vstack([results.scores(r)["ndcg@10"] for r in f.names]), f.names, alpha=0.05, draws=f.draws, seed=0
    )
    assert [p.p_randomized for p in f.pairs] == [p.p_randomized for p in cmd.pairs]  # the command's p-values
    md = to_markdown(table)
    sentence = f"All pairs on ndcg@10: {ap.sentence(f)}."
    term = terminal_text(results, 200)
    assert sentence in md and " ".join(sentence.split()) in " ".join(term.split())
    for row in table.ok_rows:
        cell = row.metrics["ndcg@10"]
        assert cell.letters == f.letters[row.name]
        line = next(x for x in md.splitlines() if x.startswith(f"| {row.name}"))
        assert (
            f"{cell.value:.4f}" in line and f"{cell.marker} {cell.letters} [" in line
        )  # beside the mean, before the CI
        assert f"{cell.marker} {cell.letters}" in next(x for x in term.splitlines() if f" {row.name}" in x)
    html = to_html(table)
    assert html.count('class="grp"') == len(table.ok_rows) * 2


def test_two_retrievers_keep_the_table_as_it_was(tmp_path):
    from harness.results.table import build_table, to_markdown
    from tests.test_report import make_results

    res = make_results(with_failure=False)
    for name in ("better", "worse"):
        res.summary.pop(name)
        res.per_query.pop(name)
        res.significance.pop(name, None)
    table = build_table(res)
    assert table.groups == {} and "All pairs" not in to_markdown(table) and 'class="grp"' not in to_markdown(table)


def test_cli_suite_has_one_section_per_dataset(folder, tmp_path, capsys):
    from harness.results import Results
    from harness.suite.aggregate import aggregate
    from harness.suite.run import write_suite

    res = Results.load(folder)
    for d in ("one", "two"):
        res.save(tmp_path / "suite" / d)
    write_suite(aggregate({d: Results.load(tmp_path / "suite" / d) for d in ("one", "two")}), tmp_path / "suite")
    argv = ["power", str(tmp_path / "suite"), "--all-pairs", "--draws", "300", "--swap-draws", "20", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["datasets"]) == ["one", "two"]
    one, two = (out["datasets"][d]["metrics"]["ndcg@10"] for d in ("one", "two"))
    assert one["groups"] == two["groups"] and one["tukey"] == two["tukey"]
