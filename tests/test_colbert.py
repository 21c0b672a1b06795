"""The late-interaction retriever and rerank stage (retrievers.colbert, ``type: colbert``): exact
MaxSim over a memory-mapped token-vector store, against ``MultiVectorEncoder.similarity``, as a full
ranking and as a rerank of BM25's top 100; the store refused when it would not fit in memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import one_line_error
from tests.learned_models import build_tiny_colbert, harness_cli, scifact_subset

pytest.importorskip("sentence_transformers.multi_vector_encoder")


@pytest.fixture(scope="module")
def colbert_model(tmp_path_factory) -> Path:
    return build_tiny_colbert(tmp_path_factory.mktemp("colbert"))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=12), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_maxsim_scan_equals_the_per_document_definition(lengths, q_tokens, seed):
    """Blocks of the store and of the queries do not change a score: MaxSim, document by document."""
    import retrievers.colbert as cb

    rng = np.random.default_rng(seed)
    dim = 4
    docs = [rng.normal(size=(n, dim)).astype(np.float32) for n in lengths]
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])

    class Store:
        vectors = np.concatenate(docs) if sum(lengths) else np.zeros((0, dim), np.float32)

    Store.offsets = offsets
    qs = [rng.normal(size=(q_tokens, dim)).astype(np.float32) for _ in range(3)]
    q_off = np.arange(4) * q_tokens
    old = cb.SCAN_TOKENS, cb.SCAN_QUERY_TOKENS
    cb.SCAN_TOKENS, cb.SCAN_QUERY_TOKENS = 5, q_tokens  # many small blocks
    try:
        got = cb.maxsim_all(np.concatenate(qs), q_off, Store)
    finally:
        cb.SCAN_TOKENS, cb.SCAN_QUERY_TOKENS = old
    for i, q in enumerate(qs):
        want = [float((q @ d.T).max(axis=1).sum()) if len(d) else 0.0 for d in docs]
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(cb.maxsim_pairs(q, docs), want, rtol=1e-5, atol=1e-5)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(8, 120), min_size=5, max_size=40),
    st.lists(st.integers(16, 32), min_size=4, max_size=10),
    st.integers(0, 2**31 - 1),
)
def test_maxsim_gives_the_library_s_float32_bits(doc_lengths, query_lengths, seed):
    """The scan and the rerank compute as ``sentence_transformers.util.similarity.maxsim`` does (what
    ``MultiVectorEncoder.similarity`` calls): float32 products by torch with the kernel its call
    takes, float32 sums in its order over the padded query width; so a score is the library's, bit
    for bit, and near-tied documents fall in its order. The library scoring a query set (here at
    least 64 query tokens, as any evaluation's queries are): BLAS multiplies a product of fewer rows
    with another kernel, which rounds otherwise (that call is matched to float32 rounding only).
    Blocks of the store as small as one document give the same bits."""
    import torch
    from sentence_transformers.util.similarity import maxsim

    import retrievers.colbert as cb

    rng = np.random.default_rng(seed)

    def unit(n: int) -> np.ndarray:
        v = rng.normal(size=(n, 128)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    docs = [unit(n) for n in doc_lengths]
    qs = [unit(n) for n in query_lengths]
    want = maxsim([torch.from_numpy(q) for q in qs], [torch.from_numpy(d) for d in docs]).numpy()

    class Store:
        vectors = np.concatenate(docs)
        offsets = np.concatenate([[0], np.cumsum(doc_lengths)]).astype(np.int64)

    q_off = np.concatenate([[0], np.cumsum(query_lengths)]).astype(np.int64)
    old = cb.SCAN_TOKENS
    try:
        for block in (1, 37, old):  # a block per document, small blocks, the default
            cb.SCAN_TOKENS = block
            np.testing.assert_array_equal(cb.maxsim_all(np.concatenate(qs), q_off, Store).astype(np.float32), want)
    finally:
        cb.SCAN_TOKENS = old
    width = max(query_lengths)
    for i, q in enumerate(qs):
        np.testing.assert_array_equal(cb.maxsim_pairs(q, docs, width).astype(np.float32), want[i])


def test_the_store_is_memory_mapped_reused_and_float16_by_default(colbert_model, tmp_path):
    from harness.datasets import load_dataset
    from retrievers.colbert import Colbert, ColbertSpec

    ds = load_dataset("demo")
    first = Colbert(ColbertSpec(model=str(colbert_model)), cache_dir=tmp_path, show_progress=False)
    first.index(ds.corpus)
    assert isinstance(first.store.vectors, np.memmap) and first.store.vectors.dtype == np.float16
    eff = first.efficiency_extra(10)
    assert eff["cache_hit_rate"] == 0.0 and eff["encode_docs_per_s"] > 0
    assert eff["index_vectors"] == first.store.tokens and eff["index_mb"] > 0
    second = Colbert(ColbertSpec(model=str(colbert_model)), cache_dir=tmp_path, show_progress=False)
    second.index(ds.corpus)
    assert second.efficiency_extra(10)["cache_hit_rate"] == 1.0
    assert first.search(ds.queries, 10).to_dict() == second.search(ds.queries, 10).to_dict()
    f32 = Colbert(ColbertSpec(model=str(colbert_model), precision="float32"), cache_dir=tmp_path, show_progress=False)
    f32.index(ds.corpus)
    assert f32.store.vectors.dtype == np.float32 and f32.store.folder != first.store.folder
    assert f32.efficiency_extra(10)["index_mb"] > 1.9 * eff["index_mb"]


def test_without_a_cache_folder_the_store_is_temporary_and_removed_with_the_row(colbert_model):
    import gc

    from harness.datasets import load_dataset
    from retrievers.colbert import Colbert, ColbertSpec

    row = Colbert(ColbertSpec(model=str(colbert_model)), cache_dir=None, show_progress=False)
    row.index(list(load_dataset("demo").corpus)[:20])
    folder = row.store.folder
    assert (folder / "store.json").is_file()
    del row
    gc.collect()
    assert not folder.exists()


def test_a_store_cut_short_is_rebuilt(colbert_model, tmp_path):
    from harness.datasets import load_dataset
    from retrievers.colbert import Colbert, ColbertSpec

    ds = load_dataset("demo")
    spec = ColbertSpec(model=str(colbert_model))
    first = Colbert(spec, cache_dir=tmp_path, show_progress=False)
    first.index(ds.corpus)
    want = first.search(ds.queries, 10).to_dict()
    vectors = first.store.folder / "vectors.bin"
    data = vectors.read_bytes()
    vectors.write_bytes(data[: len(data) // 2])
    again = Colbert(spec, cache_dir=tmp_path, show_progress=False)
    again.index(ds.corpus)
    assert again.efficiency_extra(10)["cache_hit_rate"] == 0.0
    assert again.search(ds.queries, 10).to_dict() == want


def test_a_corpus_whose_store_exceeds_the_memory_limit_is_refused_before_any_work(colbert_model, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: demo\nretrievers:\n  bm25: {type: bm25}\n"
        f"  colbert: {{type: colbert, model: {colbert_model}, memory_limit_mb: 0.01}}\n",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    proc = harness_cli("run", "--config", str(cfg), "--out", str(work / "out"), cwd=work)
    line = one_line_error(proc, "retrievers.colbert.memory_limit_mb", "needs", "MB", "token vectors x 128 dims")
    assert "over the memory limit of 0.0 MB" in line
    assert list(work.iterdir()) == []
    # as a rerank stage it reads only its candidates' rows: the same limit is no obstacle
    cfg.write_text(
        "dataset: demo\nlatency_queries: 2\nwarmup_queries: 0\nretrievers:\n  bm25: {type: bm25}\n"
        f"  colbert: {{type: colbert, of: bm25, top_n: 20, model: {colbert_model}, memory_limit_mb: 0.01}}\n",
        encoding="utf-8",
    )
    proc = harness_cli("run", "--config", str(cfg), "--out", str(work / "out"), cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]


# ---------------------------------------------------------------------------- exactness on SciFact
def canonical(ids: list[str], scores: np.ndarray, k: int) -> list[str]:
    key = np.asarray(scores, dtype=np.float32)
    order = sorted(range(len(ids)), key=lambda i: (-key[i], tuple(-b for b in ids[i].encode())))
    return [ids[i] for i in order[:k]]


def assert_library_ranking(got: list[tuple[str, float]], want: list[str], score: dict[str, float]) -> None:
    """The library's ranking, position for position, and its float32 scores, bit for bit."""
    assert [d for d, _ in got] == want
    assert [np.float32(sc) for _, sc in got] == [np.float32(score[d]) for d in want]


@pytest.mark.slow
def test_on_scifact_colbert_ranks_as_multivector_similarity_in_full_and_as_a_rerank_of_bm25(colbert_model, tmp_path):
    import pytrec_eval

    import harness
    from retrievers.colbert import load_multivector

    ds = scifact_subset()
    res = harness.benchmark(
        ds,
        {
            "bm25": {"type": "bm25"},
            "colbert": {"type": "colbert", "model": str(colbert_model), "precision": "float32"},
            "bm25_colbert": {
                "type": "colbert",
                "model": str(colbert_model),
                "of": "bm25",
                "top_n": 100,
                "precision": "float32",
            },
        },
        metrics=["ndcg@10", "recall@100"],
        depth=100,
        cache_dir=tmp_path / "cache",
        latency_queries=3,
        warmup_queries=0,
    )
    model = load_multivector(str(colbert_model))
    ids = ds.corpus.ids.tolist()
    sims = model.similarity(
        model.encode_query([q.text for q in ds.queries], batch_size=32),
        model.encode_document(list(ds.corpus.contents("")), batch_size=32),
    ).numpy()
    full, reranked = {}, {}
    for i, q in enumerate(ds.queries):
        score = dict(zip(ids, sims[i].tolist()))
        full[q.id] = canonical(ids, sims[i], 100)
        assert_library_ranking(res.runs["colbert"][q.id], full[q.id], score)
        cand = [d for d, _ in res.runs["bm25"][q.id]]
        reranked[q.id] = canonical(cand, np.array([score[d] for d in cand]), 100)
        assert_library_ranking(res.runs["bm25_colbert"][q.id], reranked[q.id], score)
    ev = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in ds.qrels.items()}, {"ndcg_cut_10"})
    for row, ranking in (("colbert", full), ("bm25_colbert", reranked)):
        run = {q: {d: float(len(r) - j) for j, d in enumerate(r)} for q, r in ranking.items()}
        ref = float(np.mean([v["ndcg_cut_10"] for v in ev.evaluate(run).values()]))
        assert abs(res.summary[row]["ndcg@10"] - ref) <= 1e-9, row
    eff = res.efficiency["colbert"]
    assert eff["index_vectors"] > 0 and eff["index_mb"] > 0
