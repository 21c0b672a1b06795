"""harness.stats.allpairs's swap rate on real differences (slow): SciFact test (300 queries), four BM25
variants run by ``harness run``, ``harness power --all-pairs --format json`` in a child process. For every
metric ``n_for_5pct`` is null or an n from which every larger n of the grid has a rate under 5% (the
ties of hit_rate@1 no longer make five questions look enough), and the report page's swap-rate chart
carries the JSON's rates and its sentence."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import run_harness, shared

pytestmark = pytest.mark.slow

CONFIG = """metrics: [ndcg@10, hit_rate@1, mrr@10, recall@100]
depth: 100
latency_queries: 0
warmup_queries: 0
retrievers:
  bm25: {type: bm25}
  bm25_k3: {type: bm25, k1: 3.0, b: 0.9}
  bm25_nostem: {type: bm25, stemmer: null}
  rank_bm25: {type: bm25, backend: rank_bm25}
"""


def test_n_for_5pct_and_the_page_on_scifact(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG, encoding="utf-8")
    r = run_harness("run", "--config", "c.yaml", "--dataset", str(shared("scifact")), "--out", "res", "--no-progress",
                    cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    r = run_harness("power", "res", "--all-pairs", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    metrics = json.loads(r.stdout)["metrics"]
    assert set(metrics) == {"ndcg@10", "hit_rate@1", "mrr@10", "recall@100"}
    for m, f in metrics.items():
        points, n5 = f["swap_rate"], f["n_for_5pct"]
        assert [p["n"] for p in points] == [5, 10, 25, 50, 100, 150]
        assert n5 is None or all(p["rate"] is not None and p["rate"] < 0.05 for p in points if p["n"] >= n5), m
    page = (tmp_path / "res" / "report.html").read_text(encoding="utf-8")
    metric = re.search(r"Swap rate on ([^:]+):", page).group(1)
    drawn = {int(n): float(v) for n, v in re.findall(r'<circle class="pt" data-n="(\d+)" data-rate="([0-9.]+)"', page)}
    f = metrics[metric]
    assert drawn == {p["n"]: pytest.approx(p["rate"], abs=5e-5) for p in f["swap_rate"] if p["rate"] is not None}
    n5 = f["n_for_5pct"]
    assert (f"Under 5% from n = {n5} on" if n5 is not None else "Not under 5% at n = 150") in page
