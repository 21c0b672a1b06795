"""Loading a model and running it over rows: the one code path both executors run, so a Ray worker
computes exactly what the local process would.

The loaders mirror ``retrievers.encoder.load_sentence_transformer`` and
``retrievers.rerank.load_cross_encoder`` (same constructor arguments, one instance per process and
configuration); those adapters can delegate here so the local executor and the retriever share one
instance. Heavy imports (torch, sentence-transformers) happen only when a model is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.executor import CrossEncoderSettings, EncoderSettings


def missing_folder(location: str) -> bool:
    """An absolute path that does not exist: no hub name looks like one, so a load can fail at once,
    before torch and sentence-transformers are imported (seconds in a fresh Ray worker)."""
    return os.path.isabs(location) and not Path(location).exists()


@cache
def load_sentence_transformer(path_or_name: str, device: str = "cpu") -> Any:
    """One ``SentenceTransformer`` per (location, device) per process."""
    if missing_folder(path_or_name):
        raise InputError(
            f"cannot load sentence-transformers model {path_or_name!r}: no such folder. "
            "Give a local model folder, or a hub name on a machine with network access",
            field="model",
        )
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(path_or_name, device=device)
    except Exception as e:
        raise InputError(
            f"cannot load sentence-transformers model {path_or_name!r}: {type(e).__name__}: {str(e).splitlines()[0]}. "
            "Give a local model folder, or a hub name on a machine with network access "
            "(HF_HUB_OFFLINE=1 forbids downloads)",
            field="model",
        ) from None


@cache
@cache
def load_sentence_transformer_as(path_or_name: str, device: str = "cpu", dtype: str = "float32") -> Any:
    """The process's model for (location, device) computing in ``dtype`` (already resolved:
    :func:`harness.executor.dtypes.resolve_dtype`). float32 is the shared instance itself; another
    dtype is a converted copy, so the float32 model (and its weights digest, the cache's identity)
    is never changed under another caller."""
    base = load_sentence_transformer(path_or_name, device)
    if dtype == "float32":
        return base
    import copy

    import torch

    return copy.deepcopy(base).to(getattr(torch, dtype))


@cache
def load_cross_encoder(location: str, device: str = "cpu", max_length: int | None = None) -> Any:
    """One ``CrossEncoder`` per (location, device, max length) per process; local files first."""
    if missing_folder(location):
        raise InputError(f"cannot load reranker {location!r}: no such folder", field="model")
    from sentence_transformers import CrossEncoder

    local = Path(location).exists()
    attempts = [True] if local or os.environ.get("HF_HUB_OFFLINE") == "1" else [True, False]
    error: Exception | None = None
    for local_only in attempts:
        try:
            model = CrossEncoder(location, device=device, max_length=max_length, local_files_only=local_only)
            break
        except Exception as e:  # transformers raises OSError, ValueError, HTTP errors...
            error = e
    else:
        first = str(error).splitlines()[0] if str(error) else ""
        raise InputError(f"cannot load reranker {location!r} ({type(error).__name__}: {first})", field="model")
    if model.num_labels != 1:
        raise InputError(
            f"reranker {location!r} has {model.num_labels} output labels; a reranker needs one score per pair",
            field="model",
        )
    return model


def sentence_transformer(settings: EncoderSettings, device: str | None = None) -> Any:
    """The process's model for ``settings``, with its max length applied (as ``Encoder`` does)."""
    model = load_sentence_transformer_as(settings.location, device or settings.device, settings.dtype)
    if settings.max_length is not None:
        model.max_seq_length = int(settings.max_length)
    return model


def cross_encoder(settings: CrossEncoderSettings, device: str | None = None) -> Any:
    return load_cross_encoder(settings.location, device or settings.device, settings.max_length)


def encode_texts(model: Any, texts: Sequence[str], *, normalize: bool, batch_size: int) -> np.ndarray:
    """float32 ``(len(texts), dim)`` through the library's ``encode``: what a cluster's workers run.
    The local torch path (``retrievers.encode_pipeline``) gives the same embeddings within 1e-5."""
    emb = model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=normalize,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    out = np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)
    if normalize and _computes_below_float32(model):
        # normalised in bfloat16/float16, the norms are 1 only to ~3 digits: normalise again in float32
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def _computes_below_float32(model: Any) -> bool:
    try:
        return str(next(model.parameters()).dtype) in ("torch.bfloat16", "torch.float16")
    except (AttributeError, StopIteration, TypeError):
        return False


def predict_pairs(
    model: Any, pairs: Sequence[tuple[str, str]], *, batch_size: int, progress: bool = False
) -> np.ndarray:
    """float32 raw logits: the one cross-encoder call the reranker, its training and both executors make
    (``progress``: sentence-transformers' own bar, for the training's validation only)."""
    import torch

    scores = model.predict(
        [list(p) for p in pairs],
        batch_size=batch_size,
        show_progress_bar=progress,
        activation_fn=torch.nn.Identity(),
        convert_to_numpy=True,
    )
    return np.asarray(scores, dtype=np.float32).reshape(len(pairs))
