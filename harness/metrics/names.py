"""Metric names parsed into small objects (``ndcg@10`` -> ``Metric("ndcg", 10)``), as ir_measures does.

Every caller (API, CLI, config) parses through :func:`parse_metric`, so a typo is caught once with
the list of valid names. The names themselves are not listed here: they come from the registry
(:mod:`harness.metrics.registry`), filled by the modules that define the metrics, which this
module imports so that the registry is complete whenever a name is parsed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness import defaults
from harness.metrics import context, core, diversity  # noqa: F401 - their @register lines fill the registry
from harness.metrics.registry import Metric, parse_metric, parse_metrics, specs, valid_names

__all__ = ["DEFAULT_METRICS", "KINDS", "Metric", "parse_metric", "parse_metrics", "valid_names"]


class _Kinds(Mapping):
    """``kind -> (needs a cutoff?, allows no cutoff?, description)``, derived from the registry
    (the shape this table had before the registry; kept for callers that read it)."""

    def __getitem__(self, kind: str) -> tuple[bool, bool, str]:
        s = specs()[kind]
        return (s.cutoff == "required", s.cutoff == "optional", s.description)

    def __iter__(self) -> Iterator[str]:
        return iter(specs())

    def __len__(self) -> int:
        return len(specs())


KINDS: Mapping[str, tuple[bool, bool, str]] = _Kinds()

DEFAULT_METRICS = list(defaults.METRICS)
