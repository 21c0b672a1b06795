"""The engine: a graph of named nodes is executed (each node once, each finished run stored at
once), then scored by one pure function; a :class:`Session` owns one run end to end. See
docs/architecture.md.

The names below but :func:`score` are imported when first used (PEP 562): ``harness evaluate`` scores
with ``harness.engine.score`` alone, and importing the package must not bring the session's datasets, pandas
and graph along (they would slow the command's start-up)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# eager: the function shares its name with its module, and importing ``harness.engine.score`` anywhere
# would otherwise leave the module, not the function, as ``harness.engine.score``
from harness.engine.score import score

if TYPE_CHECKING:
    from harness.engine.graph import Graph, Node
    from harness.engine.schedule import DEFAULT_TIMEOUT_S, Outcome, ScheduleSettings, execute
    from harness.engine.session import Session, run_graph
    from harness.results.store import RunStore, check_out_dir, owned, run_stem

_EXPORTS = {
    "DEFAULT_TIMEOUT_S": "harness.engine.schedule",
    "Graph": "harness.engine.graph",
    "Node": "harness.engine.graph",
    "Outcome": "harness.engine.schedule",
    "RunStore": "harness.results.store",
    "ScheduleSettings": "harness.engine.schedule",
    "Session": "harness.engine.session",
    "check_out_dir": "harness.results.store",
    "execute": "harness.engine.schedule",
    "owned": "harness.results.store",
    "run_graph": "harness.engine.session",
    "run_stem": "harness.results.store",
}

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Graph",
    "Node",
    "Outcome",
    "RunStore",
    "ScheduleSettings",
    "Session",
    "check_out_dir",
    "execute",
    "owned",
    "run_graph",
    "run_stem",
    "score",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
