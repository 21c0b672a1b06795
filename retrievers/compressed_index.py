"""Compressed exact-search indexes for the dense retriever: float16, int8 or binary codes, with the
top ``rescore`` candidates re-scored with the float32 vectors.

- ``float16`` / ``int8``: FAISS ``IndexScalarQuantizer`` (QT_fp16: 2 bytes a dimension; QT_8bit:
  1 byte, each dimension's range trained on the corpus), inner product.
- ``binary``: one sign bit per dimension (``x > 0``) in a FAISS ``IndexBinaryFlat`` searched by Hamming
  distance: 1/32 of float32's bytes. Candidates ranked by Hamming distance score
  ``1 - 2 * hamming / bits`` (the cosine of the two sign vectors) unless re-scored.

Re-scoring (``rescore: N``): the top ``max(N, depth)`` candidates by the compressed codes are ranked
again by the exact inner product of the float32 query and document vectors, and the top ``depth`` kept.
The float vectors are kept beside the index (reported apart from it as
``rescore_bytes``); a deployment would keep them on disk and read only the N rows per query, as the
sentence-transformers embedding-quantization guide describes.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

Precision = Literal["float32", "float16", "int8", "binary"]


def binary_codes(x: np.ndarray) -> np.ndarray:
    """Sign bits of each row, packed 8 to a byte (the last byte zero-padded): ``(n, ceil(d / 8))`` uint8."""
    return np.packbits(np.asarray(x) > 0, axis=1)


class CompressedIndex:
    """Exact search over compressed codes of L2-normalised (or any) float32 vectors, inner product."""

    def __init__(self, vectors: np.ndarray, precision: Precision, *, rescore: int | None = None) -> None:
        import faiss

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.precision, self.rescore = precision, rescore
        self.n, self.dim = vectors.shape
        self._float = vectors if rescore else None
        if precision == "binary":
            self.bits = 8 * -(-self.dim // 8)
            self.index: Any = faiss.IndexBinaryFlat(self.bits)
            if self.n:
                self.index.add(binary_codes(vectors))
        elif precision in ("float16", "int8"):
            qt = faiss.ScalarQuantizer.QT_fp16 if precision == "float16" else faiss.ScalarQuantizer.QT_8bit
            self.index = faiss.IndexScalarQuantizer(self.dim, qt, faiss.METRIC_INNER_PRODUCT)
            if self.n:
                self.index.train(vectors)
                self.index.add(vectors)
        elif precision == "float32":
            self.index = faiss.IndexFlatIP(self.dim)
            if self.n:
                self.index.add(vectors)
        else:
            raise ValueError(f"unknown precision {precision!r}")

    @property
    def index_bytes(self) -> int:
        """Bytes of the codes (what the index holds per document, times documents)."""
        return int(self.index.code_size) * int(self.index.ntotal)

    @property
    def float32_bytes(self) -> int:
        """What a flat float32 index of the same vectors holds."""
        return 4 * self.n * self.dim

    @property
    def rescore_bytes(self) -> int:
        """The float32 vectors kept for re-scoring (0 without re-scoring)."""
        return 0 if self._float is None else int(self._float.nbytes)

    def candidates(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, ids)`` of the top ``k`` by the compressed codes alone."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if self.precision == "binary":
            dist, ids = self.index.search(binary_codes(q), k)
            return 1.0 - 2.0 * dist.astype(np.float32) / self.bits, ids
        return self.index.search(q, k)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, ids)``, ``k`` per query (``-1`` ids where the index holds fewer); with ``rescore``,
        the top ``max(k, rescore)`` candidates re-ranked by the float32 inner product."""
        k = min(k, self.n)
        if self._float is None or not self.n or k == 0:
            return self.candidates(queries, k)
        q = np.ascontiguousarray(queries, dtype=np.float32)
        depth = min(self.n, max(k, int(self.rescore or 0)))
        _, cand = self.candidates(q, depth)
        exact = np.empty(cand.shape, dtype=np.float32)
        for s in range(0, len(q), 64):  # 64 queries' candidate rows at a time
            c = cand[s : s + 64]
            exact[s : s + 64] = np.einsum("qd,qkd->qk", q[s : s + 64], self._float[np.where(c >= 0, c, 0)])
        exact[cand < 0] = -np.inf
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(exact, order, axis=1), np.take_along_axis(cand, order, axis=1)
