"""Python entry points: run a config, or benchmark retriever objects from a script or notebook.

``harness run`` and :func:`benchmark` go through the same :class:`~harness.runner.Runner`, so a
script and the CLI give the same numbers for the same comparison.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.config import DEFAULT_CACHE_DIR, RunConfig
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.metrics.names import DEFAULT_METRICS
from harness.model import GoldenDataset
from harness.protocol import Retriever, Stage
from harness.registry import BuildContext, SpecBase, spec_class
from harness.results import Results
from harness.runner import Node, Runner

#: What :func:`benchmark` returns (the same object ``harness run`` saves).
BenchmarkResults = Results


def cache_dir_of(value: str | os.PathLike[str] | None) -> Path:
    """``HARNESS_CACHE_DIR`` overrides the configured cache folder (CI and tests point it elsewhere)."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env or value or DEFAULT_CACHE_DIR).expanduser()


def nodes_from_specs(specs: Mapping[str, SpecBase], ctx: BuildContext) -> dict[str, Node]:
    return {
        name: Node(
            name=name,
            make=(lambda s=spec: s.build(ctx)),
            inputs=spec.inputs(),
            spec=spec.model_dump(mode="json"),
            allow_unknown_docs=bool(getattr(spec, "allow_unknown_docs", False)),
        )
        for name, spec in specs.items()
    }


def run_config(
    config: RunConfig,
    *,
    config_dir: str | os.PathLike[str] | None = None,
    dataset: str | GoldenDataset | None = None,
    split: str | None = None,
    show_progress: bool = True,
) -> Results:
    """Run a validated config (``dataset``/``split`` override the config's, as the CLI flags do)."""
    base = Path(config_dir) if config_dir is not None else Path.cwd()
    ds_arg: Any = dataset if dataset is not None else config.dataset.path
    if isinstance(ds_arg, str) and ds_arg != "demo" and dataset is None:
        ds_arg = str((base / Path(ds_arg).expanduser()) if not Path(ds_arg).expanduser().is_absolute() else ds_arg)
    ds = load_dataset(ds_arg, split or config.dataset.split, name=config.dataset.name)
    cache = cache_dir_of(config.cache_dir)
    ctx = BuildContext(
        cache_dir=cache, config_dir=base, seed=config.seed, depth=config.depth, show_progress=show_progress
    )
    specs = config.specs()
    resolved = config.model_dump(mode="json")
    resolved["dataset"] = {"path": str(ds.source) if ds.source else ds.name, "split": ds.split, "name": ds.name}
    resolved["cache_dir"] = str(cache)
    resolved["retrievers"] = {n: s.model_dump(mode="json") for n, s in specs.items()}
    runner = Runner(
        ds,
        nodes_from_specs(specs, ctx),
        metrics=config.metrics,
        depth=config.depth,
        baseline=config.baseline,
        seed=config.seed,
        latency_queries=config.latency_queries,
        warmup_queries=config.warmup_queries,
        timeout_s=config.timeout_s,
        stats=config.stats.model_dump(),
        cache_dir=cache,
        config=resolved,
        show_progress=show_progress,
    )
    return runner.run()


def benchmark(
    dataset: str | os.PathLike[str] | GoldenDataset = "demo",
    retrievers: Mapping[str, Any] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    split: str = "test",
    depth: int = 100,
    cache_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    latency_queries: int = 100,
    warmup_queries: int = 5,
    timeout_s: float | None = None,
    stats: Mapping[str, Any] | None = None,
    show_progress: bool = True,
) -> Results:
    """Benchmark retrievers from Python, with the engine ``harness run`` uses.

    ``dataset`` is ``"demo"``, a BEIR folder or a :class:`GoldenDataset`. ``retrievers`` maps a name
    to a protocol object (anything with ``index`` and ``search``), a plain ``search(queries, k)``
    function, or a config spec such as ``{"type": "bm25"}`` / ``{"type": "hybrid", "of": ["bm25",
    "mine"]}`` (a spec may build on an object by its name; relative paths in specs are relative to
    the working directory). The :class:`Results` render with ``.table()``, convert with
    ``.to_dataframe()`` and ``.save(DIR)`` writes the folder ``harness run --out DIR`` writes.
    """
    if not retrievers:
        raise InputError("benchmark() needs at least one retriever", field="retrievers")
    ds = load_dataset(dataset, split)
    cache = cache_dir_of(cache_dir)
    ctx = BuildContext(cache_dir=cache, config_dir=Path.cwd(), seed=seed, depth=depth, show_progress=show_progress)
    nodes: dict[str, Node] = {}
    for name, item in retrievers.items():
        if isinstance(item, Mapping):
            if "type" not in item:
                raise InputError(f"retriever {name!r}: a spec needs a 'type'", field=f"retrievers.{name}")
            spec = _validate_spec(name, item)
            nodes.update(nodes_from_specs({name: spec}, ctx))
        else:
            nodes[name] = _object_node(name, item)
    config = {
        "dataset": {"path": str(ds.source) if ds.source else ds.name, "split": ds.split},
        "retrievers": {n: nd.spec for n, nd in nodes.items()},
        "cache_dir": str(cache),
    }
    runner = Runner(
        ds,
        nodes,
        metrics=list(metrics or DEFAULT_METRICS),
        depth=depth,
        baseline=baseline,
        seed=seed,
        latency_queries=latency_queries,
        warmup_queries=warmup_queries,
        timeout_s=timeout_s,
        stats=stats,
        cache_dir=cache,
        config=config,
        show_progress=show_progress,
    )
    return runner.run()


def _object_node(name: str, item: Any) -> Node:
    """A retriever object (or a plain ``search(queries, k)`` function) as a runner node."""
    if isinstance(item, type):
        raise InputError(
            f"retriever {name!r} is the class {item.__qualname__}; pass an instance ({item.__qualname__}(...))",
            field=f"retrievers.{name}",
        )
    kind = type(item)
    spec: dict[str, Any] = {"object": f"{kind.__module__}:{kind.__qualname__}"}
    if not isinstance(item, (Retriever, Stage)) and callable(item):
        from retrievers.custom import FunctionRetriever

        item = FunctionRetriever(item)
        spec = item.params()
    return Node(
        name=name,
        make=(lambda o=item: o),
        spec=spec,
        inputs=[],
        allow_unknown_docs=bool(getattr(item, "allow_unknown_docs", False)),
    )


def _validate_spec(name: str, item: Mapping[str, Any]) -> SpecBase:
    try:
        return spec_class(str(item["type"])).model_validate(dict(item))
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=".".join(["retrievers", name, *map(str, err["loc"])])) from None
