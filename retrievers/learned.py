"""What the learned sparse (``splade``) and multi-vector (``colbert``) types share: where their model
is and which sentence-transformers they need. Their exact top k and a rerank stage's tail follow the
harness's ranking rule through :mod:`retrievers.ties`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness import extras
from harness.errors import InputError
from harness.model import Query

#: sentence-transformers releases that bring each encoder class
MIN_VERSION = {"sparse": 5, "multivector": 6}


def require_sentence_transformers(extra: str, subject: str) -> None:
    """The one line naming the extra when sentence-transformers is missing or too old for ``extra``
    (read from the installed metadata: nothing is imported)."""
    if extras.absent("sentence_transformers"):
        raise InputError(extras.line([subject], extra), field="type")
    try:
        major = int(version("sentence-transformers").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return
    if major < MIN_VERSION[extra]:
        raise InputError(
            f"{extras.line([subject], extra)} (sentence-transformers {version('sentence-transformers')} is "
            f"installed; {subject} need >= {MIN_VERSION[extra]})",
            field="type",
        )


def resolve_location(model: str, config_dir: Path | None = None) -> str:
    """A local folder (resolved; relative to the config's folder when not found from here) or a hub
    name. Offline rules as dense: with ``HF_HUB_OFFLINE=1`` a hub name loads only from the local hub
    cache."""
    p = Path(model).expanduser()
    candidates = [p] + ([config_dir / p] if config_dir is not None and not p.is_absolute() else [])
    for candidate in candidates:
        if candidate.exists():
            return str(candidate.resolve())
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise InputError(f"no model folder at {p}", field="model")
    return model


def model_location(spec: Any, config_dir: Path | None) -> str:
    """Where ``spec.model`` is (:func:`resolve_location`), with torch's threads set to
    ``spec.threads`` first (the model runs in this process)."""
    if spec.threads:
        from retrievers.encoder import set_threads

        set_threads(spec.threads)
    return resolve_location(spec.model, config_dir)


def load_encoder(encoder_class: Any, location: str, device: str) -> Any:
    """``encoder_class(location, device=device)`` (a sentence-transformers ``SparseEncoder`` or
    ``MultiVectorEncoder``); a model that does not load is named in one line, with the hint."""
    try:
        return encoder_class(location, device=device)
    except Exception as e:
        raise InputError(
            f"cannot load {encoder_class.__name__} {location!r}: {type(e).__name__}: "
            f"{(str(e).splitlines() or [''])[0]}. "
            "Give a local model folder, or a hub name on a machine with network access "
            "(HF_HUB_OFFLINE=1 forbids downloads)",
            field="model",
        ) from None


class LearnedRetriever:
    """The plumbing a retriever over a learned model of its own shares (SPLADE, ColBERT): the model's
    location from the spec (torch's threads set), the run's query memo (off while serving, where
    every request encodes its query) and query encoding before search is timed. A subclass loads
    its model and sets the rest in :meth:`_load`."""

    name = ""

    def __init__(
        self,
        spec: Any,
        *,
        cache_dir: str | Path | None = None,
        config_dir: Path | None = None,
        show_progress: bool = True,
    ) -> None:
        self.spec = spec
        self.show_progress = show_progress
        self.location = model_location(spec, config_dir)
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self._identity: dict[str, Any] | None = None
        self._memo: dict[str, Any] = {}
        self._use_memo = True
        self._load()

    def _load(self) -> None:
        raise NotImplementedError

    def row_settings(self) -> dict[str, Any]:
        """The settings besides the weights that change a stored document row (a subclass's own)."""
        raise NotImplementedError

    @property
    def identity(self) -> dict[str, Any]:
        """Everything that changes a document's stored row (the cache key is a digest of it): the
        kind, the weights' digest and :meth:`row_settings`; computed once, as the digest reads the weights."""
        if self._identity is None:
            from retrievers.encoder import weights_digest

            self._identity = {"kind": self.name, "weights_sha256": weights_digest(self.model), **self.row_settings()}
        return self._identity

    def encode_queries(self, queries: Sequence[Query], *, use_memo: bool = True) -> Any:
        raise NotImplementedError

    def serving_mode(self, enabled: bool = True) -> None:
        """Serving (``harness load``): every request encodes its query; off, queries are memoised per run."""
        self._use_memo = not enabled

    def prepare_queries(self, queries: Sequence[Query]) -> None:
        """Encode the run's queries before search is timed (the engine calls this)."""
        if self._use_memo and len(queries):
            self.encode_queries(queries)


def architectures(folder: str | os.PathLike[str]) -> list[str]:
    """``architectures`` of a model folder's ``config.json`` (empty when it has none)."""
    import json

    try:
        arch = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(a) for a in arch] if isinstance(arch, list) else []


def prompt_of(model: Any, names: tuple[str, ...]) -> str | None:
    """The prompt ``encode_document`` / ``encode_query`` would use: the first of ``names`` the model has."""
    prompts = getattr(model, "prompts", None) or {}
    for name in names:
        if prompts.get(name):
            return str(prompts[name])
    return None
