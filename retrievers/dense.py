"""Dense retrieval: sentence-transformers embeddings in a FAISS inner-product index.

Embeddings are L2-normalised, so inner product = cosine. ``index: flat`` is exact search;
``hnsw`` and ``ivf`` are approximate, and their recall@k against exact search is reported in
the run's efficiency figures (FAISS contrib/evaluation's way of measuring ANN quality).
Queries are never read from the cache: their encoding is part of the latency being measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from retrievers.encoder import DEFAULT_MODEL, Encoder


class DenseSpec(SpecBase):
    type: Literal["dense"] = "dense"
    model: str = Field(DEFAULT_MODEL, description="sentence-transformers hub name or local path")
    batch_size: int = Field(64, ge=1)
    max_length: int | None = Field(None, ge=8, description="max tokens per text (default: the model's)")
    normalize: bool = True
    index: Literal["flat", "hnsw", "ivf"] = "flat"
    M: int = Field(32, ge=4, description="hnsw: links per node")
    ef_construction: int = Field(200, ge=8)
    ef_search: int = Field(128, ge=1)
    nlist: int | None = Field(None, ge=1, description="ivf: clusters (default 4*sqrt(n))")
    nprobe: int = Field(8, ge=1)
    threads: int | None = Field(None, ge=1, description="torch and FAISS threads")
    device: str = "cpu"
    doc_prefix: str = ""
    query_prefix: str = ""

    def build(self, ctx: BuildContext) -> Dense:
        return Dense(self, cache_dir=ctx.cache_dir, show_progress=ctx.show_progress, seed=ctx.seed)


class Dense:
    """``Retriever`` with a FAISS index over document embeddings."""

    def __init__(
        self,
        spec: DenseSpec | None = None,
        *,
        cache_dir: Any = None,
        show_progress: bool = True,
        seed: int = 0,
        **overrides: Any,
    ) -> None:
        self.spec = (spec or DenseSpec()).model_copy(update=overrides)
        self.name = "dense"
        self.show_progress, self.seed = show_progress, seed
        s = self.spec
        self.encoder = Encoder(
            s.model,
            max_length=s.max_length,
            batch_size=s.batch_size,
            normalize=s.normalize,
            device=s.device,
            threads=s.threads,
            cache_dir=cache_dir,
            show_progress=show_progress,
            doc_prefix=s.doc_prefix,
            query_prefix=s.query_prefix,
        )
        self._doc_ids = np.empty(0, dtype=object)
        self._index: Any = None
        self._flat: Any = None
        self._last_queries: np.ndarray | None = None

    def params(self) -> dict[str, Any]:
        return {**self.spec.model_dump(exclude={"type"}), "encoder": self.encoder.identity}

    def index(self, corpus: Sequence[Document]) -> None:
        import faiss

        if self.spec.threads:
            faiss.omp_set_num_threads(self.spec.threads)
        self._doc_ids = np.asarray([d.id for d in corpus], dtype=object)
        emb = np.ascontiguousarray(self.encoder.encode_documents(corpus), dtype=np.float32)
        d = emb.shape[1] if emb.ndim == 2 and emb.shape[0] else self.encoder.dim
        s = self.spec
        metric = faiss.METRIC_INNER_PRODUCT
        if s.index == "flat" or len(corpus) < 2:
            index = faiss.IndexFlatIP(d)
        elif s.index == "hnsw":
            index = faiss.IndexHNSWFlat(d, s.M, metric)
            index.hnsw.efConstruction = s.ef_construction
            index.hnsw.efSearch = s.ef_search
        else:
            nlist = s.nlist or max(1, int(4 * np.sqrt(len(corpus))))
            nlist = min(nlist, len(corpus))
            quantizer = faiss.IndexFlatIP(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, metric)
            index.cp.seed = self.seed
            index.train(emb)
            index.nprobe = min(s.nprobe, nlist)
        index.add(emb)
        self._index = index
        self._flat = None
        if s.index != "flat":
            flat = faiss.IndexFlatIP(d)
            flat.add(emb)
            self._flat = flat

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._index is None:
            raise RuntimeError("Dense.search called before index()")
        q = np.ascontiguousarray(
            self.encoder.encode_queries(queries, use_cache=False, progress=len(queries) > 1), dtype=np.float32
        )
        kk = min(k, len(self._doc_ids))
        if kk == 0 or not len(queries):
            return Run(
                [x.id for x in queries],
                self._doc_ids,
                np.full((len(queries), 0), -1),
                np.zeros((len(queries), 0)),
                name=self.name,
            )
        scores, idx = self._index.search(q, kk)
        if len(queries) > 1:
            self._last_queries = q
        return Run(
            [x.id for x in queries], self._doc_ids, idx.astype(np.int64), scores.astype(np.float64), name=self.name
        )

    def efficiency_extra(self, k: int) -> dict[str, float]:
        """ANN recall@k against exact search, on the last batch of queries (approximate indexes only)."""
        if self._flat is None or self._last_queries is None:
            return {}
        kk = min(k, len(self._doc_ids))
        _, approx = self._index.search(self._last_queries, kk)
        _, exact = self._flat.search(self._last_queries, kk)
        overlap = [len(set(a[a >= 0]) & set(e[e >= 0])) / max(1, int((e >= 0).sum())) for a, e in zip(approx, exact)]
        return {f"ann_recall@{kk}": float(np.mean(overlap))}
