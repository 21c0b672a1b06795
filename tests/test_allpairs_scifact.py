"""All pairs on real differences: SciFact test (300 queries), five BM25 retrievers (settings and the
rank_bm25 backend: cheap to run, no model; the dense model is covered by
``benchmarks/allpairs_scifact.py``).

- ``harness power --all-pairs --format json``: ``tukey`` ``mse``, ``df``, every ``q`` and ``p`` equal a
  direct two-way ANOVA with numpy and ``scipy.stats.studentized_range`` to 1e-9;
- ``randomized`` p within 0.01 of an independent implementation run with 20,000 draws;
- the groups follow the compact-letter rule for every pair;
- ``swap_rate`` at each n within 0.03 of an independent simulation with the same number of draws.
"""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import studentized_range

from harness.api import benchmark
from harness.cli import main
from tests.conftest import shared
from tests.test_allpairs import check_rule, simulate_swaps

pytestmark = pytest.mark.slow

RETRIEVERS = {
    "bm25": {"type": "bm25"},
    "bm25_k3": {"type": "bm25", "k1": 3.0, "b": 0.9},
    "bm25_k12": {"type": "bm25", "k1": 1.2, "b": 0.75},
    "bm25_nostem": {"type": "bm25", "stemmer": None},
    "rank_bm25": {"type": "bm25", "backend": "rank_bm25"},
}


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("scifact-allpairs") / "res"
    res = benchmark(
        shared("scifact"),
        RETRIEVERS,
        metrics=["ndcg@10"],
        baseline="bm25",
        latency_queries=0,
        warmup_queries=0,
        out=out,
    )
    return out, res


@pytest.fixture(scope="module")
def figures(scifact, capsys_module=None):
    import contextlib
    import io

    out, _ = scifact
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["power", str(out), "--all-pairs", "--format", "json", "--sizes", "10,50,150"]) == 0
    return json.loads(buf.getvalue())["metrics"]["ndcg@10"]


def matrix(res) -> tuple[list[str], np.ndarray]:
    names = list(res.summary)
    return names, np.vstack([res.scores(r)["ndcg@10"] for r in names])


def test_tukey_equals_a_direct_two_way_anova(scifact, figures):
    _, res = scifact
    names, x = matrix(res)
    k, n = x.shape
    assert (k, n) == (5, 300)
    grand = x.mean()
    ss_total = ((x - grand) ** 2).sum()
    ss_sys = n * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_q = k * ((x.mean(axis=0) - grand) ** 2).sum()
    df = (k - 1) * (n - 1)
    mse = (ss_total - ss_sys - ss_q) / df
    assert figures["tukey"]["df"] == df and abs(figures["tukey"]["mse"] - mse) < 1e-9
    for got, (i, j) in zip(figures["tukey"]["pairs"], combinations(range(k), 2)):
        delta = x[i].mean() - x[j].mean()
        q = abs(delta) / math.sqrt(mse / n)
        assert (got["a"], got["b"]) == (names[i], names[j]) and abs(got["delta"] - delta) < 1e-12
        assert abs(got["q"] - q) < 1e-9 and abs(got["p"] - studentized_range.sf(q, k, df)) < 1e-9


def independent_randomized(x: np.ndarray, draws: int, seed: int) -> list[float]:
    """One draw at a time: every query's scores permuted by argsort of uniform keys."""
    rng = np.random.default_rng(seed)
    k, n = x.shape
    rows = np.arange(n)[:, None]
    xt = x.T
    best = np.empty(draws)
    for d in range(draws):
        means = xt[rows, rng.random((n, k)).argsort(axis=1)].mean(axis=0)
        best[d] = means.max() - means.min()
    means = x.mean(axis=1)
    return [float((best >= abs(means[i] - means[j]) - 1e-12).mean()) for i, j in combinations(range(k), 2)]


def test_randomized_within_001_of_an_independent_implementation(scifact, figures):
    _, res = scifact
    _, x = matrix(res)
    ref = independent_randomized(x, 20_000, seed=12345)
    got = [p["p"] for p in figures["randomized"]["pairs"]]
    assert figures["randomized"]["draws"] == 10_000
    assert max(abs(a - b) for a, b in zip(got, ref)) < 0.01


def test_groups_follow_the_rule(scifact, figures):
    _, res = scifact
    names, _ = matrix(res)
    separated = {frozenset((p["a"], p["b"])) for p in figures["randomized"]["pairs"] if p["p"] < 0.05}
    check_rule(names, figures["groups"], separated)
    assert figures["discriminative_power"]["randomized"] == pytest.approx(len(separated) / 10)


def test_swap_rate_within_003_of_an_independent_simulation(scifact, figures):
    _, res = scifact
    _, x = matrix(res)
    for point in figures["swap_rate"]:
        ref = simulate_swaps(x, point["n"], point["draws"], seed=99)
        assert point["rate"] == pytest.approx(ref, abs=0.03), point["n"]
