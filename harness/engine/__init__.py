"""The engine: a graph of named nodes is executed (each node once, each finished run stored at
once), then scored by one pure function. See DESIGN.md section 8."""

from harness.engine.execute import DEFAULT_TIMEOUT_S, Outcome, Settings, execute
from harness.engine.graph import Graph, Node
from harness.engine.score import score
from harness.engine.store import RunStore, check_out_dir, owned, run_stem

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Graph",
    "Node",
    "Outcome",
    "RunStore",
    "Settings",
    "check_out_dir",
    "execute",
    "owned",
    "run_stem",
    "score",
]
