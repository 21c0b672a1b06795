"""The metrics core: the registry of metrics, the one numpy implementation, and the evaluation entry points."""

from typing import Any

from harness.metrics import names as _names
from harness.metrics.evaluate import CompiledQrels, Evaluation, check_overlap, evaluate, evaluate_dicts, evaluate_run
from harness.metrics.names import Metric, parse_metric, parse_metrics, valid_names
from harness.metrics.registry import MetricSpec, register, specs

__all__ = [
    "DEFAULT_METRICS",
    "KINDS",
    "CompiledQrels",
    "Evaluation",
    "Metric",
    "MetricSpec",
    "check_overlap",
    "evaluate",
    "evaluate_dicts",
    "evaluate_run",
    "parse_metric",
    "parse_metrics",
    "register",
    "specs",
    "valid_names",
]


def __getattr__(name: str) -> Any:
    """Deprecated names (one release), as :mod:`harness.metrics.names` gives them."""
    return getattr(_names, name)
