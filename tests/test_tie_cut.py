"""Tests for retrievers.ties: the cut at depth k follows the ranking rule (score descending, ties by doc
id descending) in every built-in retriever, not the library's own top-k, so which copy of a duplicated
document is retrieved, and every metric, is the same whatever the engine; both shapes (a library's top
k, a full score vector) agree with a plain sort by the rule, scores beyond float32's range included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.run import Run
from tests.conftest import run_harness

#: the rule's top 10 of s0..s299 all tied: doc ids compare as strings, descending
RULE_TOP10 = [f"s{i}" for i in range(99, 89, -1)]


def _identical_corpus(root: Path, n: int = 300) -> Path:
    ds = root / "same"
    (ds / "qrels").mkdir(parents=True)
    doc = "the very same document text repeated"
    # and unrelated ones, so the query's words are in fewer than half the documents (rank_bm25's Okapi idf > 0)
    filler = "".join(
        json.dumps({"_id": f"o{i}", "title": "", "text": f"other words number {i}"}) + "\n" for i in range(400)
    )
    (ds / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"s{i}", "title": "", "text": doc}) + "\n" for i in range(n)) + filler
    )
    (ds / "queries.jsonl").write_text(json.dumps({"_id": "q01", "text": "the same document text"}) + "\n")
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq01\ts95\t1\n")
    return ds


@pytest.mark.slow
def test_every_builtin_retriever_cuts_300_tied_copies_by_the_rule(tmp_path, cache_dir):
    ds = _identical_corpus(tmp_path)
    retrievers = {
        "bm25": "{type: bm25}",
        "bm25_rank": "{type: bm25, backend: rank_bm25}",
        "dense": "{type: dense}",
        "dense_hnsw": "{type: dense, index: hnsw}",
        "dense_ivf": "{type: dense, index: ivf, nlist: 4}",
        "hybrid": "{type: hybrid, of: [bm25, dense]}",
        "dense_mmr": "{type: mmr, of: dense}",
        "lancedb": "{type: lancedb}",
        "qdrant": "{type: qdrant}",
    }
    body = "".join(f"  {name}: {spec}\n" for name, spec in retrievers.items())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"metrics: [ndcg@10]\ndepth: 10\nlatency_queries: 1\nwarmup_queries: 0\nretrievers:\n{body}")
    res = run_harness("run", "--config", cfg, "--dataset", ds, "--out", tmp_path / "res", "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    got = {}
    for f in (tmp_path / "res" / "runs").glob("*.trec"):
        got[f.name.rsplit("-", 1)[0]] = [
            line.split()[2] for line in f.read_text().splitlines() if line.startswith("q01 ")
        ]
    assert set(got) == set(retrievers)
    assert {name: ids for name, ids in got.items() if ids != RULE_TOP10} == {}
    summary = json.loads((tmp_path / "res" / "results.json").read_text())["summary"]
    # s95 is relevant and the rule keeps it at rank 5: every retriever scores the same
    assert {name: round(m["ndcg@10"], 6) for name, m in summary.items()} == dict.fromkeys(
        retrievers, round(1 / np.log2(6), 6)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 40),
    st.integers(1, 45),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_cut_by_rule_equals_the_rule_over_every_document(n_rows, n_docs, k, levels, rnd):
    from retrievers.ties import cut_by_rule

    # few distinct scores: ties everywhere, the library breaks them in an arbitrary order of its own
    scores = np.array([[rnd.randrange(levels) for _ in range(n_docs)] for _ in range(n_rows)], dtype=np.float64)
    doc_ids = np.array([f"d{rnd.randrange(10**6)}-{i}" for i in range(n_docs)], dtype=object)

    def library(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for r in rows:
            perm = np.array(rnd.sample(range(n_docs), n_docs))
            order = perm[np.argsort(-scores[r, perm], kind="stable")][:depth]
            out.append(order)
        idx = np.array(out, dtype=np.int64)
        return np.take_along_axis(scores[rows], idx, axis=1), idx

    s, i = cut_by_rule(library, n_rows, k, doc_ids)
    full = Run([str(r) for r in range(n_rows)], doc_ids, np.tile(np.arange(n_docs), (n_rows, 1)), scores)
    kk = min(k, n_docs)
    assert i.shape == (n_rows, kk)
    # the same documents as the rule's top k (their order is the Run's job, as for any retriever)
    got = Run([str(r) for r in range(n_rows)], doc_ids, i, s)
    assert np.array_equal(got.indices, full.indices[:, :kk])
    assert np.array_equal(got.scores, full.scores[:, :kk])


def test_a_tie_past_the_cut_when_the_first_fetch_is_the_whole_corpus():
    """k one below the corpus size: the first fetch (k + 1) already holds every document, so a row that
    still ties is cut from it at once, beside rows that do not tie (a case the property test found)."""
    from retrievers.ties import cut_by_rule

    scores = np.array([[1.0, 1.0, 1.0, 1.0], [4.0, 3.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    doc_ids = np.array(["a", "b", "c", "d"], dtype=object)

    def library(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        idx = np.tile(np.arange(4), (len(rows), 1))[:, :depth]
        return np.take_along_axis(scores[rows], idx, axis=1), idx

    s, i = cut_by_rule(library, 3, 3, doc_ids)
    assert [list(doc_ids[r]) for r in i] == [["d", "c", "b"], ["a", "b", "c"], ["d", "c", "b"]]
    assert s[1].tolist() == [4.0, 3.0, 2.0]


def test_cut_by_rule_asks_one_more_only_where_nothing_ties_past_the_cut():
    from retrievers.ties import cut_by_rule

    scores = np.arange(100, 0, -1, dtype=np.float64)[None, :]
    asked = []

    def library(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        asked.append(depth)
        return scores[rows, :depth], np.tile(np.arange(depth), (len(rows), 1))

    _, idx = cut_by_rule(library, 1, 10, np.array([f"d{i}" for i in range(100)], dtype=object))
    assert asked == [11]
    assert idx.tolist() == [list(range(10))]


#: scores that tie in float32 but not in float64, finite scores beyond float32's range (an infinity
#: of their sign as trec_eval stores them, so tied there), and -inf (no candidate, full-vector shape)
HOSTILE = [0.0, 1.0, 1.0 + 1e-12, 2.0, -1.0, float(np.finfo(np.float32).max), 3.5e38, 1e300, -3.5e38, -1e300, -np.inf]


def _plain_sort(scores: np.ndarray, ids: np.ndarray, k: int) -> list[int]:
    """The rule written as plainly as it reads: candidates (finite scores) by float32 score
    descending, then by id descending (Python compares strings by code point, as strcmp bytes)."""
    live = [i for i in range(len(scores)) if np.isfinite(scores[i])]
    with np.errstate(over="ignore"):
        keys = {i: float(np.float32(scores[i])) for i in live}
    return sorted(live, key=lambda i: (keys[i], ids[i]), reverse=True)[:k]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=30), st.integers(1, 35), st.randoms(use_true_random=False)
)
def test_both_shapes_of_the_cut_agree_with_a_plain_sort_by_the_rule(values, k, rnd):
    from harness.run import id_rank
    from retrievers.ties import cut_by_rule, top_k

    scores = np.asarray(values, dtype=np.float64)
    ids = np.array([f"d{rnd.randrange(10**6)}-{i}" for i in range(len(scores))], dtype=object)  # not in id order
    want = _plain_sort(scores, ids, k)

    # a full score vector: the rule's order itself, never short of the candidates
    pos, sc = top_k(scores, k, id_rank(ids))
    assert pos.tolist() == want
    assert sc.tolist() == scores[want].tolist()

    # a library's top k: the candidates by float64 score, its ties in an order of its own
    live = np.flatnonzero(np.isfinite(scores))

    def library(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        perm = np.array(rnd.sample(live.tolist(), len(live)), dtype=np.int64)
        top = perm[np.argsort(-scores[perm], kind="stable")][:depth]
        idx = np.full((len(rows), depth), -1, dtype=np.int64)
        idx[:, : len(top)] = top
        return np.where(idx >= 0, scores[np.maximum(idx, 0)], -np.inf), idx

    s, i = cut_by_rule(library, 1, k, ids)
    # the same documents; their order is the Run's job, as for any retriever
    assert Run(["q"], ids, i, s).indices[0, : len(want)].tolist() == want
    assert int((i >= 0).sum()) == len(want)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=4), min_size=1, max_size=40),
    st.lists(st.lists(st.sampled_from(["alpha", "beta", "gamma", "zzz", "the"]), max_size=3), min_size=1, max_size=8),
    st.integers(1, 45),
    st.booleans(),
)
def test_bm25_top_k_is_the_rule_over_bm25s_whole_ranking(docs, queries, k, masked):
    """bm25 cuts bm25s's scores of every document by the rule in one pass (no deeper second retrieve
    for tied rows): the same documents, order and scores as the rule applied to bm25s's own ranking
    of the whole corpus, on corpora of four words (ties everywhere), with and without a filter."""
    from harness.model import Document, Query
    from retrievers.bm25 import BM25

    assume(any(docs))  # bm25s builds no index over documents that hold no word at all
    corpus = [Document(id=f"d{(i * 7919) % 1000:03d}-{i}", text=" ".join(ws)) for i, ws in enumerate(docs)]
    qs = [Query(id=f"q{i}", text=" ".join(ws)) for i, ws in enumerate(queries)]
    bm = BM25(show_progress=False)
    bm.index(corpus)
    tokens = bm._tokenize([q.text for q in qs])
    mask = (np.arange(len(corpus)) % 3 != 0) if masked else None
    kk = min(k, len(corpus))
    got_s, got_i = bm._top(tokens, kk, mask)
    weight = None if mask is None else mask.astype(np.float32)
    idx, scores = bm._engine.retrieve(tokens, k=len(corpus), show_progress=False, weight_mask=weight)
    scores = np.asarray(scores, dtype=np.float64)
    whole = Run([q.id for q in qs], bm._doc_ids, np.where(scores > 0, idx, -1), scores).cut(kk)
    got = Run([q.id for q in qs], bm._doc_ids, np.where(got_s > 0, got_i, -1), got_s)
    width = min(got.depth, whole.depth)
    assert np.array_equal(got.indices[:, :width], whole.indices[:, :width])
    assert (got.indices[:, width:] < 0).all() and (whole.indices[:, width:] < 0).all()
    valid = got.indices[:, :width] >= 0
    assert np.array_equal(got.scores[:, :width][valid], whole.scores[:, :width][valid])
