"""The runner through the Python API: results shape, failures isolated, efficiency recorded."""

from __future__ import annotations

import math

import pytest

from harness.api import benchmark
from harness.model import Query


class KeywordOverlap:
    """A team's retriever: imports nothing from the harness."""

    def index(self, corpus):
        self.docs = [(d.id, set((d.title + " " + d.text).lower().split())) for d in corpus]

    def search(self, queries, k):
        out = {}
        for q in queries:
            terms = set(q.text.lower().split())
            scored = [(doc_id, float(len(terms & words))) for doc_id, words in self.docs]
            out[q.id] = sorted((s for s in scored if s[1] > 0), key=lambda x: -x[1])[:k]
        return out


class Crashes:
    def index(self, corpus):
        pass

    def search(self, queries, k):
        raise RuntimeError("model server on fire")


class ReturnsGarbage:
    def index(self, corpus):
        pass

    def search(self, queries, k):
        return {queries[0].id: [("not-a-doc", 1.0)]}


def test_results_have_every_section(tiny_dataset):
    res = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "overlap": KeywordOverlap()},
        metrics=["ndcg@10", "mrr"],
        baseline="bm25",
        latency_queries=3,
        warmup_queries=1,
        show_progress=False,
    )
    assert set(res.summary) == {"bm25", "overlap"}
    assert set(res.summary["bm25"]) == {"ndcg@10", "mrr"}
    assert set(res.query_ids) == {"q1", "q2", "q3"}
    assert set(res.query_scores("overlap")) == {"q1", "q2", "q3"}
    for name in ("bm25", "overlap"):
        eff = res.efficiency[name]
        for key in ("index_seconds", "latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "qps", "peak_rss_mb"):
            assert eff[key] is not None and math.isfinite(eff[key]), (name, key)
    assert res.manifest["dataset"]["fingerprint"] == tiny_dataset.fingerprint
    assert res.manifest["seed"] == 0 and res.manifest["versions"]["numpy"]
    assert res.counts["bm25"]["queries"] == 3
    mean = sum(v["mrr"] for v in res.query_scores("overlap").values()) / 3
    assert res.summary["overlap"]["mrr"] == pytest.approx(mean, abs=0)


def test_failing_retriever_is_isolated(tiny_dataset):
    res = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "boom": Crashes(), "junk": ReturnsGarbage()},
        metrics=["ndcg@10"],
        latency_queries=2,
        warmup_queries=0,
        show_progress=False,
    )
    assert "bm25" in res.summary
    assert "model server on fire" in res.failures["boom"]
    assert "unknown doc id 'not-a-doc'" in res.failures["junk"]
    assert "boom" not in res.summary


def test_timeout_marks_retriever_failed(tiny_dataset):
    import time

    class Hangs(KeywordOverlap):
        def search(self, queries, k):
            time.sleep(30)

    res = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "slow": Hangs()},
        metrics=["ndcg@10"],
        timeout_s=5,
        latency_queries=1,
        warmup_queries=0,
        show_progress=False,
    )
    assert "did not finish within 5 s" in res.failures["slow"]
    assert "bm25" in res.summary


def test_queries_are_batched_and_latency_is_single_query(tiny_dataset):
    seen: list[int] = []

    class Spy(KeywordOverlap):
        def search(self, queries, k):
            seen.append(len(queries))
            return super().search(queries, k)

    benchmark(tiny_dataset, {"spy": Spy()}, metrics=["mrr"], latency_queries=2, warmup_queries=1, show_progress=False)
    # warm-up, the batched run (repeated for a stable qps while cheap), two timed single-query calls
    assert seen[:2] == [1, 3] and seen[-2:] == [1, 1]
    assert set(seen[2:-2]) <= {3} and len(seen) <= 2 + 4 + 2


def test_query_objects_reach_the_retriever(tiny_dataset):
    got: list[object] = []

    class Spy(KeywordOverlap):
        def search(self, queries, k):
            got.extend(queries)
            return super().search(queries, k)

    benchmark(tiny_dataset, {"spy": Spy()}, metrics=["mrr"], latency_queries=0, warmup_queries=0, show_progress=False)
    assert all(isinstance(q, Query) for q in got)
