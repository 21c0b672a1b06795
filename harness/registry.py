"""Retriever types by name, resolved lazily (as the ``rerankers`` factory does).

A type name maps to a pydantic *spec* class, given as ``"module:Class"`` so that importing the
harness never imports torch or faiss; the module is imported when a config uses the type. Other
packages add types through the entry-point group ``retrieval_harness.retrievers``.

A spec class is a pydantic model with a ``type`` field, and:
- ``inputs() -> list[str]``: names of other retrievers in the config it builds on (default none);
- ``build(ctx: BuildContext) -> Retriever | Stage``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.errors import InputError

ENTRY_POINT_GROUP = "retrieval_harness.retrievers"

BUILTIN: dict[str, str] = {
    "bm25": "retrievers.bm25:BM25Spec",
    "dense": "retrievers.dense:DenseSpec",
    "hybrid": "retrievers.hybrid:HybridSpec",
    "rerank": "retrievers.rerank:RerankSpec",
    "mmr": "retrievers.mmr:MMRSpec",
    "python": "retrievers.custom:PythonSpec",
    "http": "retrievers.http:HttpSpec",
    "run_file": "retrievers.run_file:RunFileSpec",
}


class SpecBase(BaseModel):
    """Base for retriever specs: unknown keys are errors, and the spec names its inputs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, protected_namespaces=())

    type: str

    def inputs(self) -> list[str]:
        return []

    def build(self, ctx: BuildContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class BuildContext:
    """What a spec may need to build its adapter."""

    cache_dir: Path
    config_dir: Path = field(default_factory=Path.cwd)
    seed: int = 0
    depth: int = 100
    show_progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def resolve_path(self, value: str | Path) -> Path:
        """Relative paths in a config are relative to the config file's folder."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self.config_dir / p)


@cache
def _entry_points() -> dict[str, str]:
    found: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.value
    return found


def available_types() -> dict[str, str]:
    """Type name -> ``module:Class`` for built-ins and installed plugins (built-ins win)."""
    return {**_entry_points(), **BUILTIN}


def spec_class(type_name: str) -> type[SpecBase]:
    types = available_types()
    target = types.get(type_name)
    if target is None:
        raise InputError(f"unknown retriever type {type_name!r}; known types: {', '.join(sorted(types))}", field="type")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise InputError(
            f"retriever type {type_name!r} needs {e.name or module_name!r}, which is not installed "
            f"(pip install it, or check the plugin that registers {type_name!r})",
            field="type",
        ) from None
    try:
        cls = getattr(module, attr)
    except AttributeError:
        raise InputError(f"retriever type {type_name!r}: {target} does not exist", field="type") from None
    return cls
