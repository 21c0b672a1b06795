"""The batched reading of a connected store (:mod:`retrievers.vectordb.store_scan`) gives the exact
search's answer, and the memory of every step of a row is in its ``peak_rss_mb``.

The exact reference read batch by batch equals :func:`retrievers.exact.exact_search` over the whole
matrix (filters and absent documents included) for every batch size; with an id held by several rows
each id counts once, at its best row. A retriever whose ``efficiency_extra`` (the step where ann recall
reads a store) touches 300 MB shows at least that in ``peak_rss_mb``."""

from __future__ import annotations

import mmap
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.filters import MaskCache
from harness.model import Document, Query
from retrievers.exact import exact_search


def batches(ids, emb, size):
    for start in range(0, len(ids), size):
        yield ids[start : start + size], emb[start : start + size]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    k=st.integers(1, 12),
    size=st.integers(1, 70),
    seed=st.integers(0, 2**16),
    distance=st.sampled_from(["cosine", "ip", "l2"]),
)
def test_batched_exact_equals_whole_matrix_exact(n, k, size, seed, distance):
    from retrievers.vectordb.store_scan import exact_from_store

    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, 8)).astype(np.float32)
    q = rng.normal(size=(5, 8)).astype(np.float32)
    docs = [Document(id=f"d{i}", text="x", metadata={"g": i % 3}) for i in range(n)]
    queries = [Query(id=f"q{j}", text="x", metadata={"filter": {"g": j % 3}} if j % 2 else {}) for j in range(5)]
    masks = MaskCache(docs)
    kk = min(k, n)
    s_want, want = exact_search(q, emb, kk, distance=distance, queries=queries, masks=masks)
    pos = {d.id: i for i, d in enumerate(docs)}
    got = exact_from_store(
        batches([d.id for d in docs] + ["not-in-corpus"], np.vstack([emb, emb[:1]]), size),
        q,
        kk,
        pos=pos,
        distance=distance,
        queries=queries,
        masks=masks,
    )
    for r in range(5):  # the same documents, in the same order where scores are not tied
        w, g = want[r][want[r] >= 0], got[r][got[r] >= 0]
        assert len(w) == len(g)
        scores = {int(i): s for i, s in zip(want[r], s_want[r])}
        assert sorted(w.tolist()) == sorted(g.tolist()) or all(
            abs(scores.get(int(i), -1e9) - s_want[r][len(w) - 1]) < 1e-5 for i in set(w) ^ set(g)
        )


def test_an_id_held_twice_counts_once_at_its_best_row():
    from retrievers.vectordb.store_scan import exact_from_store

    emb = np.eye(4, dtype=np.float32)
    ids = ["a", "b", "a", "c"]  # 'a' twice: rows 0 and 2
    q = np.array([[0.0, 0.0, 1.0, 0.0]], dtype=np.float32)  # nearest row 2 ('a')
    got = exact_from_store(
        batches(ids, emb, 1),
        q,
        3,
        pos={"a": 0, "b": 1, "c": 2},
        distance="ip",
        queries=[Query(id="q", text="x")],
        masks=None,
    )
    assert got[0].tolist()[0] == 0 and sorted(got[0].tolist()) == [0, 1, 2]


class Light:
    """A retriever with a cost step that allocates nothing."""

    def index(self, corpus):
        self.ids = [d.id for d in corpus]

    def search(self, queries, k):
        from harness.run import Run

        return Run.from_dict({q.id: {d: 1.0 / (i + 1) for i, d in enumerate(self.ids[:k])} for q in queries})

    def efficiency_extra(self, k):
        return {}


class Heavy(Light):
    """A retriever whose cost step (``efficiency_extra``, where ann recall reads a store) holds 300 MB."""

    def efficiency_extra(self, k):
        # pages of its own (an anonymous map), every one written, so resident: a plain array could be served
        # from freed heap pages a long-lived test worker already holds, which RSS never shows growing
        buf = mmap.mmap(-1, 300 * 2**20)
        block = np.frombuffer(buf, dtype=np.uint8)
        block[:: mmap.PAGESIZE] = 1
        time.sleep(0.5)  # held while the RSS sampler (every 20 ms) looks
        touched = float(block[:: mmap.PAGESIZE][:10].sum())
        del block
        buf.close()
        return {"touched": touched}


def test_peak_rss_covers_the_cost_step(tiny_dataset, cache_dir):
    from harness.api import benchmark

    res = benchmark(
        tiny_dataset, {"light": Light(), "heavy": Heavy()}, cache_dir=cache_dir, latency_queries=1, warmup_queries=0
    )
    light, heavy = res.efficiency["light"]["peak_rss_mb"], res.efficiency["heavy"]["peak_rss_mb"]
    print(f"peak_rss_mb: light {light:.0f}, heavy {heavy:.0f}")
    assert heavy - light >= 250
