"""The learned sparse retriever (retrievers.sparse, ``type: splade``), its CSR row cache
(retrievers.sparse_cache) and the shared top k (retrievers.learned): exact against the library's
own encodings and a direct dot product, cached, and refusing what it cannot run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import one_line_error
from tests.learned_models import build_tiny_splade, harness_cli, scifact_subset

pytest.importorskip("sentence_transformers.sparse_encoder")


@pytest.fixture(scope="module")
def splade_model(tmp_path_factory) -> Path:
    return build_tiny_splade(tmp_path_factory.mktemp("splade"))


# ---------------------------------------------------------------------------- pieces
@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 30),
    st.floats(0.05, 0.6),
    st.integers(0, 2**31 - 1),
)
def test_inverted_index_scores_are_the_float64_dot_product(n_docs, width, density, seed):
    import scipy.sparse as sp

    from retrievers.sparse import InvertedIndex

    rng = np.random.default_rng(seed)
    docs = sp.random(n_docs, width, density=density, random_state=rng, dtype=np.float32, format="csr")
    q = sp.random(1, width, density=density, random_state=rng, dtype=np.float32, format="csr")
    got = InvertedIndex(docs).scores(q.indices.astype(np.int64), q.data)
    want = docs.toarray().astype(np.float64) @ q.toarray().astype(np.float64)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_sparse_row_cache_round_trips_and_sets_a_corrupt_chunk_aside(tmp_path):
    import scipy.sparse as sp

    from harness.cache import text_key
    from retrievers.sparse_cache import SparseRowCache

    rows = sp.random(5, 50, density=0.2, random_state=0, dtype=np.float32, format="csr")
    keys = [text_key(f"text {i}") for i in range(5)]
    cache = SparseRowCache(tmp_path, "k1", {"model": "m"}, width=50)
    cache.put(keys[:3], rows[:3])
    found, got = SparseRowCache(tmp_path, "k1", {"model": "m"}, width=50).get(keys[::-1])
    assert found.tolist() == [False, False, True, True, True]
    assert (got != rows[:3][::-1]).nnz == 0
    # another configuration's key never reads these rows
    assert not SparseRowCache(tmp_path, "k2", {"model": "m"}, width=50).get(keys)[0].any()
    npz = next((tmp_path / "sparse_embeddings" / "k1").glob("*.npz"))
    npz.write_bytes(b"not a zip")
    found, _ = SparseRowCache(tmp_path, "k1", {"model": "m"}, width=50).get(keys)
    assert not found.any()
    assert npz.with_name(npz.name + ".corrupt").exists()


# ---------------------------------------------------------------------------- the retriever
def test_documents_encode_exactly_as_the_library_and_a_second_index_reads_the_cache(splade_model, tmp_path):
    from harness.datasets import load_dataset
    from retrievers.sparse import Splade, SpladeSpec, load_sparse_encoder, to_csr

    ds = load_dataset("demo")
    texts = list(ds.corpus.contents(""))
    spec = SpladeSpec(model=str(splade_model))
    first = Splade(spec, cache_dir=tmp_path, show_progress=False)
    first.index(ds.corpus)
    mine = first.encode_documents(texts)
    model = load_sparse_encoder(str(splade_model))
    lib = to_csr(model.encode_document(texts, batch_size=32), first.width)
    # the same non-zeros, the same values up to float32 rounding (the pipeline batches by token count,
    # the library by characters: other padding, other summation order inside the model)
    assert (mine != 0).astype(int).sum() == (lib != 0).astype(int).sum()
    assert abs(mine - lib).max() <= 1e-5 * abs(lib).max()
    extra = first.efficiency_extra(10)
    assert extra["cache_hit_rate"] == 0.0 and extra["encode_docs_per_s"] > 0
    assert extra["index_nnz"] == lib.nnz and extra["index_mb"] > 0

    second = Splade(spec, cache_dir=tmp_path, show_progress=False)
    second.index(ds.corpus)
    assert second.pipeline.texts == 0  # nothing encoded
    assert second.efficiency_extra(10)["cache_hit_rate"] == 1.0
    run_a, run_b = first.search(ds.queries, 10), second.search(ds.queries, 10)
    assert run_a.to_dict() == run_b.to_dict()


def test_pruning_keeps_at_most_max_active_dims_per_text_and_never_reuses_unpruned_rows(splade_model, tmp_path):
    from harness.datasets import load_dataset
    from retrievers.sparse import Splade, SpladeSpec

    ds = load_dataset("demo")
    full = Splade(SpladeSpec(model=str(splade_model)), cache_dir=tmp_path, show_progress=False)
    full.index(ds.corpus)
    pruned = Splade(SpladeSpec(model=str(splade_model), max_active_dims=8), cache_dir=tmp_path, show_progress=False)
    pruned.index(ds.corpus)
    assert pruned.efficiency_extra(10)["cache_hit_rate"] == 0.0  # its own rows, not the full ones
    rows = pruned.encode_documents(list(ds.corpus.contents("")))
    assert np.diff(rows.indptr).max() <= 8
    assert pruned.identity != full.identity
    q = pruned.encode_queries(ds.queries)
    assert np.diff(q.indptr).max() <= 8


def test_filters_restrict_the_exact_top_k(splade_model, tmp_path):
    from harness.model import Document, Query
    from retrievers.sparse import Splade, SpladeSpec

    docs = [Document(id=f"d{i}", text=f"coffee grinder number {i}", metadata={"shop": i % 2}) for i in range(8)]
    r = Splade(SpladeSpec(model=str(splade_model)), cache_dir=tmp_path, show_progress=False)
    r.index(docs)
    run = r.search([Query(id="q", text="coffee grinder", metadata={"filter": {"shop": 1}})], 10)
    got = [d for d, _ in run["q"]]
    assert got and all(int(d[1:]) % 2 == 1 for d in got)


# ---------------------------------------------------------------------------- bad input
def test_a_folder_that_is_not_a_fill_mask_model_is_refused_naming_the_field(tmp_path):
    from retrievers.encoder import packaged_model_path

    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: demo\nretrievers:\n  bm25: {type: bm25}\n"
        f"  splade: {{type: splade, model: {packaged_model_path()}}}\n",
        encoding="utf-8",
    )
    before = sorted(tmp_path.rglob("*"))
    proc = harness_cli("run", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc, "retrievers.splade.model", "is not a fill-mask model", "BertModel")
    assert line.startswith(f"error: {cfg}:4: ")
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(("kind", "extra"), [("splade", "sparse"), ("colbert", "multivector")])
def test_without_sentence_transformers_the_one_line_names_the_extra(tmp_path, kind, extra):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: demo\nretrievers:\n  {kind}: {{type: {kind}, model: ./m}}\n", encoding="utf-8")
    proc = harness_cli("run", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path, block=True)
    assert proc.returncode == 2, proc.stderr
    assert [x for x in proc.stderr.splitlines() if x.strip()] == [
        f"error: {cfg}:3: retrievers.{kind}: {kind} retrievers need the {extra} extra: "
        f"pip install 'retrieval-harness[{extra}]'"
    ]
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------- exactness on SciFact
def direct_top(model, queries, corpus, k: int) -> dict[str, list[str]]:
    """SparseEncoder.encode_query / encode_document, a float64 dot product and the top ``k`` by
    (float32 score descending, doc id descending): the ranking computed without the harness."""
    import torch

    docs = model.encode_document(list(corpus.contents("")), batch_size=32).to_dense().to(torch.float64).numpy()
    qs = model.encode_query([q.text for q in queries], batch_size=32).to_dense().to(torch.float64).numpy()
    ids = corpus.ids.tolist()
    out = {}
    for q, row in zip(queries, qs @ docs.T):
        key = row.astype(np.float32)
        order = sorted(range(len(ids)), key=lambda i: (-key[i], tuple(-b for b in ids[i].encode())))
        out[q.id] = [ids[i] for i in order[:k]]
    return out


def ndcg10(qrels, ranking: dict[str, list[str]]) -> dict[str, float]:
    import pytrec_eval

    run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranking.items()}
    ev = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in qrels.items()}, {"ndcg_cut_10"})
    return {q: v["ndcg_cut_10"] for q, v in ev.evaluate(run).items()}


@pytest.mark.slow
def test_on_scifact_the_splade_row_ranks_as_the_direct_computation(splade_model, tmp_path):
    import harness
    from retrievers.sparse import load_sparse_encoder

    ds = scifact_subset()
    res = harness.benchmark(
        ds,
        {"splade": {"type": "splade", "model": str(splade_model)}},
        metrics=["ndcg@10", "recall@100"],
        depth=100,
        cache_dir=tmp_path / "cache",
        latency_queries=3,
        warmup_queries=0,
    )
    run = res.runs["splade"]
    want = direct_top(load_sparse_encoder(str(splade_model)), ds.queries, ds.corpus, 100)
    got = {q: [d for d, _ in run[q]] for q in want}
    assert got == want  # every query, every position
    ref = ndcg10(ds.qrels, want)
    assert abs(res.summary["splade"]["ndcg@10"] - float(np.mean(list(ref.values())))) <= 1e-9
    eff = res.efficiency["splade"]
    assert eff["index_nnz"] > 0 and eff["index_mb"] > 0 and eff["encode_docs_per_s"] > 0


def test_learned_rows_compose_with_fusion_rerank_and_mmr_like_any_row(splade_model, tmp_path):
    """First-class rows: fused with BM25, reranked by a colbert stage, re-ordered by MMR; the cost
    columns say what each built."""
    import harness
    from harness import extras
    from tests.learned_models import build_tiny_colbert

    colbert = build_tiny_colbert(tmp_path / "cb")
    res = harness.benchmark(
        "demo",
        {
            "bm25": {"type": "bm25"},
            "splade": {"type": "splade", "model": str(splade_model), "max_active_dims": 64},
            "hybrid": {"type": "hybrid", "of": ["bm25", "splade"]},
            "hybrid_colbert": {"type": "colbert", "model": str(colbert), "of": "hybrid", "top_n": 20},
            "splade_mmr": {"type": "mmr", "of": "splade", "relevance": "scores", "top_n": 20},
        },
        metrics=["ndcg@10"],
        cache_dir=tmp_path / "cache",
        latency_queries=2,
        warmup_queries=0,
    )
    assert not res.failures, res.failures
    assert set(res.summary) == {"bm25", "splade", "hybrid", "hybrid_colbert", "splade_mmr"}
    assert res.efficiency["hybrid"]["index_nnz"] == res.efficiency["splade"]["index_nnz"]
    assert res.efficiency["hybrid_colbert"]["index_vectors"] > 0
    assert extras.status("splade") == "sparse (installed)"
    assert extras.status("colbert") == "multivector (installed)"
