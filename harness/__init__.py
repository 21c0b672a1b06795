"""retrieval-harness: benchmark the retrieval half of RAG systems.

Public API (imported lazily so ``harness --help`` starts fast):
``evaluate``, ``benchmark``, ``load_dataset``, ``Document``, ``Query``, ``GoldenDataset``, ``Run``,
``Retriever``, ``Stage``, ``Results`` (with ``.table()`` and ``.save()``), and composition
(``R``, ``Hybrid``, ``Rerank``, ``MMR``: ``Hybrid(R("bm25"), R("dense")) >> Rerank(model)``).
"""

from __future__ import annotations

from typing import Any

from harness import checkout as _checkout
from harness.imports import import_target as _import_target

_checkout.install()  # the checkout's datasets/ folder never passes for the `datasets` package

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "harness.metrics.evaluate",
    "Evaluation": "harness.metrics.evaluate",
    "Metric": "harness.metrics.names",
    "parse_metric": "harness.metrics.names",
    "Document": "harness.model",
    "Query": "harness.model",
    "GoldenDataset": "harness.model",
    "Qrels": "harness.model",
    "Run": "harness.run",
    "load_dataset": "harness.datasets",
    "Retriever": "harness.protocol",
    "Stage": "harness.protocol",
    "benchmark": "harness.api",
    "Results": "harness.results",
    "HarnessError": "harness.errors",
    "R": "harness.compose",
    "Hybrid": "harness.compose",
    "Rerank": "harness.compose",
    "MMR": "harness.compose",
    "score": "harness.engine",
    "execute": "harness.engine",
    "InputError": "harness.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = _import_target(module if ":" in module else f"{module}:{name}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
