"""The content-addressed vector cache: hits, misses, corruption, model separation."""

from __future__ import annotations

import logging

import numpy as np

from harness.cache import VectorCache, digest, text_key


def compute_factory(calls: list[list[int]], texts: list[str]):
    def compute(todo: list[int]) -> np.ndarray:
        calls.append(list(todo))
        return np.array([[len(texts[i]), i] for i in todo], dtype=np.float32)

    return compute


def test_second_lookup_computes_nothing(tmp_path):
    texts = ["alpha", "beta", "gamma", "beta"]
    keys = [text_key(t) for t in texts]
    calls: list[list[int]] = []
    c1 = VectorCache(tmp_path, "embeddings", digest({"model": "m"}))
    first = c1.get_or_compute(keys, compute_factory(calls, texts))
    assert calls == [[0, 1, 2]]  # the repeated text is computed once
    assert np.array_equal(first[1], first[3])
    c2 = VectorCache(tmp_path, "embeddings", digest({"model": "m"}))
    second = c2.get_or_compute(keys, compute_factory(calls, texts))
    assert len(calls) == 1 and c2.misses == 0 and c2.hits == 4
    assert np.array_equal(first, second)


def test_partial_hits_compute_only_missing(tmp_path):
    texts = ["a", "bb", "ccc"]
    calls: list[list[int]] = []
    cache = VectorCache(tmp_path, "embeddings", "k")
    cache.get_or_compute([text_key(t) for t in texts[:2]], compute_factory(calls, texts[:2]))
    cache.get_or_compute([text_key(t) for t in texts], compute_factory(calls, texts))
    assert calls[1] == [2]


def test_different_model_key_never_shares(tmp_path):
    texts = ["same text"]
    keys = [text_key(t) for t in texts]
    a = VectorCache(tmp_path, "embeddings", digest({"model": "a", "max_length": 128}))
    b = VectorCache(tmp_path, "embeddings", digest({"model": "a", "max_length": 256}))
    a.get_or_compute(keys, lambda todo: np.ones((len(todo), 2), dtype=np.float32))
    out = b.get_or_compute(keys, lambda todo: np.zeros((len(todo), 2), dtype=np.float32))
    assert b.misses == 1 and not out.any()


def test_corrupt_chunk_is_recomputed_not_trusted(tmp_path, caplog):
    texts = ["x", "y"]
    keys = [text_key(t) for t in texts]
    cache = VectorCache(tmp_path, "embeddings", "k")
    cache.get_or_compute(keys, lambda todo: np.ones((len(todo), 3), dtype=np.float32))
    for npy in cache.dir.glob("*.npy"):
        npy.write_bytes(npy.read_bytes()[:20])  # truncated, as a killed writer would leave it
    fresh = VectorCache(tmp_path, "embeddings", "k")
    with caplog.at_level(logging.WARNING, logger="harness"):
        out = fresh.get_or_compute(keys, lambda todo: np.full((len(todo), 3), 2, dtype=np.float32))
    assert fresh.misses == 2 and (out == 2).all()
    assert "corrupt cache chunk" in caplog.text


def test_no_pickle_files(tmp_path):
    cache = VectorCache(tmp_path, "embeddings", "k")
    cache.get_or_compute([text_key("t")], lambda todo: np.ones((1, 2), dtype=np.float32))
    for npy in cache.dir.glob("*.npy"):
        np.load(npy, allow_pickle=False)
    assert not list(cache.dir.glob("*.tmp"))
