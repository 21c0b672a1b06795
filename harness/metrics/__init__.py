"""The metrics core: names, the one numpy implementation, and the evaluation entry points."""

from harness.metrics.evaluate import Evaluation, evaluate, evaluate_dicts, evaluate_run
from harness.metrics.names import DEFAULT_METRICS, KINDS, Metric, parse_metric, parse_metrics

__all__ = [
    "DEFAULT_METRICS",
    "KINDS",
    "Evaluation",
    "Metric",
    "evaluate",
    "evaluate_dicts",
    "evaluate_run",
    "parse_metric",
    "parse_metrics",
]
