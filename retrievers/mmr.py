"""MMR stage: re-order the top of another retriever's ranking for diversity.

``dense_mmr: {type: mmr, of: dense, lambda: 0.7, top_n: 100}``. The top ``top_n`` documents of
the input ranking are re-ordered by :func:`harness.mmr.mmr_order`; the tail below ``top_n``
keeps its order. Similarity between documents is the cosine of their embeddings (the default
dense model, through the embedding cache, so documents the dense retriever encoded are not
encoded again). Relevance is either the cosine of query and document embeddings
(``relevance: embedding``) or the input run's scores min-max normalised per query over the
candidates (``relevance: scores``), which keeps a cross-encoder's or BM25's judgement.

Output scores are ``n, n-1, ..., 1`` in the new order: strictly decreasing, so the run's
canonical sort (score desc, ties by doc id) keeps the MMR order exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from harness.errors import InputError
from harness.mmr import mmr_order
from harness.model import Corpus, Document, Query
from harness.registry import BuildContext
from harness.run import PAD, Run
from retrievers.encoder import DEFAULT_MODEL, EncoderOptions


class MMRSpec(EncoderOptions):
    # `lambda` is a Python keyword: the field is lambda_, spelled `lambda` in configs and dumps
    model_config = ConfigDict(serialize_by_alias=True)

    type: Literal["mmr"] = "mmr"
    of: str = Field(description="the retriever or stage whose ranking is re-ordered")
    lambda_: float = Field(0.7, alias="lambda", ge=0.0, le=1.0, description="1 = relevance only, 0 = novelty only")
    top_n: int = Field(100, ge=1, le=100_000, description="how many of the input's top documents are re-ordered")
    relevance: Literal["embedding", "scores"] = Field(
        "embedding", description="cosine of query and document embeddings, or the input's min-max normalised scores"
    )
    model: str = Field(DEFAULT_MODEL, description="sentence-transformers model for the embeddings")
    batch_size: int = Field(64, ge=1, le=65_536)
    max_length: int | None = Field(None, ge=8, le=100_000, description="max tokens per text (default: the model's)")
    device: str = "cpu"

    def inputs(self) -> list[str]:
        return [self.of]

    def build(self, ctx: BuildContext) -> MMR:
        return MMR(self, cache_dir=ctx.cache_dir, show_progress=ctx.show_progress)


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores mapped onto [0, 1]; all equal -> all 1 (equally relevant; MMR then breaks ties by rank)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi == lo:
        return np.ones_like(scores)
    return (scores - lo) / (hi - lo)


class MMR:
    """``Stage``: MMR over the top ``top_n`` of one input run."""

    def __init__(
        self, spec: MMRSpec | None = None, *, cache_dir: Any = None, show_progress: bool = True, **overrides: Any
    ) -> None:
        base = spec or MMRSpec(of=overrides.pop("of", ""))
        self.spec = base.model_copy(update=overrides)
        self.name = "mmr"
        s = self.spec
        self.encoder = s.make_encoder(cache_dir, show_progress, normalize=True)
        self._indexed = False
        self._corpus = Corpus([], [])
        self._pos: dict[str, int] = {}
        self._vocab: tuple[np.ndarray, np.ndarray] | None = None
        self._row = np.empty(0, dtype=np.int64)
        self._store = np.empty((0, 0), dtype=np.float32)
        self._stored = 0

    def params(self) -> dict[str, Any]:
        return {
            **self.spec.model_dump(exclude={"type"}),
            "encoder": self.encoder.identity,
            "encoding": self.encoder.computing,
        }

    def index(self, corpus: Sequence[Document]) -> None:
        """Keep the corpus; documents are embedded when they first appear among the candidates."""
        self._indexed = True
        self._corpus = Corpus.of(corpus)
        self._pos = dict(zip(self._corpus.ids.tolist(), range(len(self._corpus))))
        self._vocab = None
        self._row = np.full(len(self._corpus), -1, dtype=np.int64)
        self._store = np.empty((0, 0), dtype=np.float32)
        self._stored = 0

    # ------------------------------------------------------------------ embeddings
    def _corpus_positions(self, run: Run) -> np.ndarray:
        """Run vocabulary index -> corpus position (-1 when the corpus lacks the doc); cached per vocabulary."""
        if self._vocab is None or self._vocab[0] is not run.doc_ids:
            mapping = np.fromiter((self._pos.get(d, -1) for d in run.doc_ids), dtype=np.int64, count=len(run.doc_ids))
            self._vocab = (run.doc_ids, mapping)
        return self._vocab[1]

    def _doc_vectors(self, pos: np.ndarray) -> np.ndarray:
        """Embeddings of corpus positions ``pos``; each document is encoded (or read from the cache) once."""
        missing = np.unique(pos[self._row[pos] < 0])
        if missing.size:
            enc = self.encoder
            texts = [enc.doc_prefix + self._corpus.content(i) for i in missing.tolist()]
            vecs = enc.encode(texts, progress=missing.size > 256, what="docs")
            need = self._stored + len(missing)
            if self._store.shape[0] < need:
                grown = np.empty((max(need, 2 * self._store.shape[0]), vecs.shape[1]), dtype=np.float32)
                if self._stored:
                    grown[: self._stored] = self._store[: self._stored]
                self._store = grown
            self._store[self._stored : need] = vecs
            self._row[missing] = np.arange(self._stored, need)
            self._stored = need
        return self._store[self._row[pos]]

    # ------------------------------------------------------------------ stage
    def transform(self, runs: Sequence[Run], queries: Sequence[Query], k: int) -> Run:
        if len(runs) != 1:
            raise InputError(f"mmr re-orders one input run, got {len(runs)}", field="of")
        if not self._indexed:
            raise RuntimeError("MMR.transform called before index()")
        run = runs[0]
        s = self.spec
        to_corpus = self._corpus_positions(run)
        used = run.indices[:, : s.top_n]
        used = used[used >= 0]
        bad = used[to_corpus[used] < 0]
        if bad.size:
            raise InputError(
                f"doc {run.doc_ids[bad[0]]!r} of input {s.of!r} is not in the corpus; MMR needs its text", field="of"
            )
        # one encoder call for the whole batch (documents, then queries)
        if used.size:
            self._doc_vectors(to_corpus[np.unique(used)])
        qvec: dict[str, np.ndarray] = {}
        if s.relevance == "embedding":
            by_id = {q.id: q for q in queries}
            wanted = [q for q, n in zip(run.query_ids, run.lengths) if n > 0]
            missing = [q for q in wanted if q not in by_id]
            if missing:
                raise InputError(f"input run has query {missing[0]!r}, which was not given to transform()")
            qs = [by_id[q] for q in wanted]
            # the dense retriever's query embeddings, when it ran first: the memo is shared
            mat = self.encoder.encode_queries(qs, progress=len(qs) > 1) if qs else None
            qvec = {q.id: mat[i] for i, q in enumerate(qs)} if mat is not None else {}

        depth = min(run.depth, k)
        idx = np.full((len(run), depth), PAD, dtype=np.int64)
        sc = np.full((len(run), depth), -np.inf)
        for i, qid in enumerate(run.query_ids):
            n = int(run.lengths[i])
            if n == 0:
                continue
            m = min(n, s.top_n)
            cand = run.indices[i, :m]
            vecs = self._doc_vectors(to_corpus[cand]).astype(np.float64)
            if s.relevance == "embedding":
                rel = vecs @ qvec[qid].astype(np.float64)
            else:
                rel = minmax(run.scores[i, :m])
            order = mmr_order(rel, vecs @ vecs.T, s.lambda_)
            ranked = np.concatenate([cand[order], run.indices[i, m:n]])[:depth]
            idx[i, : len(ranked)] = ranked
            sc[i, : len(ranked)] = np.arange(n, n - len(ranked), -1, dtype=np.float64)
        return Run(run.query_ids, run.doc_ids, idx, sc, name=self.name)
