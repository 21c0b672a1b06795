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
from harness.cache import digest
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
        kind, the weights' digest, the rest of the model's configuration (:func:`config_digest`) and
        :meth:`row_settings`; computed once, as the digest reads the weights."""
        if self._identity is None:
            from retrievers.encoder import weights_digest

            self._identity = {
                "kind": self.name,
                "weights_sha256": weights_digest(self.model),
                "config_sha256": config_digest(self.model, self.location),
                **self.row_settings(),
            }
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


#: files of a model folder that hold weights (their digest is the weights' own, over the loaded tensors)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5", ".msgpack", ".gguf", ".ot", ".npy")


def config_digest(model: Any, location: str) -> str:
    """A digest of everything but the weights that decides a stored row: each module's class and
    configuration as loaded (``get_config_dict()``: SPLADE's pooling and activation, ColBERT's skiplist
    and mask, the transformer's lengths and lower-casing), the prompts, the tokenizer (its whole
    definition: vocabulary, normaliser, pre-tokeniser, special tokens) and, for a local folder, the
    content of every file that is not weights or a model card (modules.json, each module's config,
    the tokenizer files). A folder whose pooling, prompt or skiplist changed then never reads the
    rows of the one before (the weights' digest alone did not change)."""
    import hashlib
    import json

    def stable(o: Any) -> str:  # an object in a config (an activation module): its class, never an address
        return f"{type(o).__module__}.{type(o).__qualname__}"

    modules = []
    for name, module in getattr(model, "named_children", lambda: [])():
        get = getattr(module, "get_config_dict", None)
        cfg = get() if callable(get) else {}
        modules.append([name, stable(module), json.dumps(cfg, sort_keys=True, default=stable)])
    tokenizer = getattr(model, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        spec.pop("truncation", None), spec.pop("padding", None)  # set per call by transformers, not the model's
        tok = json.dumps(spec, sort_keys=True)
    elif tokenizer is not None:
        vocab = getattr(tokenizer, "get_vocab", dict)()
        tok = json.dumps([stable(tokenizer), sorted(vocab.items()), getattr(tokenizer, "init_kwargs", {})],
                         sort_keys=True, default=stable)  # fmt: skip
    else:
        tok = ""
    files: list[tuple[str, str]] = []
    folder = Path(location)
    if folder.is_dir():
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for n in sorted(names):
                if n.lower().endswith(WEIGHT_SUFFIXES) or n.upper().startswith("README") or n.startswith("."):
                    continue
                f = Path(root) / n
                files.append((str(f.relative_to(folder)), hashlib.sha256(f.read_bytes()).hexdigest()))
    return digest({
        "modules": modules,
        "prompts": getattr(model, "prompts", None),
        "default_prompt_name": getattr(model, "default_prompt_name", None),
        "similarity_fn_name": getattr(model, "similarity_fn_name", None),
        "tokenizer": hashlib.sha256(tok.encode()).hexdigest(),
        "files": files,
    })  # fmt: skip


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
