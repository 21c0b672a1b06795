"""Dense retriever with the real packaged all-MiniLM-L6-v2 and real FAISS indexes."""

from __future__ import annotations

import numpy as np
import pytest

from retrievers.dense import Dense, DenseSpec
from retrievers.encoder import Encoder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def flat(tiny_dataset, cache_dir):
    d = Dense(cache_dir=cache_dir, show_progress=False)
    d.index(tiny_dataset.corpus)
    return d


def test_finds_semantically_related_documents(flat, tiny_dataset):
    run = flat.search(tiny_dataset.queries, k=3)
    assert run.ranking("q1")[0][0] in {"d1", "d6"}
    assert run.ranking("q2")[0][0] == "d3"
    assert run.ranking("q3")[0][0] == "d5"


def test_embeddings_are_normalised_so_inner_product_is_cosine(cache_dir):
    enc = Encoder(cache_dir=cache_dir, show_progress=False)
    emb = enc.encode(["a sentence", "another one"])
    assert emb.dtype == np.float32 and emb.shape == (2, enc.dim)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("index", ["hnsw", "ivf"])
def test_approximate_indexes_report_recall_against_exact(tiny_dataset, cache_dir, index):
    d = Dense(DenseSpec(index=index, nlist=2, nprobe=2), cache_dir=cache_dir, show_progress=False)
    d.index(tiny_dataset.corpus)
    run = d.search(tiny_dataset.queries, k=3)
    assert len(run) == 3
    extra = d.efficiency_extra(3)
    assert 0.0 <= extra["ann_recall@3"] <= 1.0


def test_second_index_encodes_no_document(tiny_dataset, tmp_path):
    first = Dense(cache_dir=tmp_path, show_progress=False)
    first.index(tiny_dataset.corpus)
    assert first.encoder.cache.misses == len(tiny_dataset.corpus)
    second = Dense(cache_dir=tmp_path, show_progress=False)
    second.index(tiny_dataset.corpus)
    assert second.encoder.cache.misses == 0
    assert second.encoder.cache.hits == len(tiny_dataset.corpus)


def test_cache_key_includes_max_length(tmp_path):
    a = Encoder(cache_dir=tmp_path, show_progress=False, max_length=128)
    key_a = a.cache.dir
    b = Encoder(cache_dir=tmp_path, show_progress=False, max_length=64)
    assert b.cache.dir != key_a
    assert a.identity["weights_sha256"] == b.identity["weights_sha256"]
    Encoder(cache_dir=tmp_path, show_progress=False, max_length=128)  # restore the shared model's setting


def test_unknown_model_gives_actionable_error():
    from harness.errors import InputError

    with pytest.raises(InputError, match="cannot load sentence-transformers model"):
        Encoder("no-such-org/no-such-model-xyz", show_progress=False)


def test_warm_run_reads_the_cache_without_loading_the_model(tmp_path):
    """Every document and query cached: a new process indexes and searches without importing
    torch (the model's identity is read from the cache folder's record of it)."""
    import json
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent(
        """
        import json, sys
        from harness.model import Document, Query
        from retrievers.dense import Dense
        docs = [Document(id=f"d{i}", text=f"text number {i} about bicycles") for i in range(40)]
        queries = [Query(id=f"q{i}", text=f"bicycle {i}") for i in range(40)]
        d = Dense(cache_dir=sys.argv[1], show_progress=False)
        d.index(docs)
        run = d.search(queries, k=5)
        print(json.dumps({"torch": "torch" in sys.modules, "encoded": d.encoder.encoded,
                          "top": run.ranking("q3")[0][0], "extra": d.efficiency_extra(5)}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "HF_HUB_OFFLINE": "1"}

    def run() -> dict:
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert cold["torch"] and cold["encoded"] == 80 and cold["extra"]["cache_hit_rate"] == 0.0
    assert not warm["torch"] and warm["encoded"] == 0 and warm["extra"]["cache_hit_rate"] == 1.0
    assert warm["top"] == cold["top"] and warm["extra"]["encode_seconds"] == 0.0


def _count_held_blocks(enc: Encoder) -> list[int]:
    """Makes ``enc`` read 2-document blocks; the list gets, as each block is read, how many earlier
    blocks are still alive."""
    import weakref

    original = enc.iter_document_blocks
    still_held: list[int] = []

    def blocks(corpus, **kw):
        refs: list[weakref.ref] = []
        for start, block in original(corpus, block=2, **kw):
            still_held.append(sum(r() is not None for r in refs))
            refs.append(weakref.ref(block))
            yield start, block
            del block

    enc.iter_document_blocks = blocks  # type: ignore[method-assign]
    return still_held


@pytest.mark.parametrize("index", ["flat", "hnsw"])
def test_indexing_holds_one_block_of_embeddings_at_a_time(tiny_dataset, cache_dir, index):
    """Each block is copied (into the flat index's storage, or the array HNSW is built from) and let go
    before the next is read: at 100k documents a held block (16,384 x 384 float32, 25 MB) put the flat
    run's peak RSS over 1.5x raw FAISS's."""
    d = Dense(DenseSpec(index=index), cache_dir=cache_dir, show_progress=False)
    still_held = _count_held_blocks(d.encoder)
    d.index(tiny_dataset.corpus)
    assert len(still_held) > 1 and max(still_held) == 0
    assert d.search(tiny_dataset.queries, k=3).ranking("q2")[0][0] == "d3"
