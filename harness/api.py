"""Python entry points: run a config, or benchmark retriever objects from a script or notebook.

``harness run`` (:func:`run`: a :class:`RunOptions` in, the results printed and the exit code out;
the one-dataset path through :func:`run_config`, a suite's through :mod:`harness.suite`) and
:func:`benchmark` build the same validated
:class:`~harness.config.RunConfig` (:func:`harness.config.parse_config` validates;
:mod:`harness.defaults` holds every default), then one :class:`harness.engine.Session` runs it:
execute each node once, store each finished run, score everything with the one scoring function.
A script and the CLI give the same numbers; the :class:`~harness.results.Results` it returns render
(``.table()``) and save (``.save(DIR)``) themselves. This module only wires what the engine may not
import (adapters: :mod:`harness.bridge`) into the session.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import bridge, defaults, notices
from harness.config import RunConfig, load_config, parse_config
from harness.engine import Node, Session, check_out_dir, run_graph
from harness.errors import InputError
from harness.metrics.names import parse_metrics
from harness.model import GoldenDataset
from harness.paths import cache_dir_of
from harness.results import Results
from harness.results.folder import default_out_dir

__all__ = ["RunOptions", "benchmark", "benchmark_config", "cache_dir_of", "run", "run_config", "run_graph"]

log = logging.getLogger("harness")


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


@dataclass(frozen=True)
class RunOptions:
    """What ``harness run`` was asked, its flags parsed (comma lists split; None: the flag not given;
    ``datasets``: of a suite config, only these)."""

    config: str | None = None
    out: str | None = None
    dataset: str | None = None
    datasets: list[str] | None = None
    split: str | None = None
    show_progress: bool = True
    resume: bool = False
    retrievers: list[str] | None = None
    metrics: list[str] | None = None
    strict: bool = False
    executor: str | None = None
    #: the command line as typed (after ``harness``): the interrupted note repeats it with ``--resume``
    argv: tuple[str, ...] = ()


def run(o: RunOptions) -> int:
    """``harness run``: the config (without one, the default comparison on the demo set) into a results
    folder, a suite config into a suite folder; the table printed, warnings repeated after it, a line
    per failed retriever on stderr. Exit 0, 1 where one failed; bad input: :class:`InputError` first."""
    from harness.presets import core_install_note, default_config

    config = load_config(o.config) if o.config else default_config()
    config_dir = Path(o.config).expanduser().resolve().parent if o.config else Path.cwd()
    if o.executor:
        config = config.model_copy(update={"executor": {"type": o.executor}})
    metrics = [m.name for m in parse_metrics(",".join(o.metrics))] if o.metrics else None
    # every missing extra at once, before a folder is made (harness.extras); --metrics checked too
    config.require_extras(o.config, metrics=metrics)
    if config.datasets is not None or o.datasets is not None:  # a suite: docs/suites.md
        return _run_suite(o, config, config_dir, metrics)
    if o.resume and not o.out:
        raise InputError("--resume continues a results folder: give it with --out DIR", field="--resume")
    out = Path(o.out) if o.out else default_out_dir(o.dataset or config.dataset.label)
    check_out_dir(out)  # fail before hours of work, not after
    with notices.collect(strict=o.strict) as warned:
        try:
            results = run_config(config, config_dir=config_dir, dataset=o.dataset, split=o.split,
                                 show_progress=o.show_progress, out=out, resume=o.resume,
                                 retrievers=o.retrievers or None, metrics=metrics)  # fmt: skip
        except KeyboardInterrupt:
            from harness.results.folder import interrupted_note

            raise KeyboardInterrupt(interrupted_note(out, list(o.argv))) from None
    from harness.results.terminal import make_console, print_results  # after the run: matplotlib & co.

    print_results(results)
    if config.slices == "tag":
        from harness.results.slices import print_by_tag

        print_by_tag(results, make_console())
    log.info("results written to %s", results.folder or out)
    warned.summary()
    if not o.config and (note := core_install_note()):  # bare `harness run` on the core: the next step, last
        log.info(note)
    return _failed({None: results.failures})


def _run_suite(o: RunOptions, config: RunConfig, config_dir: Path, metrics: list[str] | None) -> int:
    """A suite config: every dataset into ``out/<dataset>/``, then the suite table (docs/suites.md)."""
    from harness.results.suite_table import print_suite
    from harness.suite.run import run_suite_config

    def one(name: str, cfg: RunConfig, folder: Path | None) -> Results:
        return run_config(cfg, config_dir=config_dir, split=o.split, show_progress=o.show_progress, out=folder,
                          resume=o.resume, retrievers=o.retrievers, metrics=metrics)  # fmt: skip

    out = Path(o.out) if o.out else default_out_dir("suite")
    suite = run_suite_config(config, config_dir, one, out=out, datasets=o.datasets, dataset=o.dataset,
                             resume=o.resume, out_given=bool(o.out))  # fmt: skip
    print_suite(suite)
    log.info("suite written to %s (one results folder per dataset)", out)
    return _failed(suite.failures)


def _failed(failures: Mapping[str | None, Mapping[str, str]]) -> int:
    """One stderr line per failed retriever (``on <dataset>`` in a suite); 1 where any failed."""
    for dataset, failed in failures.items():
        for name, error in failed.items():
            print(f"error: retriever {name!r} failed{f' on {dataset}' if dataset else ''}: {error}", file=sys.stderr)
    return 1 if any(failures.values()) else 0
