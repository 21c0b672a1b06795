"""The run table's cost columns mean one thing each: every retriever's index time is in the table,
and dense's p50 and qps both time search, with query encoding in its own column."""

from __future__ import annotations

import time

import pytest

from harness.api import benchmark
from harness.results.table import build_table, to_markdown


class Slow:
    """A team's python retriever: index() takes a measurable while; no cost figures of its own."""

    def index(self, corpus):
        self.ids = [d.id for d in corpus]
        time.sleep(0.2)

    def search(self, queries, k):
        return {q.id: [(d, 1.0 / (i + 1)) for i, d in enumerate(self.ids[:k])] for q in queries}


def test_a_python_retrievers_index_time_is_in_the_table_beside_a_split_one() -> None:
    res = benchmark("demo", {"bm25": {"type": "bm25"}, "mine": Slow()}, depth=10, latency_queries=5)
    table = build_table(res)
    # bm25 splits its index time into build seconds (it embeds nothing: no encode seconds)
    assert "index_seconds" in table.efficiency and "build_seconds" in table.efficiency
    rows = {r.name: r for r in table.rows}
    assert rows["mine"].efficiency["index_seconds"].value >= 0.2
    md = to_markdown(table)
    assert "index s" in md and "index() call of every retriever" in md


@pytest.mark.slow
def test_dense_p50_and_qps_time_the_same_path() -> None:
    res = benchmark("demo", {"dense": {"type": "dense"}}, depth=10, latency_queries=20)
    eff = res.efficiency["dense"]
    assert eff.get("query_encode_ms") is None or eff["query_encode_ms"] > 0
    # search alone on both sides. Before, the batched call also encoded every query (cold) while the
    # single-query calls read the memo: qps 40.9 beside p50 0.515 ms on SciFact, a ratio of 0.02.
    # Timing noise on a loaded machine moves the ratio by a few x either way, never by 50x.
    ratio = eff["qps"] / (1000 / eff["latency_ms_p50"])
    assert 0.1 < ratio < 20, eff
    md = to_markdown(build_table(res))
    assert "q-enc ms" in md or eff.get("query_encode_ms") is None
    assert "Both time search alone" in md
