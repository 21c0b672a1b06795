"""The encoder's pipeline: tokenization running ahead of the model, length-sorted batches.

Why not ``SentenceTransformer.encode``: it tokenizes each batch on the calling thread, between two
forward passes, so the model waits for the tokenizer every batch (on a GPU the tokenizer, not the
model, sets the pace); and it sorts by length only within one call, which the embedding cache's
checkpointed pieces cut short. Here:

- the texts of one call are ordered by character length (longest first, as the library does), cut
  into windows of :data:`WINDOW_BATCHES` batches, and each window is tokenized by one call of the
  fast tokenizer (the ``tokenizers`` library's own batch parallelism, in Rust, outside the GIL) on
  a background thread; within a window the texts are re-sorted by *token* count, so each batch is
  padded to the length of texts of nearly equal token count;
- tokenized batches wait in a bounded queue (:data:`PREFETCH_BATCHES`), so tokenization runs
  ahead of the model by a few batches and never holds more than that in memory;
- the model runs under ``torch.inference_mode`` on the calling thread; each batch's embeddings go
  back with the positions of its texts, so the caller puts them in corpus order;
- on CUDA the tokenized tensors are pinned on the host and copied with ``non_blocking=True``, and
  a batch's embeddings are copied back while the next batch computes (guarded paths: no GPU was
  available where this was written; see docs/encoding.md).

A background thread rather than worker processes: measured on this project's 2-core CPU (busy),
the tokenizer alone does about 1,300-1,650 short texts/s where the model does tens, so one thread
hides it entirely and processes would add start-up and pickling for nothing; the window call
(needed anyway, for the token-count sort) was 1.0-1.15x the library's per-batch calls there
(``benchmarks/encode_pipeline.py`` prints these rates for any machine; docs/encoding.md). A GPU
host whose model outruns one tokenizer thread is where worker processes would be measured next.

The embeddings are the library's: the tokenizer is called with the arguments
``SentenceTransformer.preprocess`` uses (checked once per model against ``preprocess`` itself on a
probe; a model whose tokenization differs, or whose tokenizer is not a right-padding fast
tokenizer, gets ``preprocess`` per batch on the same background thread).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.errors import HarnessError, InputError, RetrieverError

#: tokenized batches the tokenizer may run ahead of the model (bounded memory)
PREFETCH_BATCHES = 8
#: batches tokenized by one tokenizer call (then re-sorted by token count within them)
WINDOW_BATCHES = 8
#: texts tokenized on the calling thread, without a background thread (a query, a few)
INLINE_TEXTS = 16
#: seconds between checks that the tokenizer thread is alive while the model waits for it
_POLL_S = 0.5
#: batch sizes chosen from free GPU memory stay within these (a power of two)
AUTO_BATCH_MIN, AUTO_BATCH_MAX = 16, 1024
#: CPU batch size where the user set none (the harness's default before the choice existed)
CPU_BATCH_SIZE = 64
#: characters kept per token of ``max_length`` before tokenizing (docs/encoding.md, "Long texts"):
#: English runs at 4-5 characters a token in WordPiece, so 16 is far past what ``max_length`` keeps
CHARS_PER_TOKEN = 16


def cut_text(text: str, max_length: int, chars_per_token: int = CHARS_PER_TOKEN) -> str:
    """``text`` cut before tokenizing, so a multi-megabyte document costs what its first tokens cost:
    the fast tokenizer tokenizes a whole text before truncating it (a 12 MB document took 1.3 GB).
    The cut falls at the last whitespace before ``max_length * chars_per_token`` characters (a whole
    word is never split, so the tokens before it are the ones the whole text gives), or at that
    bound where the last quarter before it has no whitespace; a text within the bound is untouched."""
    bound = int(max_length) * chars_per_token
    if bound <= 0 or len(text) <= bound:  # a model without a maximum length: nothing to cut at
        return text
    space = max(text.rfind(" ", 0, bound + 1), text.rfind("\n", 0, bound + 1), text.rfind("\t", 0, bound + 1))
    return text[:space] if space > bound * 3 // 4 else text[:bound]


@dataclass
class PipelineStats:
    """What one or more pipeline calls cost: texts encoded, the pipeline's wall seconds (a
    caller's work between batches, such as writing the cache, excluded) and the seconds the model
    waited for a tokenized batch."""

    texts: int = 0
    seconds: float = 0.0
    wait_seconds: float = 0.0

    @property
    def docs_per_s(self) -> float | None:
        return self.texts / self.seconds if self.seconds > 0 else None

    @property
    def wait_share(self) -> float | None:
        """The model's idle share: seconds waiting for input over the pipeline's seconds (0..1)."""
        return min(1.0, self.wait_seconds / self.seconds) if self.seconds > 0 else None


@dataclass
class EncodeCosts:
    """The costs a retriever that encodes through this pipeline reports (dense, SPLADE), kept in
    one record so that both compute them, and name them in ``efficiency_extra``, alike."""

    encode_seconds: float = 0.0
    build_seconds: float = 0.0
    cache_hit_rate: float | None = None
    query_encode_ms: float | None = None
    #: what the pipeline did for the last ``index()``
    indexed: PipelineStats = field(default_factory=PipelineStats)

    def pipeline_since(self, stats: PipelineStats, before: PipelineStats) -> None:
        """:attr:`indexed`: what ``stats`` gained since ``before`` (a copy of it taken earlier)."""
        self.indexed = PipelineStats(
            stats.texts - before.texts, stats.seconds - before.seconds, stats.wait_seconds - before.wait_seconds
        )

    def extra(self) -> dict[str, Any]:
        """The ``efficiency_extra`` columns, ``query_encode_ms`` only once a batch of queries was encoded."""
        out: dict[str, Any] = {
            "encode_seconds": self.encode_seconds,
            "build_seconds": self.build_seconds,
            "cache_hit_rate": self.cache_hit_rate,
            "encode_docs_per_s": self.indexed.docs_per_s if self.indexed.texts else None,  # None: all cached
            "encode_wait_share": self.indexed.wait_share if self.indexed.texts else None,
        }
        if self.query_encode_ms is not None:
            out["query_encode_ms"] = self.query_encode_ms
        return out


def describe_text(i: int) -> str:
    return f"text #{i + 1}"


# ---------------------------------------------------------------------------- tokenization
class Featurizer:
    """Model inputs for a list of texts, exactly as ``model.preprocess`` builds them.

    Fast path: one tokenizer call per window without padding (token counts known, so the window
    can be sorted by them), then numpy padding per batch. Fallback: ``model.preprocess`` per batch."""

    def __init__(self, model: Any, max_length: int) -> None:
        self.model, self.max_length = model, int(max_length)
        tok = getattr(model, "tokenizer", None)
        self.tok = tok
        self.fast = False
        self.extras: dict[str, Any] = {}
        if tok is not None and getattr(tok, "is_fast", False) and getattr(tok, "padding_side", "right") == "right":
            try:
                self.fast = self._agrees_with_preprocess()
            except Exception:  # any surprise in the probe: the library's own path, per batch
                self.fast = False

    def _agrees_with_preprocess(self) -> bool:
        probe = ["a short probe.", "a longer probe, " * (self.max_length + 8), "  spaced\tprobe  "]
        ref = self.model.preprocess(probe)
        mine = self.pad(self.tokenize(probe))
        self.extras = {k: v for k, v in ref.items() if not hasattr(v, "shape")}
        tensors = {k for k, v in ref.items() if hasattr(v, "shape")}
        if tensors != set(mine):
            return False
        return all(bool((ref[k].cpu() == mine[k]).all()) and ref[k].shape == mine[k].shape for k in tensors)

    def tokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        """Unpadded ``input_ids`` (and ``token_type_ids`` where the model takes them) of the texts cut
        by :func:`cut_text`. A cut text that still fills ``max_length`` tokens gives exactly the whole
        text's tokens; one that does not (long runs of whitespace, words longer than a token) is cut
        again at four times the bound, until it fills them or is whole."""
        factor = CHARS_PER_TOKEN
        rows = self._tokens([cut_text(t, self.max_length, factor) for t in texts])

        def still_short(i: int, ids: list[int]) -> bool:  # fewer tokens than kept, and more text left
            return len(ids) < self.max_length and len(texts[i]) > self.max_length * factor

        short = [i for i, ids in enumerate(rows["input_ids"]) if still_short(i, ids)]
        while short:
            factor *= 4
            redo = self._tokens([cut_text(texts[i], self.max_length, factor) for i in short])
            for key, values in rows.items():
                for j, i in enumerate(short):
                    values[i] = redo[key][j]
            short = [i for i, ids in zip(short, redo["input_ids"]) if still_short(i, ids)]
        return rows

    def _tokens(self, texts: list[str]) -> dict[str, list[list[int]]]:
        enc = self.tok(
            texts,
            padding=False,
            truncation="longest_first",
            max_length=self.max_length,
            return_attention_mask=False,
        )
        return {k: list(v) for k, v in enc.items() if k in ("input_ids", "token_type_ids")}

    def pad(self, rows: dict[str, list[list[int]]]) -> dict[str, Any]:
        """Right-padded int64 tensors with an attention mask, as the tokenizer's ``padding=True``."""
        import torch

        ids = rows["input_ids"]
        n, width = len(ids), max((len(r) for r in ids), default=0)
        lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=n)
        mask = np.arange(width)[None, :] < lengths[:, None]
        out: dict[str, Any] = {}
        pads = {"input_ids": self.tok.pad_token_id or 0, "token_type_ids": getattr(self.tok, "pad_token_type_id", 0)}
        for key in self.tok.model_input_names:
            if key == "attention_mask":
                out[key] = torch.from_numpy(mask.astype(np.int64))
            elif key in rows:
                arr = np.full((n, width), pads.get(key, 0), dtype=np.int64)
                arr[mask] = np.fromiter((t for r in rows[key] for t in r), dtype=np.int64, count=int(lengths.sum()))
                out[key] = torch.from_numpy(arr)
        return out

    def batches(
        self, texts: list[str], batch_size: int, describe: Callable[[int], str], where: np.ndarray
    ) -> Iterator[tuple[np.ndarray, dict[str, Any]]]:
        """``(positions within texts, features)`` per batch, sorted by token count within ``texts``."""
        if not self.fast:
            for b in range(0, len(texts), batch_size):
                part = [cut_text(t, self.max_length) for t in texts[b : b + batch_size]]
                yield (
                    np.arange(b, b + len(part)),
                    self._located(lambda t: self.model.preprocess(t), part, describe, where, b),
                )
            return
        rows = self._located(self.tokenize, texts, describe, where, 0)
        lengths = np.fromiter((len(r) for r in rows["input_ids"]), dtype=np.int64, count=len(texts))
        order = np.argsort(-lengths, kind="stable")
        for b in range(0, len(texts), batch_size):
            sel = order[b : b + batch_size]
            feats = self.pad({k: [v[i] for i in sel] for k, v in rows.items()})
            yield sel, {**feats, **self.extras}

    @staticmethod
    def _located(
        fn: Callable[[list[str]], Any], texts: list[str], describe: Callable[[int], str], where: np.ndarray, base: int
    ) -> Any:
        """``fn(texts)``; when it fails, the first text that fails alone is named in one line."""
        try:
            return fn(texts)
        except Exception as e:
            for j, t in enumerate(texts):
                try:
                    fn([t])
                except Exception as e1:
                    raise InputError(
                        f"{describe(int(where[base + j]))} cannot be tokenized: {type(e1).__name__}: "
                        f"{(str(e1).splitlines() or [''])[0]}",
                        field="text",
                    ) from None
            raise RetrieverError(f"tokenizing {len(texts)} texts failed: {type(e).__name__}: {e}") from None


# ---------------------------------------------------------------------------- batch size
def batch_size_for_memory(
    free_bytes: int, *, max_length: int, hidden: int, heads: int, dtype_bytes: int, share: float = 0.5
) -> int:
    """A batch size whose activations fit in ``share`` of ``free_bytes``: per text, about
    ``max_length * (8 * hidden + 2 * heads * max_length)`` values live at the peak of one layer
    (hidden states and their copies, the 4x feed-forward, attention scores and their softmax; no
    gradients under inference mode), rounded down to a power of two in
    [:data:`AUTO_BATCH_MIN`, :data:`AUTO_BATCH_MAX`]."""
    per_text = max(1, max_length * (8 * hidden + 2 * heads * max_length) * dtype_bytes)
    fit = int(free_bytes * share) // per_text
    size = AUTO_BATCH_MIN
    while size * 2 <= min(fit, AUTO_BATCH_MAX):
        size *= 2
    return size


def auto_batch_size(model: Any, device: str, max_length: int) -> int:
    """The batch size where the user set none: :data:`CPU_BATCH_SIZE` on a CPU; on CUDA, chosen
    from the device's free memory (:func:`batch_size_for_memory`)."""
    if not str(device).startswith("cuda"):
        return CPU_BATCH_SIZE
    import torch

    free, _total = torch.cuda.mem_get_info(torch.device(device))
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    hidden = int(getattr(config, "hidden_size", 1024) or 1024)
    heads = int(getattr(config, "num_attention_heads", 16) or 16)
    dtype_bytes = next(model.parameters()).element_size()
    return batch_size_for_memory(free, max_length=max_length, hidden=hidden, heads=heads, dtype_bytes=dtype_bytes)


# ---------------------------------------------------------------------------- the pipeline
_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _put(q: queue.Queue[Any], item: Any, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _produce(
    featurizer: Featurizer,
    texts: Sequence[str],
    order: np.ndarray,
    batch_size: int,
    describe: Callable[[int], str],
    pin: bool,
    q: queue.Queue[Any],
    stop: threading.Event,
) -> None:
    """The tokenizer thread: windows of texts in ``order``, batches onto ``q``, then ``_END``
    (or the error that stopped it, for the model's thread to raise)."""
    idx = order[:0]
    try:
        start, window = 0, batch_size  # the first window is one batch: the model starts at once
        while start < len(order) and not stop.is_set():
            idx = order[start : start + window]
            start += len(idx)
            for sel, feats in featurizer.batches([texts[i] for i in idx], batch_size, describe, idx):
                if pin:
                    feats = {k: v.pin_memory() if hasattr(v, "pin_memory") else v for k, v in feats.items()}
                if not _put(q, (idx[sel], feats), stop):
                    return
            window = batch_size * WINDOW_BATCHES
        _put(q, _END, stop)
    except HarnessError as e:  # located already (a text that cannot be tokenized)
        _put(q, _Failed(e), stop)
    except BaseException as e:  # anything else: one line naming where it stopped, raised by the model's thread
        at = f" at {describe(int(idx[0]))} (a window of {len(idx)} texts)" if len(idx) else ""
        first = (str(e).splitlines() or [""])[0]
        _put(q, _Failed(RetrieverError(f"the tokenizer thread died{at}: {type(e).__name__}: {first}")), stop)


def _next_batch(q: queue.Queue[Any], thread: threading.Thread | None) -> Any:
    while True:
        try:
            return q.get(timeout=_POLL_S)
        except queue.Empty:
            if thread is not None and not thread.is_alive() and q.empty():
                raise RetrieverError("the tokenizer thread stopped without a result or an error") from None


def encode_stream(
    model: Any,
    texts: Sequence[str],
    *,
    featurizer: Featurizer,
    batch_size: int,
    normalize: bool,
    stats: PipelineStats,
    describe: Callable[[int], str] = describe_text,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(positions, float32 embeddings)`` per batch, in length order, for every text of ``texts``.

    ``stats`` gains the texts, the seconds the pipeline ran while the caller was not holding it
    (the time spent between batches in the caller's own work is not the encoder's) and the seconds
    the model waited. Stopping early (an exception, Ctrl-C, or closing the generator) stops the
    tokenizer thread."""
    import torch

    n = len(texts)
    if n == 0:
        return
    resumed: float | None = time.perf_counter()
    device = next(model.parameters()).device
    cuda = device.type == "cuda"
    order = np.argsort(-np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), kind="stable")
    q: queue.Queue[Any] = queue.Queue(maxsize=PREFETCH_BATCHES)
    stop = threading.Event()
    thread: threading.Thread | None = None
    args = (featurizer, texts, order, batch_size, describe, cuda, q, stop)
    if n <= INLINE_TEXTS:  # a query or a few: no thread to start
        q = queue.Queue()
        _produce(*args[:-2], q, stop)
    else:
        thread = threading.Thread(target=_produce, args=args, name="harness-tokenizer", daemon=True)
        thread.start()
    pending: tuple[np.ndarray, Any, Any] | None = None  # CUDA: the batch whose copy is in flight
    try:
        model.eval()
        with torch.inference_mode():
            while True:
                t0 = time.perf_counter()
                item = _next_batch(q, thread)
                stats.wait_seconds += time.perf_counter() - t0
                if isinstance(item, _Failed):
                    raise item.error
                ready: tuple[np.ndarray, np.ndarray] | None
                if item is _END:  # the batch whose copy is still in flight, if any, is the last
                    ready, pending = _finish(pending), None
                else:
                    positions, feats = item
                    feats = {k: v.to(device, non_blocking=cuda) if hasattr(v, "to") else v for k, v in feats.items()}
                    emb = model(feats)["sentence_embedding"].float()
                    if normalize:
                        emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                    if not cuda:
                        ready = (positions, emb.numpy())
                    else:  # copy back while the next batch computes; hand on the previous one
                        host = torch.empty(emb.shape, dtype=emb.dtype, pin_memory=True)
                        host.copy_(emb, non_blocking=True)
                        event = torch.cuda.Event()
                        event.record()
                        ready, pending = _finish(pending), (positions, host, event)
                if ready is not None:
                    stats.texts += len(ready[0])
                    stats.seconds += time.perf_counter() - resumed
                    resumed = None
                    yield ready
                    resumed = time.perf_counter()
                if item is _END:
                    break
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=10)
        if resumed is not None:
            stats.seconds += time.perf_counter() - resumed


def _finish(pending: tuple[np.ndarray, Any, Any] | None) -> tuple[np.ndarray, np.ndarray] | None:
    if pending is None:
        return None
    positions, host, event = pending
    event.synchronize()
    return positions, host.numpy()


def gather(batches: Iterable[tuple[np.ndarray, np.ndarray]], n: int, dim: int) -> np.ndarray:
    """``(n, dim)`` float32 embeddings in text order from :func:`encode_stream`'s batches, which
    come in length order with the positions of their texts."""
    out = np.empty((n, dim), dtype=np.float32)
    for positions, rows in batches:
        out[positions] = rows
    return out
