"""ANN defaults: HNSW and IVF as the dense retriever builds them reach ann_recall@100 >= 0.95
against exact search on clustered embeddings (real FAISS; no model needed: the index is what is
tested). SciFact's real-embedding figures are in docs/scale.md (benchmarks/scale.py --ann)."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from retrievers.dense import DenseSpec, ann_recall, default_nprobe


def clustered(n: int, d: int = 64, clusters: int = 50, seed: int = 0) -> np.ndarray:
    """Unit vectors around random centres: the structure sentence embeddings have (random
    vectors have none, and no ANN index beats brute force on them)."""
    centres = np.random.default_rng(0).standard_normal((clusters, d))  # documents and queries share them
    rng = np.random.default_rng(seed)
    x = centres[rng.integers(clusters, size=n)] + 0.6 * rng.standard_normal((n, d))
    x = x.astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_default_nprobe_scales_with_depth_and_list_size():
    assert default_nprobe(5183, 287, 100) == 78  # 18 docs per list: ~14x100 documents probed
    assert default_nprobe(100_000, 1264, 100) == 79  # at least 1/16 of the lists
    assert default_nprobe(50, 28, 100) == 28  # never more than there are
    assert default_nprobe(10_000_000, 12649, 10) == 791


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_defaults_reach_095_recall_at_100(kind):
    docs, queries = clustered(20_000), clustered(200, seed=1)
    spec = DenseSpec(index=kind)
    _, exact = faiss.knn(queries, docs, 100, metric=faiss.METRIC_INNER_PRODUCT)
    d = docs.shape[1]
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, spec.M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = spec.ef_construction
        index.hnsw.efSearch = spec.ef_search
    else:
        nlist = int(4 * np.sqrt(len(docs)))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = 0
        index.train(docs)
        index.nprobe = spec.nprobe or default_nprobe(len(docs), nlist, 100)
    index.add(docs)
    _, approx = index.search(queries, 100)
    assert ann_recall(approx, exact) >= 0.95
