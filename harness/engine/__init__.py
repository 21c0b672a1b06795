"""The engine: a graph of named nodes is executed (each node once, each finished run stored at
once), then scored by one pure function; a :class:`Session` owns one run end to end. See
docs/architecture.md."""

from harness.engine.graph import Graph, Node
from harness.engine.schedule import DEFAULT_TIMEOUT_S, Outcome, ScheduleSettings, execute
from harness.engine.score import score
from harness.engine.session import Session, run_graph
from harness.results.store import RunStore, check_out_dir, owned, run_stem

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
