"""Encoder dtype / backend / quantization options and the dense retriever's index precision.

Real model on the demo dataset (slow tests), real FAISS; the CPU's flags are the one thing set by
the tests, so the fallback and the bfloat16 cache keys are tested on any machine.
"""

from __future__ import annotations

import logging
import sys

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.datasets import demo_path, load_dataset
from harness.errors import InputError
from harness.executor import dtypes
from harness.executor.backends import missing_extra
from harness.executor.dtypes import resolve_dtype
from retrievers.compressed_index import CompressedIndex, binary_codes
from retrievers.dense import Dense, DenseSpec, ann_recall
from retrievers.encoder import Encoder
from retrievers.mmr import MMRSpec

BF16 = frozenset({"avx512f", "avx512_bf16"})
PLAIN = frozenset({"avx2", "fma"})


# ---------------------------------------------------------------------------------- dtype resolution
def test_auto_is_bfloat16_only_where_native():
    assert resolve_dtype("auto", flags=BF16).dtype == "bfloat16"
    assert resolve_dtype("auto", flags={"amx_bf16"}).dtype == "bfloat16"
    r = resolve_dtype("auto", flags=PLAIN)
    assert (r.dtype, r.note) == ("float32", None)  # auto choosing float32 is not a fallback


def test_emulated_dtype_falls_back_with_a_note():
    r = resolve_dtype("bfloat16", flags=PLAIN)
    assert r.dtype == "float32" and "avx512_bf16" in r.note and "float32" in r.note
    r = resolve_dtype("float16", flags=BF16)  # bf16 hardware does not compute fp16
    assert r.dtype == "float32" and "float16" in r.note
    assert resolve_dtype("float16", flags={"amx_fp16"}).dtype == "float16"
    assert resolve_dtype("float32", flags=PLAIN) == dtypes.ResolvedDType("float32", "float32")


def test_onnx_computes_float32():
    assert resolve_dtype("auto", backend="onnx", flags=BF16).dtype == "float32"
    r = resolve_dtype("bfloat16", backend="onnx", flags=BF16)
    assert r.dtype == "float32" and "onnx" in r.note
    assert resolve_dtype("bfloat16", backend="openvino", flags=BF16).dtype == "bfloat16"


# ---------------------------------------------------------------------------------- spec validation
def test_spec_rejects_impossible_combinations():
    with pytest.raises(ValidationError, match="quantize: int8 needs backend"):
        DenseSpec(quantize="int8")
    with pytest.raises(ValidationError, match="needs index: flat"):
        DenseSpec(precision="binary", index="hnsw")
    with pytest.raises(ValidationError, match="rescore applies"):
        DenseSpec(rescore=100)
    with pytest.raises(ValidationError, match="runs on the CPU"):
        DenseSpec(backend="onnx", device="cuda")
    with pytest.raises(ValidationError):
        DenseSpec(dtype="int4")
    # every type that embeds shares the options
    assert MMRSpec(of="dense", dtype="auto").encoder_options() == {
        "dtype": "auto",
        "backend": "torch",
        "quantize": "none",
    }


def test_missing_extra_names_the_pip_command(monkeypatch, tmp_path):
    msg = missing_extra("openvino", absent=lambda m: m == "openvino")
    assert (
        msg == "backend openvino needs openvino (not installed): "
        "pip install 'retrieval-harness[openvino]'  (or: pip install openvino onnx)"
    )
    assert missing_extra("torch", absent=lambda m: True) is None
    # a package that cannot be imported, seen by the config check before any work
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(InputError, match=r"pip install 'retrieval-harness\[onnx\]'") as e:
        DenseSpec(backend="onnx").preflight(tmp_path)
    assert e.value.field == "backend"


# ---------------------------------------------------------------------------------- compressed indexes
def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    d=st.sampled_from([8, 12, 64]),
    k=st.integers(1, 20),
    precision=st.sampled_from(["binary", "int8", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_rescoring_everything_is_exact_search(n, d, k, precision, seed):
    """Re-scoring all n candidates gives exact search's scores; every returned score is the float32
    inner product of query and document, in descending order."""
    rng = np.random.default_rng(seed)
    x, q = _unit(rng, n, d), _unit(rng, 5, d)
    idx = CompressedIndex(x, precision, rescore=n)
    scores, ids = idx.search(q, k)
    exact_scores, exact_ids = faiss.knn(q, x, min(k, n), metric=faiss.METRIC_INNER_PRODUCT)
    np.testing.assert_allclose(scores, exact_scores, atol=1e-5)
    assert (ids >= 0).all()
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", q, x[ids]), atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()
    assert ann_recall(ids, exact_ids) >= 0.99 or np.unique(np.round(exact_scores, 5)).size < exact_scores.size


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 80), rescore=st.integers(1, 80), k=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_binary_rescoring_reranks_only_hamming_candidates(n, rescore, k, seed):
    rng = np.random.default_rng(seed)
    x, q = _unit(rng, n, 16), _unit(rng, 3, 16)
    idx = CompressedIndex(x, "binary", rescore=rescore)
    _, cand = idx.candidates(q, min(n, max(k, rescore)))
    _, ids = idx.search(q, k)
    for row, c in zip(ids, cand):
        assert set(row.tolist()) <= set(c.tolist())
    # Hamming scores without re-scoring are the cosine of the sign vectors
    hs, hi = CompressedIndex(x, "binary").search(q, k)
    bits_q, bits_x = np.unpackbits(binary_codes(q), axis=1), np.unpackbits(binary_codes(x), axis=1)
    ham = (bits_q[:, None, :] != bits_x[hi]).sum(-1)
    np.testing.assert_allclose(hs, 1 - 2 * ham / 16)


def test_binary_recall_on_clustered_vectors_and_bytes():
    """Vectors with structure (as embeddings have): binary codes + re-scoring 10x the depth find
    nearly all of exact search's top 10, in 1/32 of the bytes."""
    rng = np.random.default_rng(0)
    centres = _unit(rng, 20, 128)
    x = centres[rng.integers(0, 20, 2000)] + 0.35 * _unit(rng, 2000, 128)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[:50] + 0.1 * _unit(rng, 50, 128)
    idx = CompressedIndex(x, "binary", rescore=100)
    _, ids = idx.search(q, 10)
    _, exact = faiss.knn(q.astype(np.float32), x.astype(np.float32), 10, metric=faiss.METRIC_INNER_PRODUCT)
    assert ann_recall(ids, exact) >= 0.95
    assert idx.index_bytes * 32 == idx.float32_bytes
    assert idx.rescore_bytes == idx.float32_bytes
    assert CompressedIndex(x, "int8").index_bytes * 4 == idx.float32_bytes


# ---------------------------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def demo():
    return load_dataset(demo_path())


@pytest.mark.slow
def test_bfloat16_and_float32_have_their_own_cache_entries(demo, tmp_path, monkeypatch):
    """bfloat16 then float32 on one cache: both encode (different keys); bfloat16 again: nothing."""
    monkeypatch.setattr(dtypes, "cpu_flags", lambda: BF16)  # bfloat16 counts as native on any CI machine
    docs = demo.corpus[:24]

    def run(dtype: str) -> Dense:
        d = Dense(dtype=dtype, cache_dir=tmp_path, show_progress=False)
        d.index(docs)
        d.search(demo.queries[:2], 5)
        return d

    bf = run("bfloat16")
    assert bf.encoder.encoded >= len(docs) and bf.efficiency_extra(5)["cache_hit_rate"] == 0.0
    fp = run("float32")
    assert fp.encoder.encoded >= len(docs) and fp.efficiency_extra(5)["cache_hit_rate"] == 0.0
    assert bf.encoder.cache.dir != fp.encoder.cache.dir
    again = run("bfloat16")
    assert again.encoder.encoded == 0 and again.efficiency_extra(5)["cache_hit_rate"] == 1.0
    assert bf.params()["encoder"]["dtype"] == "bfloat16" and "dtype" not in fp.params()["encoder"]
    assert bf.params()["encoding"] == {
        "dtype": "bfloat16",
        "dtype_resolved": "bfloat16",
        "backend": "torch",
        "quantize": "none",
    }
    e_bf = bf.encoder.encode_documents(docs, progress=False)
    e_fp = fp.encoder.encode_documents(docs, progress=False)
    np.testing.assert_allclose(np.linalg.norm(e_bf, axis=1), 1.0, atol=1e-5)  # renormalised in float32
    assert float((e_bf * e_fp).sum(1).min()) > 0.99


@pytest.mark.slow
def test_auto_without_native_bfloat16_is_float32(demo, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(dtypes, "cpu_flags", lambda: PLAIN)
    auto = Encoder(dtype="auto", cache_dir=tmp_path, show_progress=False)
    assert auto.dtype == "float32" and auto.dtype_note is None
    assert auto.identity == Encoder(cache_dir=tmp_path, show_progress=False).identity  # same cache entries
    with caplog.at_level(logging.WARNING, logger="harness"):
        asked = Encoder(dtype="bfloat16", cache_dir=tmp_path, show_progress=False)
    assert asked.dtype == "float32" and "float32 instead" in caplog.text
    assert asked.computing["note"] == asked.dtype_note


@pytest.mark.slow
def test_onnx_int8_export_is_cached_by_content(demo, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    texts = list(demo.corpus[:12].contents())
    fp = Encoder(cache_dir=tmp_path, show_progress=False).encode(texts, use_cache=False, progress=False)
    enc = Encoder(backend="onnx", quantize="int8", cache_dir=tmp_path, show_progress=False)
    e = enc.encode(texts, use_cache=False, progress=False)
    assert enc.identity["backend"] == "onnx" and enc.identity["quantize"] == "int8"
    assert float((e * fp).sum(1).mean()) > 0.98
    exports = list((tmp_path / "exports").glob("*/*.onnx"))
    assert sorted(p.name for p in exports) == ["model.onnx", "model_int8.onnx"]
    assert exports[0].parent.name == enc.identity["weights_sha256"][:32]
    stamp = {p: p.stat().st_mtime_ns for p in exports}
    again = Encoder(backend="onnx", quantize="int8", cache_dir=tmp_path, show_progress=False)
    np.testing.assert_allclose(again.encode(texts, use_cache=False, progress=False), e, atol=1e-6)
    assert {p: p.stat().st_mtime_ns for p in exports} == stamp  # not exported again
