"""BM25 over a sparse matrix (bm25s, default) or rank-bm25 (the reference, slow).

Both backends share one analyzer: lowercase, ``\\w\\w+`` tokens, English stop words, Snowball
(Porter2) stemming through PyStemmer, so switching backend changes the engine and nothing else.
Defaults k1 = 0.9, b = 0.4 (Anserini/Pyserini's BEIR settings), Lucene's BM25 variant. Documents
that match no query term (score 0) are not returned, as Lucene does.

At a million documents the index is built the way bm25s is fastest and leanest: documents stream
from the corpus's columns into the tokenizer (no list of contents, no ``Document`` objects) and
the tokenizer hands bm25s token ids, not token strings (the string round trip cost ~15% of index
time and ~0.9 GB at 1M documents).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness import progress
from harness.filters import MaskCache, group_by_filter, has_filters
from harness.model import Corpus, Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run, id_rank
from retrievers.ties import cut_by_rule, top_k


class BM25Spec(SpecBase):
    type: Literal["bm25"] = "bm25"
    backend: Literal["bm25s", "rank_bm25"] = "bm25s"
    k1: float = Field(0.9, ge=0, le=1000, allow_inf_nan=False)
    b: float = Field(0.4, ge=0, le=1)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="BM25 variant (bm25s backend; rank_bm25 is always Okapi)"
    )
    stemmer: str | None = Field("english", description="PyStemmer language, or null for none")
    stopwords: str | None = Field("en", description="stop word list (bm25s names: en, ...), or null")
    threads: int = Field(0, ge=0, le=1024, description="bm25s retrieval threads (0: in-process)")

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
        self._masks: MaskCache | None = None
        self._corpus: Corpus | None = None
        self._rank: np.ndarray | None = None  # id_rank of _doc_ids, made at the first search
        self._encode_seconds = self._build_seconds = 0.0

    def params(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.stemmer_name,
            "stopwords": self.stopwords,
        }

    def _tokenize(self, texts: Iterable[str], *, ids: bool = False) -> Any:
        """Token strings per text, or (``ids=True``) bm25s's ``Tokenized(ids, vocab)``."""
        import bm25s

        return bm25s.tokenize(
            texts,  # type: ignore[arg-type]  # any iterable: bm25s only loops over it
            lower=True,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer,
            return_ids=ids,
            show_progress=False,
        )

    def analyse(self, texts: Iterable[str]) -> list[list[str]]:
        """Each text's tokens as this retriever indexes and searches them (lowercase, ``\\w\\w+``,
        stop words, stemmer): the words ``harness synth bias`` counts as shared by a question and
        its source, so its overlap is the overlap BM25 sees."""
        return [list(t) for t in self._tokenize(texts)]

    def index(self, corpus: Sequence[Document]) -> None:
        t0 = time.perf_counter()
        cols = Corpus.of(corpus)
        self._doc_ids, self._rank = cols.ids, None
        self._masks = MaskCache(cols)
        self._corpus = cols  # what add/delete rebuild from
        report = progress.current()
        report.phase("tokenizing docs", total=len(cols))
        contents = _reporting(cols.contents(), report)
        if self.backend == "bm25s":
            import bm25s

            tokenized = self._tokenize(contents, ids=True)
            t1 = time.perf_counter()
            report.phase("indexing bm25")
            if tokenized.vocab:
                engine = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
                engine.index(tokenized, show_progress=False)
            else:  # no document keeps a word after analysis: bm25s builds no index, and nothing can match
                engine = _Empty()
            del tokenized
        else:
            from rank_bm25 import BM25Okapi

            # rank-bm25 divides by the corpus size; an empty document list is its own error
            tokens = self._tokenize(contents)
            t1 = time.perf_counter()
            engine = BM25Okapi([t or [""] for t in tokens], k1=self.k1, b=self.b)
        self._engine = engine
        self._encode_seconds, self._build_seconds = t1 - t0, time.perf_counter() - t1

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._engine is None:
            raise RuntimeError("BM25.search called before index()")
        n_docs = len(self._doc_ids)
        kk = min(k, n_docs)
        tokens = self._tokenize([q.text for q in queries])
        if self._masks is None or not has_filters(queries):
            scores, idx = self._top(tokens, kk, None)
        else:
            # a query's filter zeroes the documents it excludes before the top k is taken: exact
            # filtered search (a zero score is never returned)
            idx = np.full((len(queries), kk), -1, dtype=np.int64)
            scores = np.zeros((len(queries), kk))
            for flt, rows in group_by_filter(queries):
                mask = None if flt is None else self._masks(flt)
                scores[rows], idx[rows] = self._top([tokens[i] for i in rows], kk, mask)
        idx = np.where(scores > 0, idx, -1)
        return Run([q.id for q in queries], self._doc_ids, idx, scores, name=self.name)

    def _top(self, tokens: list[list[str]], kk: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Scores and positions of each query's top ``kk`` by the ranking rule (:mod:`retrievers.ties`);
        a zero score is never returned."""
        if self.backend == "bm25s":
            return self._top_scored(tokens, kk, mask)

        def fetch(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
            idx, scores = self._retrieve([tokens[r] for r in rows], depth, mask)
            return scores, idx

        # past a tie at the kk-th score, cut_by_rule fetches deeper for the tied rows
        return cut_by_rule(fetch, len(tokens), kk, self._doc_ids, floor=0.0)

    def _top_scored(
        self, tokens: list[list[str]], kk: int, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """bm25s's scores of every document (``get_scores``: the scoring its ``retrieve`` runs before
        its own top k), cut by the rule (:func:`retrievers.ties.top_k`) in one pass per query.

        Why not bm25s's top k cut by :func:`~retrievers.ties.cut_by_rule`: a query whose ``kk``-th
        score ties the next one must then be scored again at twice the depth, and short queries over
        a large corpus tie often (470 of 1,000 synthetic queries at 300,000 documents: a second
        retrieve that cost 60% of the first). One scoring per query costs what bm25s's retrieve does."""
        n = len(tokens)
        idx = np.full((n, kk), -1, dtype=np.int64)
        scores = np.zeros((n, kk))
        if kk == 0:
            return scores, idx
        if self._rank is None:
            self._rank = id_rank(self._doc_ids)
        rank = self._rank
        weight = None if mask is None else mask.astype(np.float32)
        engine = self._engine

        def one(i: int) -> None:
            if not tokens[i]:
                return  # no term left after analysis: every score is zero, nothing is returned
            s = np.asarray(engine.get_scores(list(tokens[i]), weight_mask=weight))
            pos, top = top_k(np.where(s > 0, s.astype(np.float64), -np.inf), kk, rank)
            idx[i, : len(pos)], scores[i, : len(pos)] = pos, top

        if self.threads > 0 and n > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                list(pool.map(one, range(n)))
        else:
            for i in range(n):
                one(i)
        return scores, idx

    def _retrieve(self, tokens: list[list[str]], kk: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """rank-bm25's top ``kk`` positions and scores per tokenized query; ``mask`` (documents
        allowed) or None."""
        n_docs = len(self._doc_ids)
        idx = np.empty((len(tokens), kk), dtype=np.int64)
        scores = np.empty((len(tokens), kk))
        for i, t in enumerate(tokens):
            s = self._engine.get_scores(t)
            if mask is not None:
                s = np.where(mask, s, 0.0)
            top = np.argpartition(-s, kk - 1)[:kk] if kk < n_docs else np.arange(n_docs)
            idx[i], scores[i] = top, s[top]
        return idx, scores

    # -- the mutable protocol (harness.protocol.Mutable): ``harness stream`` --------------------
    # Every write rebuilds the index over the documents now held. BM25's idf and average length are
    # corpus-wide, so an index patched in place would score by stale statistics; a rebuild is exact
    # over what is visible by construction, and bm25s rebuilds SciFact's 5,183 documents in well
    # under a second (docs/streaming.md).

    def add(self, docs: Sequence[Document]) -> None:
        held = self._held()
        for d in docs:
            held[d.id] = d
        self._rebuild(held)

    def delete(self, ids: Sequence[str]) -> None:
        held = self._held()
        for i in ids:
            held.pop(i, None)
        self._rebuild(held)

    def update(self, docs: Sequence[Document]) -> None:
        self.add(docs)  # same ids: the new version replaces the old one in the rebuilt index

    def _held(self) -> dict[str, Document]:
        return {} if self._corpus is None else {d.id: d for d in self._corpus}

    def _rebuild(self, held: dict[str, Document]) -> None:
        # search reads _engine and _doc_ids: the new index is built aside, then both are replaced
        fresh = BM25(self.backend, self.k1, self.b, self.method, self.stemmer_name, self.stopwords, self.threads,
                     show_progress=False)  # fmt: skip
        if held:
            fresh.index(list(held.values()))
        self._corpus, self._masks, self._doc_ids, self._rank, self._engine = (
            fresh._corpus, fresh._masks, fresh._doc_ids, None, fresh._engine if held else _Empty()
        )  # fmt: skip

    def efficiency_extra(self, k: int) -> dict[str, Any]:
        """Cost figures named as dense's: BM25 embeds nothing, so ``encode_seconds`` is None (the
        table shows –); ``build_seconds`` is tokenizing the corpus and building the index from the
        tokens; nothing is cached."""
        return {
            "encode_seconds": None,
            "build_seconds": self._encode_seconds + self._build_seconds,
            "cache_hit_rate": None,
        }


class _Empty:
    """The index of no documents (every one deleted), or of documents that hold no word the analyzer
    keeps (all stop words, empty texts): bm25s cannot build one, and every score is zero."""

    def retrieve(self, tokens: list[list[str]], k: int, **_: Any) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((len(tokens), 0), dtype=np.int64), np.zeros((len(tokens), 0))

    def get_scores(self, tokens: list[str], weight_mask: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(0)


def _reporting(texts: Iterator[str], report: progress.Progress, every: int = 8192) -> Iterator[str]:
    """``texts`` passed through, advancing the progress display every ``every`` items."""
    n = 0
    for t in texts:
        yield t
        n += 1
        if n == every:
            report.advance(n)
            n = 0
    if n:
        report.advance(n)
