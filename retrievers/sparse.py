"""Learned sparse retrieval (SPLADE): a masked-language model's vocabulary weights in an exact
inverted index.

```yaml
splade: {type: splade, model: PATH_OR_HUB_NAME, doc_max_length: 256, query_max_length: 64}
```

A sentence-transformers ``SparseEncoder`` (an MLM head and SPLADE max pooling) maps a text to one
weight per vocabulary entry, ``log(1 + relu(logit))`` maxed over its tokens; most are zero. A
document's score for a query is the dot product of the two vectors, so the index is an inverted
index: for each vocabulary entry, the documents that weigh it. Search is exact: every posting of
every query term is added up, in float64 (``np.bincount``), and the top k is cut with the harness's
ranking rule (:func:`retrievers.ties.top_k`).

Documents are encoded by the pipeline dense uses (:mod:`retrievers.encode_pipeline`: tokenization
on a thread ahead of the model, length-sorted batches), the model's output pruned exactly as the
library prunes it (``max_active_dims``) and stored as CSR rows in :class:`SparseRowCache`, keyed by
the weights digest, ``doc_max_length``, ``max_active_dims`` and the document prompt, so a changed
configuration never reuses a stale row. Queries are encoded by ``SparseEncoder.encode_query``, once
per run (memoised, as dense's are), so latency and qps measure the search; the encoding is its own
figure, ``query_encode_ms``.

``max_active_dims`` keeps only the N largest weights of each text: smaller index, faster search,
*lossy* (scores change, and so may the ranking). Left out, the model's own setting applies (none
for most SPLADE models).

The index changes in place through the mutable protocol (``add``, ``delete``, ``update``:
``harness stream``): added documents' rows in appended segments, deleted positions masked, segments
merged when they grow (:meth:`Splade._merge_when_due`), exact after any writes.

Cost columns: ``index_nnz`` (non-zeros in the index), ``index_mb`` (its CSR arrays),
``encode_docs_per_s``, ``encode_seconds``, ``build_seconds``, ``cache_hit_rate``,
``query_encode_ms``. docs/sparse.md has the measured figures.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness import progress as harness_progress
from harness.cache import CHECKPOINT_S, CHUNK_ROWS, digest, text_key
from harness.errors import InputError
from harness.model import Corpus, Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from retrievers.encode_pipeline import EncodeCosts, PipelineStats, encode_stream
from retrievers.encoder import _featurizer
from retrievers.held import HeldDocs
from retrievers.learned import (
    LearnedRetriever,
    architectures,
    load_encoder,
    prompt_of,
    require_sentence_transformers,
    resolve_location,
)
from retrievers.sparse_cache import SparseRowCache

log = logging.getLogger("harness")

#: segments of added documents searched beside the base index before they are merged into it
MAX_SEGMENTS = 8

WHAT_IT_NEEDS = (
    "splade needs a SPLADE model: a SparseEncoder folder (MLM head + SPLADE pooling) or a fill-mask "
    "(…ForMaskedLM) checkpoint"
)


class SpladeSpec(SpecBase):
    type: Literal["splade"] = "splade"
    model: str = Field(description="SparseEncoder folder or hub name (a fill-mask model with SPLADE pooling)")
    query_max_length: int | None = Field(
        None, ge=4, le=100_000, description="max tokens per query (default: the model's)"
    )
    doc_max_length: int | None = Field(
        None, ge=4, le=100_000, description="max tokens per document (default: the model's)"
    )
    max_active_dims: int | None = Field(
        None, ge=1, le=10_000_000, description="keep the N largest weights per text (lossy; default: the model's)"
    )
    batch_size: int = Field(32, ge=1, le=65_536)
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, le=1024, description="torch threads")

    def preflight(self, config_dir: Path) -> None:
        super().preflight(config_dir)
        require_sentence_transformers("sparse", "splade retrievers")
        check_fill_mask(resolve_location(self.model, config_dir))

    def build(self, ctx: BuildContext) -> Splade:
        return Splade(self, cache_dir=ctx.cache_dir, config_dir=ctx.config_dir, show_progress=ctx.show_progress)


def check_fill_mask(location: str) -> None:
    """A local folder must be a fill-mask model (a SparseEncoder folder or an ``…ForMaskedLM``
    checkpoint): a sentence-embedding model has no vocabulary head, and would fail, or rank at
    random, after minutes of loading. A hub name is checked when it loads."""
    folder = Path(location)
    if not folder.is_dir():
        return
    arch = architectures(folder)
    if not (folder / "config.json").is_file():
        raise InputError(f"{folder} is not a model folder (no config.json); {WHAT_IT_NEEDS}", field="model")
    if not any(a.endswith("ForMaskedLM") for a in arch):
        shown = ", ".join(arch) or "none"
        raise InputError(
            f"{folder} is not a fill-mask model (config.json architectures: {shown}); {WHAT_IT_NEEDS}", field="model"
        )
    try:  # a saved model of another kind (a MultiVectorEncoder over an MLM) would be converted, not loaded
        kind = json.loads((folder / "config_sentence_transformers.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        kind = None
    if kind not in (None, "SparseEncoder"):
        raise InputError(f"{folder} is a saved {kind}, not a SparseEncoder; {WHAT_IT_NEEDS}", field="model")


@cache
def load_sparse_encoder(location: str, device: str = "cpu") -> Any:
    """One ``SparseEncoder`` per (location, device) per process."""
    from sentence_transformers import SparseEncoder

    return load_encoder(SparseEncoder, location, device)


def to_csr(tensor: Any, width: int) -> Any:
    """A torch sparse (COO) or dense 2-D tensor as a scipy CSR matrix of float32."""
    import scipy.sparse as sp

    if getattr(tensor, "is_sparse", False):
        t = tensor.coalesce().cpu()
        idx = t.indices().numpy()
        vals = t.values().float().numpy()
        return sp.csr_matrix((vals, (idx[0], idx[1])), shape=(t.shape[0], width), dtype=np.float32)
    return sp.csr_matrix(np.asarray(tensor.float().cpu().numpy(), dtype=np.float32))


class _SparseHead:
    """The model as the pipeline calls it: ``head(features)["sentence_embedding"]``, pruned to
    ``max_active_dims`` by the library's own function (ties at the cut fall as they fall there)."""

    def __init__(self, model: Any, max_active_dims: int | None, task: str) -> None:
        self.model, self.max_active_dims, self.task = model, max_active_dims, task

    def parameters(self) -> Iterator[Any]:
        return self.model.parameters()

    def eval(self) -> _SparseHead:
        self.model.eval()
        return self

    def __call__(self, features: dict[str, Any]) -> dict[str, Any]:
        from sentence_transformers.util.tensor import select_max_active_dims

        kwargs: dict[str, Any] = {"task": self.task}
        if self.max_active_dims is not None:
            kwargs["max_active_dims"] = self.max_active_dims
        emb = self.model(features, **kwargs)["sentence_embedding"]
        if self.max_active_dims is not None:
            emb = select_max_active_dims(emb, max_active_dims=self.max_active_dims)
        return {"sentence_embedding": emb}


class InvertedIndex:
    """Documents' sparse rows by vocabulary entry (CSC of the document matrix): the postings of a
    term are the documents that weigh it. Scores are exact dot products, summed in float64."""

    def __init__(self, docs: Any) -> None:
        self.n_docs, self.width = docs.shape
        csc = docs.tocsc()
        csc.sort_indices()
        self.indptr = csc.indptr.astype(np.int64)
        self.indices = csc.indices.astype(np.int32)
        self.data = csc.data.astype(np.float32)

    @property
    def nnz(self) -> int:
        return len(self.data)

    def matrix(self) -> Any:
        """The documents' rows back as a scipy CSC matrix (documents x vocabulary), no copy."""
        import scipy.sparse as sp

        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=(self.n_docs, self.width))

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    def scores(self, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """float64 dot product of the query (``terms``, ``weights``) with every document."""
        starts, ends = self.indptr[terms], self.indptr[terms + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(self.n_docs)
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        contrib = self.data[offsets].astype(np.float64) * np.repeat(np.asarray(weights, dtype=np.float64), lengths)
        return np.bincount(self.indices[offsets], weights=contrib, minlength=self.n_docs)


class Splade(LearnedRetriever):
    """``Retriever`` over SPLADE vectors in an exact inverted index."""

    name = "splade"
    spec: SpladeSpec

    def _load(self) -> None:
        spec = self.spec
        check_fill_mask(self.location)
        self.model = load_sparse_encoder(self.location, spec.device)
        self.width = output_width(self.model)
        default_length = int(self.model.max_seq_length or 512)
        self.doc_max_length = spec.doc_max_length or default_length
        self.query_max_length = spec.query_max_length or default_length
        self._default_length = default_length
        self.max_active_dims = spec.max_active_dims or getattr(self.model, "max_active_dims", None)
        self.doc_prompt = prompt_of(self.model, ("document", "passage", "corpus"))
        self._cache: SparseRowCache | None = None
        self.pipeline = PipelineStats()
        self._index: InvertedIndex | None = None
        self._segments: list[InvertedIndex] = []
        self._held: HeldDocs | None = None
        self._costs = EncodeCosts()

    # ------------------------------------------------------------------ identity and cache
    def row_settings(self) -> dict[str, Any]:
        return dict(doc_max_length=self.doc_max_length, max_active_dims=self.max_active_dims,
                    doc_prompt=self.doc_prompt, width=self.width)  # fmt: skip

    @property
    def cache(self) -> SparseRowCache | None:
        if self._cache is None and self._cache_dir is not None:
            ident = self.identity
            self._cache = SparseRowCache(
                self._cache_dir, digest(ident), {**ident, "model": self.spec.model}, width=self.width
            )
        return self._cache

    def params(self) -> dict[str, Any]:
        """The spec as written, where the model was found, the lengths and pruning it resolved to (the
        row settings, as the cache key has them), and the identity itself."""
        resolved = {"location": self.location, "query_max_length": self.query_max_length, **self.row_settings()}
        return {**self.spec.model_dump(exclude={"type"}), **resolved, "identity": self.identity}

    # ------------------------------------------------------------------ documents
    def encode_documents(self, texts: Sequence[str], *, progress: bool = False) -> Any:
        """CSR rows (float32, width = vocabulary) of ``texts``, in order: cached rows read, the rest
        encoded by the pipeline and committed as they come."""
        import scipy.sparse as sp

        keys = [text_key(t) for t in texts]
        c = self.cache
        if c is not None:
            found, cached = c.get(keys)
        else:
            found, cached = np.zeros(len(texts), dtype=bool), sp.csr_matrix((0, self.width), dtype=np.float32)
        first: dict[str, int] = {}
        todo = [i for i in np.flatnonzero(~found).tolist() if first.setdefault(keys[i], i) == i]
        pieces, where = [cached], [np.flatnonzero(found)]
        pending: list[tuple[np.ndarray, Any]] = []
        since = time.monotonic()
        report = harness_progress.current() if progress else None
        if report is not None and found.any():
            report.advance(int(found.sum()))
        for positions, rows in self._stream([texts[i] for i in todo]):
            at = np.asarray(todo, dtype=np.int64)[positions]
            pieces.append(rows)
            where.append(at)
            pending.append((at, rows))
            if report is not None:
                report.advance(len(at))
            if c is not None and (
                sum(len(p[0]) for p in pending) >= CHUNK_ROWS or time.monotonic() - since >= CHECKPOINT_S
            ):
                self._commit(pending, keys)
                pending, since = [], time.monotonic()
        if c is not None:
            self._commit(pending, keys)
        stacked = sp.vstack(pieces, format="csr")
        positions = np.concatenate(where)
        # duplicate texts computed once: their other positions take the first one's row
        dup = [i for i in np.flatnonzero(~found).tolist() if first[keys[i]] != i]
        if dup:
            src = {int(p): j for j, p in enumerate(positions.tolist())}
            extra = stacked[[src[first[keys[i]]] for i in dup]]
            stacked = sp.vstack([stacked, extra], format="csr")
            positions = np.concatenate([positions, np.asarray(dup, dtype=np.int64)])
        out = stacked[np.argsort(positions, kind="stable")]
        return out.astype(np.float32)

    def _commit(self, pending: list[tuple[np.ndarray, Any]], keys: list[str]) -> None:
        import scipy.sparse as sp

        if not pending or self.cache is None:
            return
        at = np.concatenate([p[0] for p in pending])
        self.cache.put([keys[i] for i in at.tolist()], sp.vstack([p[1] for p in pending], format="csr"))

    def _stream(self, texts: list[str]) -> Iterator[tuple[np.ndarray, Any]]:
        """The pipeline over ``texts``: ``(positions, CSR rows)`` per batch, in length order."""
        import scipy.sparse as sp

        if not texts:
            return
        model = self.model
        model.max_seq_length = self.doc_max_length
        prompt = self.doc_prompt or ""
        head = _SparseHead(model, self.max_active_dims, "document")
        s0 = self.pipeline.seconds
        try:
            for positions, rows in encode_stream(
                head,
                [prompt + t for t in texts] if prompt else texts,
                featurizer=_featurizer(model, self.doc_max_length),
                batch_size=self.spec.batch_size,
                normalize=False,
                stats=self.pipeline,
            ):
                yield positions, sp.csr_matrix(rows, dtype=np.float32)
        finally:
            self._costs.encode_seconds += self.pipeline.seconds - s0
            model.max_seq_length = self._default_length

    def index(self, corpus: Sequence[Document]) -> None:
        cols = Corpus.of(corpus)
        c = self.cache
        h0, m0 = (c.hits, c.misses) if c is not None else (0, 0)
        p0 = replace(self.pipeline)  # a copy: what the pipeline had before
        self._costs.encode_seconds = 0.0
        report = harness_progress.current() if self.show_progress else None
        if report is not None:
            report.phase("encoding docs", total=len(cols))
        docs = self.encode_documents(list(cols.contents("")), progress=report is not None)
        t0 = time.perf_counter()
        self._index, self._segments, self._held = InvertedIndex(docs), [], HeldDocs(cols)
        self._costs.build_seconds = time.perf_counter() - t0
        if c is not None:
            looked = (c.hits - h0) + (c.misses - m0)
            self._costs.cache_hit_rate = (c.hits - h0) / looked if looked else None
        self._costs.pipeline_since(self.pipeline, p0)

    # ------------------------------------------------------------------ queries
    def encode_queries(self, queries: Sequence[Query], *, use_memo: bool = True) -> Any:
        """CSR rows of the queries (``SparseEncoder.encode_query``: its prompt, ``query_max_length``,
        ``max_active_dims``), memoised per text for the run."""
        import scipy.sparse as sp

        texts = [q.text for q in queries]
        todo = [i for i, t in enumerate(texts) if not (use_memo and t in self._memo)]
        if todo:
            model = self.model
            model.max_seq_length = self.query_max_length
            t0 = time.perf_counter()
            try:
                emb = model.encode_query(
                    [texts[i] for i in todo],
                    batch_size=self.spec.batch_size,
                    max_active_dims=self.max_active_dims,
                    convert_to_tensor=True,
                    convert_to_sparse_tensor=True,
                    show_progress_bar=False,
                )
            finally:
                model.max_seq_length = self._default_length
            took = time.perf_counter() - t0
            self._costs.encode_seconds += took
            if len(todo) > 1:
                self._costs.query_encode_ms = 1000 * took / len(todo)
            rows = to_csr(emb, self.width)
            if not use_memo:
                return rows
            for j, i in enumerate(todo):
                self._memo[texts[i]] = rows[j]
        if not texts:
            return sp.csr_matrix((0, self.width), dtype=np.float32)
        return sp.vstack([self._memo[t] for t in texts], format="csr")

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self._index is None or self._held is None:
            raise RuntimeError("Splade.search called before index()")
        q = self.encode_queries(queries, use_memo=self._use_memo)

        def score_rows(rows: list[int]) -> Iterator[tuple[int, np.ndarray]]:
            for r in rows:
                lo, hi = q.indptr[r], q.indptr[r + 1]
                yield r, self._scores(q.indices[lo:hi].astype(np.int64), q.data[lo:hi])

        return self._held.top_k(queries, k, score_rows, self.name)

    def _scores(self, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """float64 scores of every position: the base index's, then each segment's."""
        parts = [ix.scores(terms, weights) for ix in (self._index, *self._segments) if ix is not None]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def efficiency_extra(self, k: int) -> dict[str, Any]:
        """What the run cost besides search: ``encode_seconds`` (documents and queries encoded, cache
        reads excluded), ``build_seconds`` (the inverted index), ``cache_hit_rate``,
        ``encode_docs_per_s`` and ``encode_wait_share`` (the pipeline; None when every row was
        cached), ``query_encode_ms``, and the index's size as held: ``index_nnz`` (non-zero weights)
        and ``index_mb`` (its CSC arrays), segments added since the last merge and the rows of
        deleted documents not merged away yet included."""
        out = self._costs.extra()
        held = [ix for ix in (self._index, *self._segments) if ix is not None]
        if held:
            out["index_nnz"] = sum(ix.nnz for ix in held)
            out["index_mb"] = sum(ix.nbytes for ix in held) / 2**20
        return out

    # ------------------------------------------------------------------ the mutable protocol
    # ``harness stream`` writes through add / delete / update (harness.protocol.Mutable). An added
    # document's row comes from encode_documents (so the row cache serves a text seen before) into a
    # new segment: an InvertedIndex of its own, searched after the base, its positions following the
    # base's. A deleted document keeps its row, marked dead in HeldDocs (its score is discarded).
    # Scores are exact after any writes: a document's score is the same float64 sum over the query's
    # terms in whichever segment its row sits (see _merge).

    def add(self, docs: Sequence[Document]) -> None:
        if not docs:
            return
        held = self._changing()
        cols = Corpus.of(docs)
        rows = self.encode_documents(list(cols.contents("")))
        self._segments.append(InvertedIndex(rows))
        held.append(cols)
        self._merge_when_due()

    def delete(self, ids: Sequence[str]) -> None:
        self._changing().remove(ids)
        self._merge_when_due()

    def update(self, docs: Sequence[Document]) -> None:
        """A new version of held documents: the old rows dead, the new ones added."""
        self.delete([d.id for d in docs])
        self.add(docs)

    def _changing(self) -> HeldDocs:
        if self._index is None or self._held is None:
            raise RuntimeError("Splade.add/delete called before index()")
        return self._held

    def _merge_when_due(self) -> None:
        """Merge the segments into the base, dropping the dead rows, when there are more than
        ``MAX_SEGMENTS`` of them, when they hold more than half the base's weights, or when over half
        the positions are dead. Each segment costs a pass of the query's terms over its postings (numpy
        calls per term, per segment), so many small segments slow every search; a merge rebuilds the
        CSC arrays of the whole index (linear in its weights). Merging once the segments reach half
        the base makes the base grow geometrically, so the rebuilds cost O(1) per added weight
        amortised, and search never scans more than 1.5x the live rows, dead ones included."""
        held, base = self._changing(), self._index
        assert base is not None
        dead = len(held) - held.live
        added = sum(ix.nnz for ix in self._segments)
        if len(self._segments) > MAX_SEGMENTS or added > base.nnz // 2 or (dead and dead * 2 > len(held)):
            self._merge()

    def _merge(self) -> None:
        """One InvertedIndex of the live rows, in position order (the base's, then each segment's):
        the same float32 weights a fresh index of them holds, so every score is unchanged."""
        import scipy.sparse as sp

        held = self._changing()
        parts = [ix.matrix() for ix in (self._index, *self._segments) if ix is not None]
        keep = np.flatnonzero(~held.dead)
        t0 = time.perf_counter()
        self._index = InvertedIndex(sp.vstack(parts, format="csr")[keep])
        self._costs.build_seconds += time.perf_counter() - t0
        self._segments = []
        held.keep(keep)


def output_width(model: Any) -> int:
    """The width of the model's sparse vectors: its MLM head's vocabulary (a pooling module saved
    without its dimension reports the transformer's hidden size instead)."""
    config = getattr(getattr(model, "transformers_model", None), "config", None)
    vocab = getattr(config, "vocab_size", None)
    return int(vocab) if vocab else int(model.get_embedding_dimension() or 0)
