"""Metric names parsed into small objects (``ndcg@10`` -> ``Metric("ndcg", 10)``), as ir_measures does.

Every caller (API, CLI, config) parses through :func:`parse_metric`, so a typo is caught once with
the list of valid names. The names themselves are not listed here: they come from the registry
(:mod:`harness.metrics.registry`), filled by the modules that define the metrics, which this
module imports so that the registry is complete whenever a name is parsed.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from harness import defaults
from harness.metrics import context, core, diversity, nuggets  # noqa: F401 - their @register lines fill the registry
from harness.metrics.registry import Metric, bounds_of, parse_metric, parse_metrics, specs, valid_names

# KINDS and DEFAULT_METRICS: deprecated, given by __getattr__ below for one release
__all__ = ["DEFAULT_METRICS", "KINDS", "Metric", "bounds_of", "parse_metric", "parse_metrics", "valid_names"]  # noqa: F822


def metric_key(name: str) -> str:
    """Canonical metric name (``nDCG@10`` -> ``ndcg@10``); names we cannot parse stay as written."""
    from harness.errors import InputError

    try:
        return parse_metric(name).name
    except InputError:
        return str(name).strip().lower()


def folder_spelling(asked: Iterable[str], have: Iterable[str], lacking: str, *, field: str = "--metrics") -> list[str]:
    """The folder's spelling of each metric asked (``NDCG@10`` finds ``ndcg@10``: a folder keeps the
    names its run wrote, a user types them as they like), in the order asked, each once, blank names
    skipped. Every name it lacks in one ``InputError``: ``"{lacking} a, b (it has: ...)"``. The one
    pick the gate, ``harness power`` and the all-pairs tests share."""
    from harness.errors import InputError

    have = list(dict.fromkeys(have))
    by_key = {metric_key(m): m for m in have}
    wanted = [str(m) for m in asked if str(m).strip()]
    missing = [m for m in wanted if metric_key(m) not in by_key]
    if missing:
        raise InputError(f"{lacking} {', '.join(missing)} (it has: {', '.join(have)})", field=field)
    return list(dict.fromkeys(by_key[metric_key(m)] for m in wanted))


class _Kinds(Mapping):
    """``kind -> (needs a cutoff?, allows no cutoff?, description)``, derived from the registry
    (the shape this table had before the registry; deprecated: read :func:`specs`)."""

    def __getitem__(self, kind: str) -> tuple[bool, bool, str]:
        s = specs()[kind]
        return (s.cutoff == "required", s.cutoff == "optional", s.description)

    def __iter__(self) -> Iterator[str]:
        return iter(specs())

    def __len__(self) -> int:
        return len(specs())


#: deprecated names (one release): what replaces each
_DEPRECATED = {"KINDS": "harness.metrics.registry.specs()", "DEFAULT_METRICS": "harness.defaults.METRICS"}


def __getattr__(name: str) -> Any:
    """``KINDS`` and ``DEFAULT_METRICS``, each with a ``DeprecationWarning`` naming its replacement."""
    if name not in _DEPRECATED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} is deprecated; use {_DEPRECATED[name]}", DeprecationWarning, stacklevel=2)
    return _Kinds() if name == "KINDS" else list(defaults.METRICS)
