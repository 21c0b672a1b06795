"""``benchmark({"scifact": ..., "mine": ...}, retrievers)``: a suite from Python.

:func:`harness.api.benchmark` hands a mapping of datasets over here with itself as the runner, so
each dataset is one ordinary ``benchmark()`` call (this module sits below the API and never
imports it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.config import StatsConfig, dataset_name_problem
from harness.datasets import load_from_config
from harness.errors import InputError
from harness.results.suite import SuiteResults
from harness.suite.run import run_suite


def benchmark_suite(
    bench: Callable[..., Any],
    datasets: Mapping[str, Any],
    retrievers: Mapping[str, Any] | None,
    *,
    out: str | os.PathLike[str] | None = None,
    baseline: str | None = None,
    stats: Mapping[str, Any] | None = None,
    **options: Any,
) -> SuiteResults:
    """Every dataset of ``datasets`` (name -> ``"demo"``, a BEIR folder, a :class:`GoldenDataset`, or
    a ``{corpus, golden}`` / ``{path, split}`` mapping as in a config) through ``bench``, each into
    ``out/<name>/`` when there is an ``out``; the :class:`SuiteResults`."""
    if not datasets:
        raise InputError("a suite needs at least one dataset", field="dataset")
    for name in datasets:
        problem = dataset_name_problem(name)
        if problem is not None:
            raise InputError(f"dataset name {name!r:.60}: {problem}", field="dataset")
    try:
        alpha = StatsConfig.model_validate(dict(stats or {})).alpha
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=".".join(["stats", *map(str, err["loc"])])) from None

    def one(name: str, dataset: Any, folder: Path | None) -> Any:
        if isinstance(dataset, Mapping):  # a config's dataset section; relative paths from the working directory
            section = dict(dataset)
            section.setdefault("split", options.get("split", "test"))
            dataset = load_from_config(section, Path.cwd())
        return bench(dataset, retrievers, out=folder, baseline=baseline, stats=stats, **options)

    return run_suite(datasets, one, out=out, baseline=baseline, alpha=alpha)
