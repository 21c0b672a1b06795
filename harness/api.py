"""Python entry points: run a config, or benchmark retriever objects from a script or notebook.

``harness run`` (:func:`run_config`) and :func:`benchmark` build the same validated
:class:`~harness.config.RunConfig` (:func:`harness.config.parse_config` validates;
:mod:`harness.defaults` holds every default), then one :class:`harness.engine.Session` runs it:
execute each node once, store each finished run, score everything with the one scoring function.
A script and the CLI give the same numbers; the :class:`~harness.results.Results` it returns render
(``.table()``) and save (``.save(DIR)``) themselves. This module only wires what the engine may not
import (adapters: :mod:`harness.bridge`) into the session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import bridge, defaults
from harness.config import RunConfig, parse_config
from harness.engine import Node, Session, run_graph
from harness.errors import InputError
from harness.model import GoldenDataset
from harness.paths import cache_dir_of
from harness.results import Results

__all__ = ["benchmark", "benchmark_config", "cache_dir_of", "run_config", "run_graph"]


#: what the engine gets from the layers above it (see :class:`harness.engine.Session`)
WIRING: dict[str, Any] = {"embedder": bridge.embedder}


def run_config(
    config: RunConfig,
    *,
    config_dir: str | os.PathLike[str] | None = None,
    dataset: str | GoldenDataset | None = None,
    split: str | None = None,
    show_progress: bool = True,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    retrievers: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> Results:
    """Run a validated config (``dataset``/``split`` override the config's, as the CLI flags do).

    With ``out``, every finished run is stored there as it finishes and the folder is completed at
    the end; ``resume`` reuses the runs stored there whose config hash matches. ``retrievers`` runs
    a subset (with what they build on), ``metrics`` scores a subset.
    """
    if config.datasets is not None:  # never silently the default dataset instead of the suite's
        raise InputError("a suite config (datasets:) runs with harness run or plan_suite()", field="datasets")
    session = Session.from_config(
        config,
        config_dir=config_dir,
        dataset=dataset,
        split=split,
        retrievers=retrievers,
        metrics=metrics,
        **WIRING,
    )
    return session.run(out=out, resume=resume, show_progress=show_progress)


def benchmark(
    dataset: str | os.PathLike[str] | GoldenDataset | Mapping[str, Any] = defaults.DATASET,
    retrievers: Mapping[str, Any] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    split: str = defaults.SPLIT,
    depth: int = defaults.DEPTH,
    cache_dir: str | os.PathLike[str] | None = None,
    seed: int = defaults.SEED,
    latency_queries: int = defaults.LATENCY_QUERIES,
    warmup_queries: int = defaults.WARMUP_QUERIES,
    timeout_s: float | None = None,
    stats: Mapping[str, Any] | None = None,
    show_progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> Results:
    """Benchmark retrievers from Python, with the engine ``harness run`` uses.

    ``dataset`` is ``"demo"``, a BEIR folder or a :class:`GoldenDataset` (a mapping ``{name: dataset}``
    runs a suite: :class:`~harness.suite.SuiteResults`, docs/suites.md). ``retrievers`` maps a name
    to a protocol object (anything with ``index`` and ``search``), a plain ``search(queries, k)``
    function, a config spec such as ``{"type": "bm25"}`` / ``{"type": "hybrid", "of": ["bm25",
    "mine"]}`` (a spec may build on an object by its name; relative paths in specs are relative to
    the working directory), or a composition (``Hybrid("bm25", "dense") >> Rerank(model)``, see
    :mod:`harness.compose`). The :class:`~harness.results.Results` render with ``.table()``, convert with
    ``.to_dataframe()``; ``out`` (or ``.save(DIR)`` later) writes the folder ``harness run --out DIR``
    writes, each run as it finishes. Nothing is printed unless ``show_progress``.

    The arguments are checked as a config file is (:func:`benchmark_config`): the same errors, the
    same defaults, ``${ENV_VAR}`` in spec values expanded, a missing run file refused up front.
    """
    if isinstance(dataset, Mapping):  # {name: dataset}: a suite, one benchmark() per dataset (docs/suites.md)
        from harness.suite.python import benchmark_suite

        options = {"metrics": metrics, "split": split, "depth": depth, "cache_dir": cache_dir, "seed": seed}
        options |= {"latency_queries": latency_queries, "warmup_queries": warmup_queries, "timeout_s": timeout_s}
        options |= {"show_progress": show_progress, "resume": resume, "baseline": baseline, "stats": stats}
        return benchmark_suite(benchmark, dataset, retrievers, out=out, **options)  # type: ignore[return-value]
    config, objects = benchmark_config(
        dataset,
        retrievers,
        metrics=metrics,
        baseline=baseline,
        split=split,
        depth=depth,
        cache_dir=cache_dir,
        seed=seed,
        latency_queries=latency_queries,
        warmup_queries=warmup_queries,
        timeout_s=timeout_s,
        stats=stats,
    )
    session = Session.from_config(
        config, config_dir=Path.cwd(), dataset=dataset, split=split, objects=objects, **WIRING
    )
    return session.run(out=out, resume=resume, show_progress=show_progress)


def benchmark_config(
    dataset: str | os.PathLike[str] | GoldenDataset,
    retrievers: Mapping[str, Any] | None,
    **options: Any,
) -> tuple[RunConfig, dict[str, Node]]:
    """:func:`benchmark`'s arguments as the config ``harness run`` would read (validated by the one
    validator, :func:`harness.config.parse_config`, relative paths against the working directory),
    and the graph nodes of the retrievers given as Python objects (placeholders in the config)."""
    from harness.compose import flatten

    if not retrievers:
        raise InputError("benchmark() needs at least one retriever", field="retrievers")
    raw: dict[str, Any] = {}
    objects: dict[str, Node] = {}
    for name, item in flatten(retrievers).items():
        if isinstance(item, Mapping):
            if "type" not in item:
                raise InputError(f"retriever {name!r}: a spec needs a 'type'", field=f"retrievers.{name}")
            raw[name] = dict(item)
        else:
            objects[name] = bridge.object_node(name, item)
            raw[name] = {"type": "object"}  # a placeholder: RunConfig.specs() skips objects
    path = dataset.name if isinstance(dataset, GoldenDataset) else os.fspath(dataset)
    data: dict[str, Any] = {"dataset": {"path": path, "split": options.pop("split", defaults.SPLIT)}, "retrievers": raw}
    data.update({k: (dict(v) if k == "stats" else v) for k, v in options.items() if v is not None})
    if "cache_dir" in data:
        data["cache_dir"] = os.fspath(data["cache_dir"])
    return parse_config(data, config_dir=Path.cwd(), objects=objects), objects
