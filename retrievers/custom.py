"""A team's own retriever, named by import path: ``{type: python, class: "pkg.module:Class", params: {...}}``
or a plain search function ``{type: python, function: "module:search"}``.

The team's code needs nothing from us: any object with ``index(corpus)`` and ``search(queries, k)``
fits (the protocol is structural, as MTEB v2's). Import paths are resolved against the config
file's folder first, then ``PYTHONPATH``, so a config next to ``my_retriever.py`` just works.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from harness.errors import InputError
from harness.model import Document, Query
from harness.protocol import Retriever, SearchResult
from harness.registry import BuildContext, SpecBase


class PythonSpec(SpecBase):
    """Your own Python class (class: module:Class, params: {...}) or search function (function: module:fn)."""

    model_config = ConfigDict(serialize_by_alias=True)

    type: Literal["python"] = "python"
    class_: str | None = Field(
        None, alias="class", description="'package.module:ClassName', instantiated as ClassName(**params)"
    )
    function: str | None = Field(None, description="'package.module:function', called as function(queries, k)")
    params: dict[str, Any] = Field(default_factory=dict, description="keyword arguments for the class")
    allow_unknown_docs: bool = Field(False, description="score doc ids that are not in the corpus (as non-relevant)")

    @model_validator(mode="after")
    def _one_target(self) -> PythonSpec:
        if (self.class_ is None) == (self.function is None):
            raise ValueError("give exactly one of 'class' (module:Class) or 'function' (module:function)")
        if self.function is not None and self.params:
            raise ValueError("'params' goes with 'class'; a function is called as function(queries, k)")
        for target in (self.class_, self.function):
            if target is not None:
                _split(target)
        return self

    def build(self, ctx: BuildContext) -> Any:
        if self.class_ is not None:
            cls = load_object(self.class_, ctx.config_dir, field="class")
            return instantiate(cls, self.params, self.class_)
        fn = load_object(self.function or "", ctx.config_dir, field="function")
        if not callable(fn):
            raise InputError(f"{self.function} is a {type(fn).__name__}, not a function", field="function")
        return FunctionRetriever(fn)


def _split(target: str) -> tuple[str, str]:
    module, sep, attr = target.partition(":")
    if not sep or not module.strip() or not attr.strip():
        raise ValueError(f"{target!r} is not an import path of the form 'package.module:Name'")
    return module.strip(), attr.strip()


@contextmanager
def _importable_from(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while importing (then restored: nothing leaks)."""
    entry = str(Path(folder).resolve())
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with suppress(ValueError):  # the imported code may have changed sys.path itself
            sys.path.remove(entry)


def load_object(target: str, config_dir: Path, *, field: str = "class") -> Any:
    """Import ``module:attr`` (``attr`` may be dotted: ``module:Outer.Inner``) with ``config_dir`` on the path."""
    try:
        module_name, attr = _split(target)
    except ValueError as e:
        raise InputError(str(e), field=field) from None
    with _importable_from(config_dir):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            missing = e.name or module_name
            if module_name == missing or module_name.startswith(missing + "."):
                raise InputError(
                    f"cannot import {module_name!r} for {target!r}: no module named {missing!r} in the config's "
                    f"folder ({config_dir}) or on PYTHONPATH",
                    field=field,
                ) from None
            raise InputError(
                f"importing {module_name!r} failed: it needs {missing!r}, which is not installed", field=field
            ) from None
        except Exception as e:
            raise InputError(f"importing {module_name!r} failed: {type(e).__name__}: {e}", field=field) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            where = getattr(module, "__file__", module_name)
            names = sorted(n for n in vars(module) if not n.startswith("_") and n[:1].isupper())
            hint = f" (names there: {', '.join(names[:10])})" if names and field == "class" else ""
            raise InputError(f"{module_name!r} ({where}) has no attribute {attr!r}{hint}", field=field) from None
    return obj


def instantiate(cls: Any, params: dict[str, Any], target: str) -> Any:
    """``cls(**params)``, then check the result has ``index`` and ``search``."""
    if not callable(cls):
        raise InputError(f"{target} is a {type(cls).__name__}, not a class", field="class")
    try:
        obj = cls(**params)
    except TypeError as e:
        try:
            signature = f"{getattr(cls, '__name__', target)}{inspect.signature(cls)}"
        except (TypeError, ValueError):
            signature = target
        raise InputError(
            f"{target}(**params) failed: {e} (signature: {signature}; params: {params})", field="params"
        ) from None
    if not isinstance(obj, Retriever):
        missing = [m for m in ("index", "search") if not callable(getattr(obj, m, None))]
        raise InputError(
            f"{target} made a {type(obj).__name__} without {' and '.join(missing)}(); a retriever needs "
            "index(corpus) and search(queries, k) (for a search function alone use 'function:')",
            field="class",
        )
    return obj


class FunctionRetriever:
    """A plain ``search(queries, k)`` function as a retriever (the function indexes nothing)."""

    def __init__(self, fn: Callable[[Sequence[Query], int], SearchResult]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "function")

    def index(self, corpus: Sequence[Document]) -> None:
        return None

    def search(self, queries: Sequence[Query], k: int) -> SearchResult:
        return self.fn(queries, k)

    def params(self) -> dict[str, Any]:
        return {"function": f"{getattr(self.fn, '__module__', '?')}:{getattr(self.fn, '__qualname__', self.name)}"}
