"""BM25 over a sparse matrix (bm25s, default) or rank-bm25 (the reference, slow).

Both backends share one analyzer: lowercase, ``\\w\\w+`` tokens, English stop words, Snowball
(Porter2) stemming through PyStemmer, so switching backend changes the engine and nothing else.
Defaults k1 = 0.9, b = 0.4 (Anserini/Pyserini's BEIR settings), Lucene's BM25 variant. Documents
that match no query term (score 0) are not returned, as Lucene does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run


class BM25Spec(SpecBase):
    type: Literal["bm25"] = "bm25"
    backend: Literal["bm25s", "rank_bm25"] = "bm25s"
    k1: float = Field(0.9, ge=0)
    b: float = Field(0.4, ge=0, le=1)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant (bm25s backend; rank_bm25 is always Okapi)"
    )
    stemmer: str | None = Field("english", description="PyStemmer language, or null for none")
    stopwords: str | None = Field("en", description="stop word list (bm25s names: en, ...), or null")
    threads: int = Field(0, ge=0, description="bm25s retrieval threads (0: in-process)")

    def build(self, ctx: BuildContext) -> BM25:
        return BM25(**self.model_dump(exclude={"type"}), show_progress=ctx.show_progress)


class BM25:
    """``Retriever`` over a corpus held in memory."""

    def __init__(
        self,
        backend: str = "bm25s",
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        stemmer: str | None = "english",
        stopwords: str | None = "en",
        threads: int = 0,
        show_progress: bool = True,
    ) -> None:
        self.name = "bm25" if backend == "bm25s" else f"bm25_{backend}"
        self.backend, self.k1, self.b, self.method = backend, k1, b, method
        self.stemmer_name, self.stopwords, self.threads = stemmer, stopwords, threads
        self.show_progress = show_progress
        self._stemmer = None
        if stemmer:
            import Stemmer

            self._stemmer = Stemmer.Stemmer(stemmer)
        self._doc_ids = np.empty(0, dtype=object)
        self._engine: Any = None

    def params(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.stemmer_name,
            "stopwords": self.stopwords,
        }

    def _tokenize(self, texts: list[str], progress: bool) -> list[list[str]]:
        import bm25s

        return bm25s.tokenize(
            texts,
            lower=True,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=progress and self.show_progress,
        )

    def index(self, corpus: Sequence[Document]) -> None:
        self._doc_ids = np.asarray([d.id for d in corpus], dtype=object)
        tokens = self._tokenize([d.content for d in corpus], progress=True)
        if self.backend == "bm25s":
            import bm25s

            engine = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            engine.index(tokens, show_progress=self.show_progress)
        else:
            from rank_bm25 import BM25Okapi

            # rank-bm25 divides by the corpus size; an empty document list is its own error
            engine = BM25Okapi([t or [""] for t in tokens], k1=self.k1, b=self.b)
        self._engine = engine

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._engine is None:
            raise RuntimeError("BM25.search called before index()")
        n_docs = len(self._doc_ids)
        kk = min(k, n_docs)
        tokens = self._tokenize([q.text for q in queries], progress=False)
        if self.backend == "bm25s":
            idx, scores = self._engine.retrieve(
                tokens, k=kk, n_threads=self.threads, show_progress=self.show_progress and len(queries) > 1
            )
            idx, scores = np.asarray(idx, dtype=np.int64), np.asarray(scores, dtype=np.float64)
        else:
            idx = np.empty((len(queries), kk), dtype=np.int64)
            scores = np.empty((len(queries), kk))
            for i, t in enumerate(tokens):
                s = self._engine.get_scores(t)
                top = np.argpartition(-s, kk - 1)[:kk] if kk < n_docs else np.arange(n_docs)
                idx[i], scores[i] = top, s[top]
        idx = np.where(scores > 0, idx, -1)
        return Run([q.id for q in queries], self._doc_ids, idx, scores, name=self.name)
