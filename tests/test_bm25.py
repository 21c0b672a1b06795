"""BM25 adapter: both backends, the analyzer, and published-number sanity on real data."""

from __future__ import annotations

import pytest

from harness.metrics.evaluate import evaluate_run
from harness.model import Document, Query
from retrievers.bm25 import BM25, BM25Spec
from tests.conftest import shared


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_ranks_the_matching_document_first(tiny_dataset, backend):
    bm25 = BM25(backend=backend, show_progress=False)
    bm25.index(tiny_dataset.corpus)
    run = bm25.search(tiny_dataset.queries, k=10)
    assert run.ranking("q2")[0][0] == "d3"
    assert run.ranking("q1")[0][0] in {"d1", "d6"}
    # documents matching no query term are not returned (Lucene semantics)
    assert all(score > 0 for _, score in run.ranking("q3"))
    assert len(run.ranking("q3")) < len(tiny_dataset.corpus)


def test_stemming_and_stopwords(tiny_dataset):
    bm25 = BM25(show_progress=False)
    bm25.index(tiny_dataset.corpus)
    run = bm25.search([Query(id="s", text="Lubricating BICYCLES"), Query(id="t", text="the of and")], k=5)
    assert run.ranking("s")[0][0] == "d3"  # lubricating~lubricate, bicycles~bicycle
    assert run.ranking("t") == []  # only stop words: nothing matches


def test_k_larger_than_corpus(tiny_dataset):
    bm25 = BM25(show_progress=False)
    bm25.index(tiny_dataset.corpus)
    run = bm25.search(tiny_dataset.queries, k=1000)
    assert run.depth <= len(tiny_dataset.corpus)


def test_backends_agree_on_top_document(tiny_dataset):
    runs = []
    for backend in ("bm25s", "rank_bm25"):
        bm25 = BM25(backend=backend, show_progress=False)
        bm25.index(tiny_dataset.corpus)
        runs.append(bm25.search(tiny_dataset.queries, k=3))
    for q in tiny_dataset.queries:
        assert runs[0].ranking(q.id)[0][0] == runs[1].ranking(q.id)[0][0]


def test_spec_defaults_are_recorded():
    spec = BM25Spec()
    assert (spec.k1, spec.b, spec.backend, spec.stemmer, spec.stopwords) == (0.9, 0.4, "bm25s", "english", "en")
    assert BM25(show_progress=False).params()["k1"] == 0.9


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "floor"),
    [("scifact", 0.665), ("nfcorpus", 0.32), ("cranfield", 0.30)],
)
def test_default_bm25_reaches_reference_quality(name, floor):
    """Reference BM25 (bm25s lucene, stop words, stemming, k1 .9 b .4): SciFact .676, NFCorpus .333, Cranfield .323."""
    from harness.datasets import load_dataset

    ds = load_dataset(shared(name))
    bm25 = BM25(show_progress=False)
    bm25.index(ds.corpus)
    ndcg = evaluate_run(ds.qrels, bm25.search(ds.queries, k=100), ["ndcg@10"]).means()["ndcg@10"]
    assert ndcg >= floor, ndcg


def test_a_corpus_without_an_indexable_word_matches_nothing_and_does_not_fail():
    """Every document empty or stop words only: bm25s builds no index (it raised a bare ValueError,
    'max() arg is an empty sequence', and the row failed); nothing can match, so nothing is returned,
    and a later write that brings a word makes a real index."""
    bm = BM25(show_progress=False)
    bm.index([Document(id="d1", text=""), Document(id="d2", text="the of and")])
    run = bm.search([Query(id="q1", text="hello"), Query(id="q2", text="the")], 10)
    assert all(not ranked for ranked in run.to_dict().values())
    bm.add([Document(id="d3", text="hello world")])
    assert list(bm.search([Query(id="q1", text="hello")], 10).to_dict()["q1"]) == ["d3"]
