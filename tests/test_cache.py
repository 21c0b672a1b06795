"""The content-addressed vector cache: hits, misses, corruption, model separation."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- chunk validation
def _fresh_chunk(tmp_path, rows: int = 3, dim: int = 4):
    texts = [f"t{i}" for i in range(rows)]
    keys = [text_key(t) for t in texts]
    cache = VectorCache(tmp_path, "embeddings", "k", dtype=np.float32, row_shape=(dim,))
    cache.get_or_compute(keys, lambda todo: np.ones((len(todo), dim), dtype=np.float32))
    (npy,) = cache.dir.glob("*.npy")
    return keys, npy


def _zero_byte(npy):
    npy.write_bytes(b"")


def _truncated(npy):
    npy.write_bytes(npy.read_bytes()[:-10])  # header intact, data short


def _wrong_dim(npy):
    np.save(npy, np.ones((3, 5), dtype=np.float32))


def _wrong_dtype(npy):
    np.save(npy, np.ones((3, 4), dtype=np.float64))


def _nan(npy):
    arr = np.ones((3, 4), dtype=np.float32)
    arr[1, 2] = np.nan
    np.save(npy, arr)


def _inf(npy):
    arr = np.ones((3, 4), dtype=np.float32)
    arr[0, 0] = np.inf
    np.save(npy, arr)


def _key_count(npy):
    np.save(npy, np.ones((2, 4), dtype=np.float32))


def _garbage_keys(npy):
    npy.with_suffix(".keys").write_text("not a key\n" * 3)


def _pickle(npy):
    np.save(npy, np.array([{"a": 1}] * 3, dtype=object), allow_pickle=True)


@pytest.mark.parametrize(
    "damage", [_zero_byte, _truncated, _wrong_dim, _wrong_dtype, _nan, _inf, _key_count, _garbage_keys, _pickle]
)
def test_bad_chunk_is_named_set_aside_and_recomputed(tmp_path, caplog, damage):
    keys, npy = _fresh_chunk(tmp_path)
    damage(npy)
    cache = VectorCache(tmp_path, "embeddings", "k", dtype=np.float32, row_shape=(4,))
    with caplog.at_level(logging.WARNING, logger="harness"):
        out = cache.get_or_compute(keys, lambda todo: np.full((len(todo), 4), 2, dtype=np.float32))
    assert (out == 2).all() and cache.misses == 3  # every row of the bad chunk recomputed, none trusted
    assert str(npy) in caplog.text and "corrupt cache chunk" in caplog.text
    assert cache.corrupt == [npy] and npy.with_name(npy.name + ".corrupt").exists()
    # the next run reads the recomputed rows, with no warning and no work
    caplog.clear()
    again = VectorCache(tmp_path, "embeddings", "k", dtype=np.float32, row_shape=(4,))
    with caplog.at_level(logging.WARNING, logger="harness"):
        out2 = again.get_or_compute(keys, lambda todo: pytest.fail("recomputed twice"))
    assert (out2 == 2).all() and again.hits == 3 and "corrupt" not in caplog.text


def test_nan_rows_computed_are_returned_but_never_cached(tmp_path, caplog):
    keys = [text_key(t) for t in ("a", "b")]
    cache = VectorCache(tmp_path, "embeddings", "k", dtype=np.float32, row_shape=(2,))

    def half_nan(todo):
        rows = np.ones((len(todo), 2), dtype=np.float32)
        rows[0] = np.nan
        return rows

    with caplog.at_level(logging.WARNING, logger="harness"):
        cache.get_or_compute(keys, half_nan)
    assert "not cached" in caplog.text
    again = VectorCache(tmp_path, "embeddings", "k", dtype=np.float32, row_shape=(2,))
    out = again.get_or_compute(keys, lambda todo: np.zeros((len(todo), 2), dtype=np.float32))
    assert again.misses == 1 and np.isfinite(out).all()


def test_missing_rows_are_committed_chunk_by_chunk(tmp_path):
    keys = [text_key(str(i)) for i in range(10)]
    cache = VectorCache(tmp_path, "embeddings", "k", chunk_rows=4)
    calls = []

    def compute(todo):
        calls.append(len(todo))
        if len(calls) == 3:
            raise KeyboardInterrupt  # a Ctrl-C in the third chunk
        return np.ones((len(todo), 2), dtype=np.float32)

    with pytest.raises(KeyboardInterrupt):
        cache.get_or_compute(keys, compute)
    assert calls == [4, 4, 2] and len(list(cache.dir.glob("*.keys"))) == 2
    again = VectorCache(tmp_path, "embeddings", "k", chunk_rows=4)
    done = []
    again.get_or_compute(keys, lambda todo: done.append(list(todo)) or np.ones((len(todo), 2), dtype=np.float32))
    assert done == [[8, 9]]  # only what the first run did not finish


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=60), st.integers(1, 7))
def test_vectorised_read_matches_row_by_row(tmp_path_factory, picks, chunk_rows):
    root = tmp_path_factory.mktemp("c")
    keys = [text_key(str(i)) for i in picks]
    rows = {k: np.array([int(i), -int(i)], dtype=np.float32) for k, i in zip(keys, picks)}
    cache = VectorCache(root, "embeddings", "k", chunk_rows=chunk_rows)
    half = keys[: len(keys) // 2]
    cache.get_or_compute(half, lambda todo: np.stack([rows[half[i]] for i in todo]))
    out = VectorCache(root, "embeddings", "k", chunk_rows=chunk_rows).get_or_compute(
        keys, lambda todo: np.stack([rows[keys[i]] for i in todo])
    )
    assert np.array_equal(out, np.stack([rows[k] for k in keys]))


def test_on_chunk_counts_computed_chunks_then_cached_rows(tmp_path):
    """Progress is told about every computed chunk as it is committed, then about the rows read from
    the cache, so a display reaches done == total whatever the cache held."""
    cache = VectorCache(tmp_path, "embeddings", digest({"model": "m"}), chunk_rows=2)
    keys = [text_key(f"t{i}") for i in range(5)]
    told: list[int] = []
    cache.get_or_compute(keys[:3], lambda todo: np.ones((len(todo), 4), np.float32), on_chunk=told.append)
    assert told == [2, 1]  # two computed chunks, nothing cached
    told.clear()
    cache.get_or_compute(keys, lambda todo: np.ones((len(todo), 4), np.float32), on_chunk=told.append)
    assert told == [2, 3]  # the two new rows in one chunk, then the three cached ones
