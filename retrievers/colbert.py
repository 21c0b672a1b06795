"""Late interaction (ColBERT): every token of a document keeps its own vector, and a query scores
a document by MaxSim, the sum over its query tokens of the best dot product with any document token.

```yaml
colbert: {type: colbert, model: PATH_OR_HUB_NAME}                            # exact MaxSim over the corpus
bm25_colbert: {type: colbert, model: PATH_OR_HUB_NAME, of: bm25, top_n: 100}  # rerank BM25's top 100
```

A sentence-transformers ``MultiVectorEncoder`` encodes (its ``encode_document`` /
``encode_query``: prompts, lengths, skiplist and normalisation as the model was saved). The
documents' token vectors go to a store on disk (:class:`TokenStore`: one memory-mapped array of
every token vector, float16 by default or float32 with ``precision: float32``, and each document's
offset), keyed by the weights digest, the precision and the corpus's fingerprint, so a second run
reads it instead of encoding.

Without ``of`` the retriever is exact: every document's token vectors are scored against every
query, a block of the store at a time (``maxsim_all``), the top k cut with the harness's tie rule.
That scan reads the whole store for each batch of queries, so a corpus whose store would not fit
in memory (``memory_limit_mb``, default: this machine's physical memory) is refused before any
work, with the figure it needs, rather than swapped into. With ``of: NAME`` and ``top_n`` it is a
rerank stage, as most teams run it: the top ``top_n`` of that row's ranking are re-scored by MaxSim
and re-ordered; the rest keep their order below them (as the cross-encoder ``rerank`` stage does).

A full-scan row changes in place through the mutable protocol (``add``, ``delete``, ``update``:
``harness stream``): added documents' token vectors in delta segments in memory, deleted positions
masked, exact after any writes; the store on disk is never rewritten. A document whose text a store
or segment of this process already holds (same identity) is copied from it, not encoded
(:func:`known_rows`): the stream's exact reference, a fresh store over the visible documents at every
checkpoint, then encodes nothing.

Cost columns: ``index_vectors`` (token vectors stored), ``index_mb`` (the store), ``encode_docs_per_s``,
``encode_seconds``, ``cache_hit_rate`` (1 when the store was read back), ``query_encode_ms``.
"""

from __future__ import annotations

import json
import logging
import os
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from harness import progress as harness_progress
from harness.cache import digest, text_key
from harness.errors import InputError, RetrieverError
from harness.io import atomic, staged
from harness.model import Corpus, Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from retrievers.held import HeldDocs
from retrievers.learned import (
    LearnedRetriever,
    load_encoder,
    prompt_of,
    require_sentence_transformers,
    resolve_location,
)
from retrievers.ties import rerank

log = logging.getLogger("harness")

#: documents encoded per call of ``encode_document`` while the store is written
ENCODE_BLOCK = 2048
#: token vectors scored per matrix product in the full scan (bounds the score block in memory)
SCAN_TOKENS = 32768
#: query tokens scored per matrix product in the full scan
SCAN_QUERY_TOKENS = 1024


class ColbertSpec(SpecBase):
    type: Literal["colbert"] = "colbert"
    model: str = Field(description="MultiVectorEncoder folder or hub name")
    of: str | None = Field(
        None, description="rerank this retriever's run (its top top_n) instead of scanning the corpus"
    )
    top_n: int = Field(
        100, ge=1, le=100_000, description="with of: how many of the input's top documents are re-scored"
    )
    precision: Literal["float16", "float32"] = Field("float16", description="token vectors as stored on disk")
    batch_size: int = Field(32, ge=1, le=65_536)
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, le=1024, description="torch threads")
    memory_limit_mb: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="largest store a full scan may read (default: physical memory)"
    )

    def inputs(self) -> list[str]:
        return [self.of] if self.of else []

    def preflight(self, config_dir: Path) -> None:
        super().preflight(config_dir)
        require_sentence_transformers("multivector", "colbert retrievers")
        check_multivector(resolve_location(self.model, config_dir))  # before any work: a random layer is no model

    def check_corpus(self, corpus: Sequence[Document], config_dir: Path) -> None:
        """Refuse, before any work, a full scan whose store would not fit in memory (a rerank stage
        reads only its candidates' rows, so any corpus fits)."""
        if self.of is not None:
            return
        model = load_multivector(resolve_location(self.model, config_dir), self.device)
        check_fits(self, store_bytes(model, Corpus.of(corpus), self.precision), len(corpus), model)

    def build(self, ctx: BuildContext) -> Colbert:
        return Colbert(self, cache_dir=ctx.cache_dir, config_dir=ctx.config_dir, show_progress=ctx.show_progress)


#: what ``type: colbert`` loads (said when a folder is something else)
MULTIVECTOR = (
    "colbert needs a saved multi-vector model: a MultiVectorEncoder folder (sentence-transformers), a PyLate "
    "or a Stanford ColBERT checkpoint"
)


def check_multivector(location: str) -> None:
    """Refuse a model that is not a saved multi-vector model, as sentence-transformers itself decides
    (``config_sentence_transformers.json``'s ``model_type`` MultiVectorEncoder, or PyLate's ColBERT,
    with its modules.json; or a Stanford ``HF_ColBERT`` checkpoint): anything else (a sentence-embedding
    model, a SPLADE folder, a bare BERT) would be given a fresh, randomly initialised projection at every
    load, so its scores, rankings and store key would differ from run to run."""
    from sentence_transformers.util import load_file_path

    def read(name: str) -> dict[str, Any]:
        try:
            path = load_file_path(location, name, local_files_only=True)
            return json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
        except Exception:  # unreadable or not on this machine: read as absent
            return {}

    kind = read("config_sentence_transformers.json").get("model_type")
    if kind in ("MultiVectorEncoder", "ColBERT") and read("modules.json") != {}:
        return
    if "HF_ColBERT" in (read("config.json").get("architectures") or []):
        return
    if not Path(location).is_dir() and not read("config.json"):
        return  # a hub name not on this machine: loading it says so
    what = f"a {kind}" if isinstance(kind, str) else "not a saved sentence-transformers multi-vector model"
    raise InputError(
        f"{location} is {what} (config_sentence_transformers.json model_type: {kind or 'none'}): loading it as "
        f"ColBERT would add a fresh, random projection at every load; {MULTIVECTOR}",
        field="model",
    )


@cache
def load_multivector(location: str, device: str = "cpu") -> Any:
    """One ``MultiVectorEncoder`` per (location, device) per process; refused first when ``location``
    is not a saved multi-vector model (:func:`check_multivector`)."""
    from sentence_transformers import MultiVectorEncoder

    check_multivector(location)
    return load_encoder(MultiVectorEncoder, location, device)


def memory_limit_bytes(spec: ColbertSpec) -> int:
    if spec.memory_limit_mb is not None:
        return int(spec.memory_limit_mb * 2**20)
    import psutil

    return int(psutil.virtual_memory().total)


def store_bytes(model: Any, corpus: Corpus, precision: str) -> tuple[int, int]:
    """``(bytes, token vectors)`` the store of ``corpus`` needs at most: each document's tokens as
    the model's tokenizer cuts them (the skiplist can only drop some), times the vector width."""
    tok = model.tokenizer
    length = int(model.max_seq_length or 512)
    prompt = prompt_of(model, ("document", "passage", "corpus")) or ""
    tokens = 0
    texts = list(corpus.contents(prompt))
    for start in range(0, len(texts), 4096):
        enc = tok(texts[start : start + 4096], truncation=True, max_length=length, add_special_tokens=True)
        tokens += sum(len(ids) for ids in enc["input_ids"])
    dim = int(model.get_embedding_dimension() or 0)
    return tokens * dim * np.dtype(precision).itemsize, tokens


def check_fits(
    spec: ColbertSpec,
    need: tuple[int, int],
    n_docs: int,
    model: Any,
    subject: str = "the token-vector store of this corpus needs",
) -> None:
    """One line, before any work, when a store of ``need`` (bytes, token vectors) would pass the
    memory limit; ``subject`` says what would need it (the corpus indexed, documents added)."""
    limit = memory_limit_bytes(spec)
    size, tokens = need
    if size > limit:
        dim = int(model.get_embedding_dimension() or 0)
        raise InputError(
            f"{subject} {size / 2**20:,.1f} MB ({n_docs:,} documents, "
            f"{tokens:,} token vectors x {dim} dims, {spec.precision}), over the memory limit of "
            f"{limit / 2**20:,.1f} MB; a full MaxSim scan would swap. Raise memory_limit_mb, use precision: "
            "float16, or rerank another row's top documents (of: NAME, top_n: N)",
            field="memory_limit_mb",
        )


class TokenRows:
    """Documents' token vectors: ``vectors`` (tokens x dim) and ``offsets`` (documents + 1): document
    ``i`` is ``vectors[offsets[i]:offsets[i + 1]]``. What the full scan (:func:`maxsim_all`) reads."""

    vectors: np.ndarray
    offsets: np.ndarray
    _keys: dict[str, int] | None = None
    _key_source: Callable[[], Iterable[str]] | None = None

    @property
    def keys(self) -> dict[str, int]:
        """Text key -> document (the first holding it), from what :func:`remember` was given: computed
        when a store being built or a write first looks rows up, never for a run that only reads."""
        if self._keys is None:
            self._keys = {}
            for i, k in enumerate(self._key_source() if self._key_source is not None else ()):
                self._keys.setdefault(k, i)
        return self._keys

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.offsets.nbytes)

    def doc(self, i: int) -> np.ndarray:
        return np.asarray(self.vectors[self.offsets[i] : self.offsets[i + 1]], dtype=np.float32)

    def intact(self) -> bool:
        """Whether every row can be read (rows in memory always can)."""
        return True


class TokenStore(TokenRows):
    """Every document's token vectors, memory-mapped: ``vectors`` (tokens x dim) and ``offsets``
    (documents + 1): document ``i`` is ``vectors[offsets[i]:offsets[i + 1]]``; ``store.json`` says
    the dtype, the token count and the width, and a store whose files disagree with it (cut short) is
    not used (:meth:`open` gives None, and the store is rebuilt)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        meta = json.loads((folder / "store.json").read_text(encoding="utf-8"))
        self.offsets = np.load(folder / "offsets.npy", allow_pickle=False)
        dtype = np.dtype(meta["dtype"])
        tokens, self.dim = int(meta["tokens"]), int(meta["dim"])
        if (
            int(self.offsets[-1]) != tokens
            or (folder / "vectors.bin").stat().st_size != tokens * self.dim * dtype.itemsize
        ):
            raise ValueError("vectors.bin does not hold the tokens its offsets say")
        self.vectors = (
            np.memmap(folder / "vectors.bin", dtype=dtype, mode="r", shape=(tokens, self.dim))
            if tokens
            else np.zeros((0, self.dim), dtype=dtype)
        )

    def intact(self) -> bool:
        """Whether ``vectors.bin`` still holds every row (a file cut short under a memory map would
        kill the process with SIGBUS when read, so rows are copied only from an intact store)."""
        try:
            return (self.folder / "vectors.bin").stat().st_size >= self.vectors.nbytes
        except OSError:
            return False

    @classmethod
    def open(cls, folder: Path) -> TokenStore | None:
        if not (folder / "store.json").is_file():
            return None
        try:
            return cls(folder)
        except (OSError, ValueError, KeyError) as e:
            log.warning("ignoring token-vector store %s (%s); it will be rebuilt", folder, e)
            return None


#: delta segments (documents added since the store was built) scanned before they are merged into one
MAX_SEGMENTS = 8


class TokenSegment(TokenRows):
    """Token vectors held in memory, shaped as a :class:`TokenStore` (``vectors``, ``offsets``): the
    documents added to a full-scan row since its store was built, cast to the store's precision as
    the store casts them (so a row scores the same in either)."""

    def __init__(self, docs: Sequence[np.ndarray], keys: Sequence[str], precision: str, dim: int) -> None:
        rows = [np.asarray(v, dtype=np.float32).reshape(-1, dim) for v in docs]
        self.offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=self.offsets[1:])
        self.vectors = (
            np.ascontiguousarray(np.concatenate(rows), dtype=precision)
            if self.offsets[-1]
            else np.zeros((0, dim), dtype=precision)
        )
        self.row_keys = list(keys)
        self._key_source = lambda: self.row_keys


#: The stores and segments this process holds, per model identity (a digest of it), weakly: one no
#: longer used drops out. A document whose text one of them holds is copied from it, not encoded: the
#: stream's exact reference builds a fresh store over the visible documents at every checkpoint (a
#: corpus no store on disk is keyed by), and copies every row instead of encoding the corpus again.
_HOLDERS: dict[str, weakref.WeakSet[Any]] = {}
#: False: every document is encoded (benchmarks/stream_learned.py measures the copy against it)
COPY_KNOWN_ROWS = True


def remember(ident: str, holder: TokenRows, keys: Callable[[], Iterable[str]]) -> None:
    """Make ``holder``'s rows known to this process; ``keys()`` gives the text key of each of its
    documents in order (called when first needed)."""
    if holder._key_source is None:
        holder._key_source = keys
    _HOLDERS.setdefault(ident, weakref.WeakSet()).add(holder)


def forget_rows() -> None:
    """Forget every known row (a benchmark's cold build; tests)."""
    _HOLDERS.clear()


def known_rows(ident: str, keys: Sequence[str]) -> dict[int, tuple[TokenRows, int]]:
    """``{i: (holder, document)}`` for the ``keys`` (text keys) a store or segment of this identity
    holds (read when copied: ``holder.doc(document)``)."""
    holders = [h for h in list(_HOLDERS.get(ident, ())) if h.intact()] if COPY_KNOWN_ROWS else []
    out: dict[int, tuple[TokenRows, int]] = {}
    if not holders:
        return out
    for i, k in enumerate(keys):
        for h in holders:
            p = h.keys.get(k)
            if p is not None:
                out[i] = (h, p)
                break
    return out


def write_store(folder: Path, blocks: Any, precision: str, dim: int) -> TokenStore:
    """Write ``blocks`` (lists of per-document token matrices, in corpus order) as the store at
    ``folder``: built in a folder of its own beside it and renamed into place when complete, so a
    reader never sees half a store and two runs building the same one do not write into each other
    (the second to finish keeps the first's)."""
    import shutil

    folder.parent.mkdir(parents=True, exist_ok=True)
    work = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    lengths: list[int] = []
    try:
        with open(work / "vectors.bin", "wb") as f:
            for docs in blocks:
                for v in docs:
                    arr = np.ascontiguousarray(np.asarray(v, dtype=np.float32).reshape(-1, dim), dtype=precision)
                    f.write(arr.tobytes())
                    lengths.append(len(arr))
            f.flush()
            os.fsync(f.fileno())
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        atomic.write_npy(work / "offsets.npy", offsets)
        atomic.write_json(work / "store.json", {"dtype": precision, "tokens": int(offsets[-1]), "dim": dim})
        if folder.exists() and TokenStore.open(folder) is None:
            shutil.rmtree(folder, ignore_errors=True)  # an unusable store (cut short, corrupt): replaced
        staged.publish(work, folder)  # False: another run put a complete store there first
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return TokenStore(folder)


def corpus_digest(corpus: Corpus) -> str:
    """sha256 of the corpus's ids and texts, and of its order (the store's rows follow it): a store
    belongs to one corpus."""
    import hashlib

    h = hashlib.sha256("\x00".join(map(str, corpus.ids.tolist())).encode())
    for line in corpus.fingerprint_lines():
        h.update(line)
    return h.hexdigest()


#: fewest rows either side of a product has (zero rows added): the library's BLAS kernel, and its rounding
MIN_PRODUCT_ROWS = 64


def sum_maxima(best: np.ndarray, q_lengths: np.ndarray, width: int) -> np.ndarray:
    """``(queries, documents)`` float32: each query's token maxima (``best``: one row per query token,
    query after query) summed as ``MultiVectorEncoder.similarity`` sums them: zero-padded to ``width``
    query tokens, as a ``(queries, documents, width)`` float32 tensor summed over its last axis by
    torch. A float32 sum depends on its order, and torch's order on the padded width, so the same
    maxima give the library's bits only summed this way (float64 sums would differ from them in the
    last place, enough to order two near-tied documents the other way)."""
    import torch

    nq, nd = len(q_lengths), best.shape[1]
    padded = np.zeros((nq, nd, width), dtype=np.float32)  # the layout torch sums: query tokens innermost
    which = np.repeat(np.arange(nq), q_lengths)
    token = np.arange(len(which)) - np.repeat(np.cumsum(q_lengths) - q_lengths, q_lengths)
    padded[which, :, token] = best
    return torch.from_numpy(padded).sum(dim=-1).numpy()


def token_maxima(rows: np.ndarray, block: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``(query tokens, documents)`` float32: each query token's best dot product with any token of
    each document (``block``'s rows from ``starts``), the products by torch as the library's einsum
    computes them. BLAS multiplies a product with few rows on either side with another kernel, which
    rounds otherwise (one query's tokens in a rerank, the last small block of a scan, a delta
    segment); both sides padded with zero rows to :data:`MIN_PRODUCT_ROWS` take the kernel the
    library's call over a query set and a corpus takes."""
    import warnings

    import torch

    n, m = len(rows), len(block)
    if n < MIN_PRODUCT_ROWS:
        rows = np.concatenate([rows, np.zeros((MIN_PRODUCT_ROWS - n, rows.shape[1]), dtype=np.float32)])
    if m < MIN_PRODUCT_ROWS:
        block = np.concatenate([block, np.zeros((MIN_PRODUCT_ROWS - m, block.shape[1]), dtype=np.float32)])
    with warnings.catch_warnings():  # a read-only memory map: torch only reads it
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        left, right = torch.from_numpy(np.ascontiguousarray(rows)), torch.from_numpy(np.ascontiguousarray(block))
    return np.maximum.reduceat((left @ right.T).numpy()[:n, :m], starts, axis=1)


def maxsim_all(q: np.ndarray, q_offsets: np.ndarray, store: TokenRows, width: int | None = None) -> np.ndarray:
    """``(queries, documents)`` MaxSim of every query (its token rows ``q[q_offsets[i]:q_offsets[i + 1]]``)
    against every document of ``store``, float32 values as ``MultiVectorEncoder.similarity`` gives
    them for the same vectors (:func:`sum_maxima`; ``width``: the padded query width, the longest
    query of the call by default), in a float64 array."""
    n_docs = len(store.offsets) - 1
    nq = len(q_offsets) - 1
    out = np.zeros((nq, n_docs))
    lengths = np.diff(q_offsets)
    width = int(width or lengths.max(initial=1))
    doc_off = store.offsets
    empty = doc_off[1:] == doc_off[:-1]
    group = max(1, SCAN_QUERY_TOKENS // max(1, int(lengths.max(initial=1))))
    d0 = 0
    while d0 < n_docs:
        # documents whose tokens fit in one block (at least one document)
        d1 = int(np.searchsorted(doc_off, doc_off[d0] + SCAN_TOKENS, side="right")) - 1
        d1 = min(max(d1, d0 + 1), n_docs)
        a, b = int(doc_off[d0]), int(doc_off[d1])
        block = np.asarray(store.vectors[a:b], dtype=np.float32)
        local = doc_off[d0:d1] - a
        keep = ~empty[d0:d1]
        starts = local[keep]
        for q0 in range(0, nq, group):
            q1 = min(nq, q0 + group)
            rows = q[q_offsets[q0] : q_offsets[q1]]
            if not len(rows) or not len(starts):
                continue
            best = token_maxima(rows, block, starts)
            cols = np.flatnonzero(keep) + d0
            out[q0:q1, cols] = sum_maxima(best, lengths[q0:q1], width)
        d0 = d1
    return out


def maxsim_pairs(qv: np.ndarray, docs: list[np.ndarray], width: int | None = None) -> np.ndarray:
    """MaxSim of one query's token rows against each of ``docs`` (float32 values, summed as
    :func:`sum_maxima` sums them, padded to ``width`` query tokens), in a float64 array."""
    if not docs:
        return np.zeros(0)
    lengths = np.array([len(d) for d in docs])
    cat = np.concatenate(docs) if lengths.sum() else np.zeros((0, qv.shape[1]), dtype=np.float32)
    out = np.zeros(len(docs))
    keep = lengths > 0
    if keep.any() and len(qv):
        starts = (np.cumsum(lengths) - lengths)[keep]
        best = token_maxima(np.asarray(qv, dtype=np.float32), np.asarray(cat, dtype=np.float32), starts)
        out[keep] = sum_maxima(best, np.array([len(qv)]), int(width or len(qv)))[0]
    return out


class Colbert(LearnedRetriever):
    """``Retriever`` (exact MaxSim over the corpus) or, with ``of``, a rerank ``Stage``."""

    name = "colbert"
    spec: ColbertSpec

    def _load(self) -> None:
        spec = self.spec
        self.model = load_multivector(self.location, spec.device)
        self.dim = int(self.model.get_embedding_dimension() or 0)
        self.store: TokenStore | None = None
        self._delta: list[TokenSegment] = []
        self._held: HeldDocs | None = None
        self._encode_seconds = 0.0
        self._docs_per_s: float | None = None
        self._cache_hit: float | None = None
        self._query_encode_ms: float | None = None
        self._copied = self._encoded = 0
        if spec.of is not None:  # a stage: the engine calls transform, never search
            self.transform = self._transform

    def row_settings(self) -> dict[str, Any]:
        return dict(max_seq_length=int(self.model.max_seq_length or 0), precision=self.spec.precision, dim=self.dim)

    def params(self) -> dict[str, Any]:
        return {**self.spec.model_dump(exclude={"type"}), "location": self.location, "identity": self.identity}

    @property
    def _rows_key(self) -> str:
        """The identity's digest: which known rows (:func:`known_rows`) this row may copy."""
        return digest(self.identity)

    # ------------------------------------------------------------------ documents
    def index(self, corpus: Sequence[Document]) -> None:
        cols = Corpus.of(corpus)
        self._held, self._delta = HeldDocs(cols), []
        key = digest({**self.identity, "corpus": corpus_digest(cols)})
        folder = (self._cache_dir / "colbert_store" / key) if self._cache_dir is not None else None
        store = TokenStore.open(folder) if folder is not None else None
        self._cache_hit = 1.0 if store is not None else 0.0
        if store is not None:
            remember(self._rows_key, store, lambda: (text_key(t) for t in cols.contents("")))
        else:
            if self.spec.of is None:
                check_fits(self.spec, store_bytes(self.model, cols, self.spec.precision), len(cols), self.model)
            if folder is None:  # no cache: a store of this object's own, removed with it
                import shutil
                import tempfile
                import weakref

                folder = Path(tempfile.mkdtemp(prefix="harness-colbert-"))
                weakref.finalize(self, shutil.rmtree, str(folder), True)
            report = harness_progress.current() if self.show_progress else None
            if report is not None:
                report.phase("encoding docs", total=len(cols))
            texts = list(cols.contents(""))
            keys = [text_key(t) for t in texts]
            self._copied = self._encoded = 0
            t0 = time.perf_counter()
            store = write_store(folder, self._encode_blocks(texts, keys, report), self.spec.precision, self.dim)
            took = time.perf_counter() - t0
            self._encode_seconds = took
            self._docs_per_s = self._encoded / took if self._encoded and took > 0 else None
            self._cache_hit = self._copied / len(texts) if texts else 0.0
            remember(self._rows_key, store, lambda: keys)
        self.store = store

    def _encode_blocks(self, texts: list[str], keys: list[str], report: Any) -> Iterator[list[np.ndarray]]:
        """Each document's token vectors, a block at a time in corpus order: copied where a store or
        segment of this process holds the same text under this identity (:func:`known_rows`), encoded
        otherwise, in the batches one ``encode_document`` call over them would form
        (:meth:`_library_batches`), spilled to a temporary file as they come and read back in order."""
        import tempfile

        known = known_rows(self._rows_key, keys)
        todo = [i for i in range(len(texts)) if i not in known]
        where: dict[int, tuple[int, int]] = {}
        with tempfile.TemporaryFile(dir=self._cache_dir if self._cache_dir and self._cache_dir.is_dir() else None) as f:
            at = 0
            for batch in self._library_batches([texts[i] for i in todo]):
                vecs = self.model.encode_document(
                    [texts[todo[j]] for j in batch],
                    batch_size=len(batch),
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                for j, v in zip(batch, vecs):
                    arr = np.ascontiguousarray(np.asarray(v, dtype=np.float32).reshape(-1, self.dim))
                    f.write(arr.tobytes())
                    where[todo[j]] = (at, len(arr))
                    at += len(arr)
                self._encoded += len(batch)
                if report is not None:
                    report.advance(len(batch))
            f.flush()
            spill = np.memmap(f, dtype=np.float32, mode="r", shape=(at, self.dim)) if at else None
            self._copied += len(texts) - len(todo)
            if report is not None and len(texts) > len(todo):
                report.advance(len(texts) - len(todo))
            for start in range(0, len(texts), ENCODE_BLOCK):
                block = []
                for i in range(start, min(start + ENCODE_BLOCK, len(texts))):
                    if i in where:
                        a, n = where[i]
                        block.append(np.array(spill[a : a + n]) if spill is not None else np.zeros((0, self.dim)))
                    else:
                        block.append(known[i][0].doc(known[i][1]))
                yield block
            del spill

    def _library_batches(self, texts: list[str]) -> Iterator[list[int]]:
        """Positions of ``texts`` in the batches ``encode_document(texts)`` would encode: sorted by
        character length, longest first, with its sort (numpy's default), then ``batch_size`` at a
        time. A document's token vectors depend on the padding of its batch in the last float32
        place, so encoding the same batches gives the library's bits, one batch per call."""
        order = np.argsort([-len(t) for t in texts])
        size = self.spec.batch_size
        for b in range(0, len(order), size):
            yield order[b : b + size].tolist()

    # ------------------------------------------------------------------ queries
    def encode_queries(self, queries: Sequence[Query], *, use_memo: bool = True) -> list[np.ndarray]:
        """Each query's token vectors (float32, ``MultiVectorEncoder.encode_query``), memoised per run."""
        texts = [q.text for q in queries]
        todo = [i for i, t in enumerate(texts) if not (use_memo and t in self._memo)]
        fresh: dict[int, np.ndarray] = {}
        if todo:
            t0 = time.perf_counter()
            vecs = self.model.encode_query(
                [texts[i] for i in todo],
                batch_size=self.spec.batch_size,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            took = time.perf_counter() - t0
            self._encode_seconds += took
            if len(todo) > 1:
                self._query_encode_ms = 1000 * took / len(todo)
            for j, i in enumerate(todo):
                fresh[i] = np.asarray(vecs[j], dtype=np.float32)
                if use_memo:
                    self._memo[texts[i]] = fresh[i]
        return [fresh[i] if i in fresh else self._memo[t] for i, t in enumerate(texts)]

    def search(self, queries: Sequence[Query], k: int) -> Run:
        if self.store is None or self._held is None:
            raise RuntimeError("Colbert.search called before index()")
        if self.spec.of is not None:
            raise RetrieverError("a colbert stage with of: reranks its input's run; it has no search of its own")
        qv = self.encode_queries(queries, use_memo=self._use_memo)
        stores = (self.store, *self._delta)
        width = max((len(v) for v in qv), default=1)  # every group of rows padded alike, as one library call pads

        def score_rows(rows: list[int]) -> Iterator[tuple[int, np.ndarray]]:
            if not rows:
                return
            q_off = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum([len(qv[r]) for r in rows], out=q_off[1:])
            q = np.concatenate([qv[r] for r in rows]).astype(np.float32)
            yield from zip(rows, np.concatenate([maxsim_all(q, q_off, s, width) for s in stores], axis=1))

        return self._held.top_k(queries, k, score_rows, self.name)

    def _transform(self, runs: Sequence[Run], queries: Sequence[Query], k: int) -> Run:
        """Re-score the top ``top_n`` of the one input run by MaxSim; the tail keeps its order below."""
        if len(runs) != 1:
            raise RetrieverError(f"colbert reranks one input run, got {len(runs)}")
        if self.store is None or self._held is None:
            raise RuntimeError("Colbert.transform called before index()")
        where = self._held.where
        qids = [q.id for q in queries]
        run = runs[0].subset(qids)
        n = min(self.spec.top_n, run.depth)
        head_idx = run.indices[:, :n]
        valid = head_idx >= 0
        qv = self.encode_queries(queries, use_memo=self._use_memo)
        width = max((len(v) for v in qv), default=1)
        head = np.full(head_idx.shape, -np.inf)
        for r in range(len(queries)):
            cols = np.flatnonzero(valid[r])
            docs = []
            for d in run.doc_ids[head_idx[r, cols]].tolist():
                pos = where.get(str(d))
                if pos is None:
                    raise RetrieverError(f"colbert: document {d!r} (query {qids[r]!r}) is not in the indexed corpus")
                docs.append(self.store.doc(pos))
            head[r, cols] = maxsim_pairs(qv[r], docs, width)
        return rerank(run, head, k, self.name)

    def efficiency_extra(self, k: int) -> dict[str, Any]:
        """``encode_seconds`` (documents and queries encoded), ``encode_docs_per_s`` (None when no
        document was encoded), ``cache_hit_rate`` (1 when the store was read back; else the share of
        documents copied from a store this process already held), ``query_encode_ms``, and the
        store's size as held: ``index_vectors`` (token vectors) and ``index_mb``, the documents added
        since it was built (in memory) and the rows of deleted documents included."""
        out: dict[str, Any] = {
            "encode_seconds": self._encode_seconds,
            "build_seconds": 0.0,
            "cache_hit_rate": self._cache_hit,
            "encode_docs_per_s": self._docs_per_s,
        }
        if self._query_encode_ms is not None:
            out["query_encode_ms"] = self._query_encode_ms
        if self.store is not None:
            out["index_vectors"] = self.store.tokens + sum(s.tokens for s in self._delta)
            out["index_mb"] = self._held_bytes() / 2**20
        return out

    # ------------------------------------------------------------------ the mutable protocol
    # ``harness stream`` writes a full-scan row (no of:) through add / delete / update
    # (harness.protocol.Mutable). The store on disk is never rewritten: it is the cache's, keyed by the
    # corpus it was built for, and other runs read it. Added documents' token vectors go to delta
    # segments in memory (TokenSegment, in the store's precision), scanned after the store, their
    # positions following its; a deleted document is marked dead in HeldDocs and its scores
    # discarded. Every score is the MaxSim of the same stored vectors, so the row stays exact.

    def add(self, docs: Sequence[Document]) -> None:
        """Encode (or copy, :func:`known_rows`) ``docs`` into a new delta segment; refused, before any
        encoding, when the store and its segments would pass ``memory_limit_mb``."""
        if not docs:
            return
        held, store = self._changing()
        cols = Corpus.of(docs)
        size, tokens = store_bytes(self.model, cols, self.spec.precision)
        held_tokens = store.tokens + sum(s.tokens for s in self._delta)
        check_fits(
            self.spec,
            (self._held_bytes() + size, held_tokens + tokens),
            held.live + len(cols),
            self.model,
            subject=f"adding {len(cols):,} documents would take the token-vector store to",
        )
        texts = list(cols.contents(""))
        keys = [text_key(t) for t in texts]
        t0, e0 = time.perf_counter(), self._encoded
        rows = [v for block in self._encode_blocks(texts, keys, None) for v in block]
        if self._encoded > e0:
            self._encode_seconds += time.perf_counter() - t0
        segment = TokenSegment(rows, keys, self.spec.precision, self.dim)
        remember(self._rows_key, segment, lambda: segment.row_keys)
        self._delta.append(segment)
        held.append(cols)
        self._merge_when_due()

    def delete(self, ids: Sequence[str]) -> None:
        self._changing()[0].remove(ids)
        self._merge_when_due()

    def update(self, docs: Sequence[Document]) -> None:
        """A new version of held documents: the old rows dead, the new ones added."""
        self.delete([d.id for d in docs])
        self.add(docs)

    def _changing(self) -> tuple[HeldDocs, TokenStore]:
        if self.store is None or self._held is None:
            raise RuntimeError("Colbert.add/delete called before index()")
        if self.spec.of is not None:
            raise RetrieverError(
                "a colbert stage with of: reranks another row's candidates and does not change in place; "
                "stream the row it reranks"
            )
        return self._held, self.store

    def _held_bytes(self) -> int:
        return (self.store.nbytes if self.store is not None else 0) + sum(s.nbytes for s in self._delta)

    def _merge_when_due(self) -> None:
        """Merge the delta segments into one, dropping their dead rows, when there are more than
        ``MAX_SEGMENTS`` of them or over half their rows are dead. Each segment is a scan of its own
        (matrix products per block), so many small ones slow every search; merging copies the live
        delta rows once (memory, no encoding). Dead rows of the store on disk stay, masked: the store
        is never rewritten, and ``index()`` over the documents held builds a compact one."""
        held, store = self._changing()
        n_base = len(store.offsets) - 1
        delta_dead = held.dead[n_base:]
        if not (len(self._delta) > MAX_SEGMENTS or (delta_dead.any() and delta_dead.sum() * 2 > len(delta_dead))):
            return
        rows: list[np.ndarray] = []
        keys: list[str] = []
        at = n_base
        for seg in self._delta:
            for j in range(len(seg.offsets) - 1):
                if not held.dead[at + j]:
                    rows.append(seg.doc(j))
                    keys.append(seg.row_keys[j])
            at += len(seg.offsets) - 1
        merged = TokenSegment(rows, keys, self.spec.precision, self.dim)
        remember(self._rows_key, merged, lambda: merged.row_keys)
        self._delta = [merged] if rows else []
        held.keep(np.concatenate([np.arange(n_base), n_base + np.flatnonzero(~delta_dead)]))
