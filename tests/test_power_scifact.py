"""Power on real differences: SciFact test (300 queries), two BM25 settings (cheap to run, no model).

- the ``significance`` entry's ``mde`` and ``n_for_observed`` equal statsmodels' TTestPower (1e-6, and
  exactly once rounded up);
- sets drawn with replacement from the real nDCG@10 differences, centred and shifted to the mde, are
  rejected by the harness's own paired t-test in 0.80 +- 0.03 of 4,000 draws;
- ``harness check --non-inferiority 0.02 --format json``, current ``bm25`` with ``k1: 1.2`` against
  baseline ``bm25``: ``bound`` equals an independent Student-t bound to 1e-9 and the verdict follows it.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from harness.api import benchmark
from harness.cli import main
from harness.stats import power as pw
from tests.conftest import shared

pytestmark = pytest.mark.slow

METRICS = ["ndcg@10", "map@100"]


@pytest.fixture(scope="module")
def scifact_runs(tmp_path_factory):
    """Baseline bm25 (k1 0.9, b 0.4), a second setting (k1 3.0, b 0.9) beside it, and ``bm25`` with k1 1.2
    as a separate results folder, the way a nightly job would have changed one option."""
    root = tmp_path_factory.mktemp("scifact-power")
    data = shared("scifact")
    base = benchmark(
        data,
        {"bm25": {"type": "bm25"}, "bm25_k3": {"type": "bm25", "k1": 3.0, "b": 0.9}},
        metrics=METRICS,
        baseline="bm25",
        latency_queries=0,
        warmup_queries=0,
        out=root / "base",
    )
    current = benchmark(
        data,
        {"bm25": {"type": "bm25", "k1": 1.2}},
        metrics=METRICS,
        latency_queries=0,
        warmup_queries=0,
        out=root / "current",
    )
    return root, base, current


def test_mde_and_n_for_observed_equal_statsmodels(scifact_runs):
    _, base, _ = scifact_runs
    entry = base.significance["bm25_k3"]["ndcg@10"]
    d = base.scores("bm25_k3")["ndcg@10"] - base.scores("bm25")["ndcg@10"]
    assert d.size == 300 and entry.sd_diff == pytest.approx(d.std(ddof=1), abs=1e-12)
    sm_mde = entry.sd_diff * TTestPower().solve_power(nobs=300, alpha=0.05, power=0.8)
    assert abs(entry.mde - sm_mde) < 1e-6
    sm_n = TTestPower().solve_power(effect_size=abs(d.mean()) / entry.sd_diff, alpha=0.05, power=0.8)
    assert entry.n_for_observed == math.ceil(sm_n)


def test_simulated_rejection_rate_at_the_mde(scifact_runs):
    """The noncentral-t mde holds on the real shape of nDCG@10 differences (4,000 resampled sets)."""
    _, base, _ = scifact_runs
    d = base.scores("bm25_k3")["ndcg@10"] - base.scores("bm25")["ndcg@10"]
    rate = pw.simulate(d, base.significance["bm25_k3"]["ndcg@10"].mde, sets=4000, alpha=0.05, seed=0)
    assert rate == pytest.approx(0.80, abs=0.03)


def test_non_inferiority_bound_on_scifact(scifact_runs, capsys):
    root, base, current = scifact_runs
    argv = ["check", "--baseline", str(root / "base"), "--current", str(root / "current")]
    code = main([*argv, "--retrievers", "bm25", "--non-inferiority", "0.02", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["exit"] == code
    for m in METRICS:
        d = current.scores("bm25")[m] - base.scores("bm25")[m]
        independent = d.mean() - stats.t.ppf(0.95, d.size - 1) * np.std(d, ddof=1) / np.sqrt(d.size)
        e = out["results"]["bm25"][m]
        assert abs(e["bound"] - independent) < 1e-9
        assert e["verdict"] == ("ok" if independent > -0.02 else "inferior")
