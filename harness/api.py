"""Python entry points: run a config, or benchmark retriever objects from a script or notebook.

``harness run`` and :func:`benchmark` build the same :class:`~harness.engine.Graph` and go through
:func:`run_graph`: execute each node once (:func:`harness.engine.execute`), store each finished run
(:class:`harness.engine.RunStore`, when there is a results folder), then score everything with the
one scoring function (:func:`harness.engine.score`). A script and the CLI give the same numbers.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, ValidationError

from harness import __version__, progress
from harness.config import RunConfig
from harness.datasets import load_dataset
from harness.efficiency import Cost
from harness.engine import Graph, Node, Outcome, RunStore, Settings, execute, score
from harness.engine.execute import DEFAULT_TIMEOUT_S
from harness.errors import HarnessError, InputError
from harness.manifest import build_manifest
from harness.metrics.evaluate import CompiledQrels
from harness.metrics.names import DEFAULT_METRICS, Metric, parse_metrics
from harness.model import GoldenDataset
from harness.paths import cache_dir_of
from harness.protocol import Retriever, Stage
from harness.registry import BuildContext, SpecBase, spec_class
from harness.results import Results
from harness.validate import check_corpus_encodable

log = logging.getLogger("harness")

__all__ = ["BenchmarkResults", "benchmark", "cache_dir_of", "run_config", "run_graph"]


class BenchmarkResults(Results):
    """:class:`~harness.results.Results` that also render themselves (tables) and save a folder."""

    _costs: dict[str, Cost] = PrivateAttr(default_factory=dict)

    def table(self, fmt: str = "markdown") -> str:
        """The comparison table as text: ``markdown`` (as ``table.md``), ``csv``, ``html`` or ``latex``."""
        from harness import report

        return report.render_table(self, fmt)

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the results folder ``harness run --out DIR`` writes (runs, qrels, results.json,
        tables, plots); an existing results folder is replaced as one step."""
        from harness.engine.execute import Outcome as _Outcome
        from harness.report import write_reports

        meta = self.manifest.get("retrievers") or {}
        with RunStore(folder) as store:
            for name, run in self.runs.items():
                m = meta.get(name) or {}
                out = _Outcome(name, run=run, cost=self._costs.get(name), params=dict(m.get("params") or {}))
                store.save(
                    out, config_hash=m.get("config_hash"), spec=m.get("spec") or {}, inputs=m.get("inputs") or []
                )
            if self.qrels is not None:
                store.write_results(self, self.qrels)
            return store.publish(self, lambda d: write_reports(self, d))


def graph_from_specs(specs: Mapping[str, SpecBase], ctx: BuildContext) -> Graph:
    return Graph(nodes_from_specs(specs, ctx))


def nodes_from_specs(specs: Mapping[str, SpecBase], ctx: BuildContext) -> list[Node]:
    return [
        Node(
            name=name,
            make=(lambda s=spec: s.build(ctx)),
            inputs=spec.inputs(),
            spec=recorded_spec(spec),
            allow_unknown_docs=bool(getattr(spec, "allow_unknown_docs", False)),
        )
        for name, spec in specs.items()
    ]


def recorded_spec(spec: SpecBase) -> dict[str, Any]:
    """What results.json records of a spec (secrets left out where the spec declares them)."""
    redact = getattr(spec, "redacted", None)
    return dict(redact()) if callable(redact) else spec.model_dump(mode="json")


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
) -> BenchmarkResults:
    """Run a validated config (``dataset``/``split`` override the config's, as the CLI flags do).

    With ``out``, every finished run is stored there as it finishes and the folder is completed at
    the end; ``resume`` reuses the runs stored there whose config hash matches. ``retrievers`` runs
    a subset (with what they build on), ``metrics`` scores a subset.
    """
    base = Path(config_dir) if config_dir is not None else Path.cwd()
    ds_arg: Any = dataset if dataset is not None else config.dataset.path
    if isinstance(ds_arg, str) and ds_arg != "demo" and dataset is None:
        ds_arg = str((base / Path(ds_arg).expanduser()) if not Path(ds_arg).expanduser().is_absolute() else ds_arg)
    ds = load_dataset(ds_arg, split or config.dataset.split, name=config.dataset.name)
    check_corpus_encodable(ds)  # a lone surrogate fails here, not after hours of work
    cache = cache_dir_of(config.cache_dir)
    ctx = BuildContext(cache_dir=cache, config_dir=base, seed=config.seed, depth=config.depth, show_progress=False)
    specs = config.specs()
    graph = graph_from_specs(specs, ctx)
    if retrievers:
        graph = graph.select(retrievers)
    baseline = config.baseline if config.baseline in graph else None
    if config.baseline and baseline is None:
        log.info("baseline %r is not among the retrievers run: no significance tests", config.baseline)
    resolved = config.model_dump(mode="json")
    resolved["dataset"] = {"path": str(ds.source) if ds.source else ds.name, "split": ds.split, "name": ds.name}
    resolved["cache_dir"] = str(cache)
    resolved["retrievers"] = {n: graph[n].spec for n in graph.order}
    return run_graph(
        graph,
        ds,
        Settings(
            depth=config.depth,
            seed=config.seed,
            latency_queries=config.latency_queries,
            warmup_queries=config.warmup_queries,
            timeout_s=config.timeout_s or DEFAULT_TIMEOUT_S,
        ),
        metrics=list(metrics) if metrics else config.metrics,
        baseline=baseline,
        stats=config.stats.model_dump(),
        config_record=resolved,
        cache_dir=cache,
        out=out,
        resume=resume,
        show_progress=show_progress,
    )


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
    show_progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> BenchmarkResults:
    """Benchmark retrievers from Python, with the engine ``harness run`` uses.

    ``dataset`` is ``"demo"``, a BEIR folder or a :class:`GoldenDataset`. ``retrievers`` maps a name
    to a protocol object (anything with ``index`` and ``search``), a plain ``search(queries, k)``
    function, a config spec such as ``{"type": "bm25"}`` / ``{"type": "hybrid", "of": ["bm25",
    "mine"]}`` (a spec may build on an object by its name; relative paths in specs are relative to
    the working directory), or a composition (``Hybrid("bm25", "dense") >> Rerank(model)``, see
    :mod:`harness.compose`). The :class:`BenchmarkResults` render with ``.table()``, convert with
    ``.to_dataframe()``; ``out`` (or ``.save(DIR)`` later) writes the folder ``harness run --out DIR``
    writes, each run as it finishes. Nothing is printed unless ``show_progress``.
    """
    from harness.compose import flatten

    if not retrievers:
        raise InputError("benchmark() needs at least one retriever", field="retrievers")
    ds = load_dataset(dataset, split)
    check_corpus_encodable(ds)
    cache = cache_dir_of(cache_dir)
    ctx = BuildContext(cache_dir=cache, config_dir=Path.cwd(), seed=seed, depth=depth, show_progress=False)
    nodes: list[Node] = []
    specs: dict[str, SpecBase] = {}
    for name, item in flatten(retrievers).items():
        if isinstance(item, Mapping):
            if "type" not in item:
                raise InputError(f"retriever {name!r}: a spec needs a 'type'", field=f"retrievers.{name}")
            specs[name] = _validate_spec(name, item)
            nodes.extend(nodes_from_specs({name: specs[name]}, ctx))
        else:
            nodes.append(_object_node(name, item))
    graph = Graph(nodes)
    if baseline is not None and baseline not in graph:
        raise InputError(
            f"baseline {baseline!r} is not one of the retrievers ({', '.join(graph.nodes)})", field="baseline"
        )
    from harness.config import StatsConfig

    try:
        stats_ok = StatsConfig.model_validate(dict(stats or {})).model_dump()
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=".".join(["stats", *map(str, err["loc"])])) from None
    config = {
        "dataset": {"path": str(ds.source) if ds.source else ds.name, "split": ds.split},
        "retrievers": {n: graph[n].spec for n in graph.order},
        "cache_dir": str(cache),
        "stats": stats_ok,
    }
    return run_graph(
        graph,
        ds,
        Settings(
            depth=depth,
            seed=seed,
            latency_queries=latency_queries,
            warmup_queries=warmup_queries,
            timeout_s=timeout_s or DEFAULT_TIMEOUT_S,
        ),
        metrics=list(metrics or DEFAULT_METRICS),
        baseline=baseline,
        stats=stats_ok,
        config_record=config,
        cache_dir=cache,
        out=out,
        resume=resume,
        show_progress=show_progress,
    )


def run_graph(
    graph: Graph,
    ds: GoldenDataset,
    settings: Settings,
    *,
    metrics: Sequence[str | Metric],
    baseline: str | None,
    stats: Mapping[str, Any],
    config_record: Mapping[str, Any],
    cache_dir: Path,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    show_progress: bool = False,
) -> BenchmarkResults:
    """Execute ``graph`` on ``ds`` and score it; with ``out``, store each run as it finishes."""
    metrics = parse_metrics(metrics)
    record = {
        **dict(config_record),
        "depth": settings.depth,
        "baseline": baseline,
        "metrics": [m.name for m in metrics],
        "seed": settings.seed,
        "latency_queries": settings.latency_queries,
        "warmup_queries": settings.warmup_queries,
        "timeout_s": settings.timeout_s,
    }
    hashes = graph.config_hashes(
        {
            "dataset": ds.fingerprint,
            "depth": settings.depth,
            "seed": settings.seed,
            "latency_queries": settings.latency_queries,
            "warmup_queries": settings.warmup_queries,
            "harness": __version__,
        }
    )
    cq = CompiledQrels(ds.qrels)
    embed = _embedder(graph, ds, cache_dir, show_progress) if any(m.needs_embeddings for m in metrics) else None
    tags = {q.id: list(q.metadata.get("tags") or []) for q in ds.queries if isinstance(q.metadata.get("tags"), list)}
    outcomes: dict[str, Outcome] = {}
    manifest = build_manifest(
        dataset=ds,
        config=record,
        seed=settings.seed,
        retrievers={},
        latency_queries=min(settings.latency_queries, len(ds.queries)),
    )

    def summarise(complete: bool) -> BenchmarkResults:
        ok = {n: o for n, o in outcomes.items() if o.ok}
        manifest["retrievers"] = {
            n: {
                "spec": graph[n].spec,
                "inputs": graph[n].inputs,
                "params": outcomes[n].params,
                "status": "ok" if outcomes[n].ok else "failed",
                "config_hash": hashes[n],
                "reused": outcomes[n].reused,
            }
            for n in graph.order
            if n in outcomes
        }
        res = score(
            {n: o.run for n, o in ok.items()},
            cq,
            metrics,
            baseline=baseline if (complete and baseline in outcomes) else None,
            seed=settings.seed,
            stats=stats,
            statistics=complete,
            embed=embed,
            efficiency=_efficiency(graph, outcomes, len(ds.queries)),
            failures={n: o.error for n, o in outcomes.items() if o.error},
            manifest=manifest,
            query_tags=tags,
            complete=complete,
            results_cls=BenchmarkResults,
        )
        res._costs = {n: o.cost for n, o in ok.items() if o.cost is not None}
        return res

    store = RunStore(out, resume=resume) if out is not None else None
    # the harness's own display (third-party bars silenced): on a terminal always unless switched
    # off; off a terminal (CI logs, a pipe) plain timestamped lines only when asked
    session = progress.session(sys.stderr, enabled=True if show_progress else None)
    reporter = session.__enter__()
    try:
        if store is not None:
            store.__enter__()
        reuse = store.stored(hashes) if (store is not None and resume) else {}
        for outcome in execute(graph, ds, settings, reuse=reuse):
            outcomes[outcome.name] = outcome
            if store is not None:
                node = graph[outcome.name]
                if not (outcome.reused and store.holds(outcome.name, hashes[outcome.name])):
                    _stored(
                        lambda o=outcome, n=node: store.save(o, config_hash=hashes[o.name], spec=n.spec, inputs=n.inputs)
                    )
                partial = summarise(complete=False)
                _stored(lambda p=partial: store.write_results(p, ds.qrels))
        reporter.phase("scoring and statistics")
        results = summarise(complete=True)
        if store is not None:
            from harness.report import write_reports

            _stored(lambda: store.publish(results, lambda d: write_reports(results, d)))
        return results
    finally:
        session.__exit__(None, None, None)
        if store is not None:
            store.__exit__(None, None, None)


def _stored(write: Any) -> Any:
    """A results folder that cannot be written (full disk, removed) stops the run with exit 2;
    every run stored before stays."""
    try:
        return write()
    except OSError as e:
        raise InputError(
            f"cannot write the results folder ({e.strerror or e})", path=getattr(e, "filename", None)
        ) from None


def _efficiency(graph: Graph, outcomes: Mapping[str, Outcome], n_queries: int) -> dict[str, dict[str, Any]]:
    """A pipeline's cost adds up its components' (each counted once)."""
    out: dict[str, dict[str, Any]] = {}
    for name, o in outcomes.items():
        if not o.ok:
            continue
        closure = graph.closure(name)
        costs = [outcomes[n].cost for n in closure if n in outcomes and outcomes[n].cost is not None]
        out[name] = Cost.total(costs, n_queries)
        if o.reused:
            out[name]["reused"] = True
        if len(closure) > 1:
            out[name]["components"] = closure
    return out


def _embedder(graph: Graph, ds: GoldenDataset, cache_dir: Path, show_progress: bool) -> Any:
    """Document vectors for embedding metrics (``ild@k``) from the configured dense model: the
    first dense retriever's (or MMR stage's) ``model``, else the packaged default; through the
    embedding cache, so documents the dense retriever encoded are not encoded again."""
    from retrievers.encoder import Encoder

    model = None
    for name in graph.order:
        spec = graph[name].spec
        if spec.get("type") in ("dense", "mmr") and spec.get("model"):
            model = spec["model"]
            break
    encoder = Encoder(model, cache_dir=cache_dir, show_progress=False)
    index = ds.doc_index
    corpus = ds.corpus

    def embed(doc_ids: Sequence[str]) -> Any:
        import numpy as np

        known = [i for i, d in enumerate(doc_ids) if d in index]
        vecs = encoder.encode_documents([corpus[index[doc_ids[i]]] for i in known], progress=False)
        out = np.full((len(doc_ids), vecs.shape[1] if vecs.ndim == 2 and len(known) else 1), np.nan)
        if known:
            out[known] = vecs
        return out  # NaN rows: documents outside the corpus, left out of ild (with a warning)

    return embed


def _object_node(name: str, item: Any) -> Node:
    """A retriever object (or a plain ``search(queries, k)`` function) as a graph node."""
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
        reproducible=False,
    )


def _validate_spec(name: str, item: Mapping[str, Any]) -> SpecBase:
    try:
        return spec_class(str(item["type"])).model_validate(dict(item))
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=".".join(["retrievers", name, *map(str, err["loc"])])) from None
    except HarnessError:
        raise
