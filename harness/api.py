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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, ValidationError

from harness import __version__, progress
from harness.config import RunConfig
from harness.datasets import load_dataset, load_from_config
from harness.efficiency import Cost
from harness.engine import Graph, Node, Outcome, RunStore, Settings, execute, score
from harness.engine.execute import DEFAULT_TIMEOUT_S
from harness.engine.fingerprint import content_fingerprint
from harness.errors import HarnessError, InputError
from harness.manifest import build_manifest
from harness.metrics.evaluate import CompiledQrels
from harness.metrics.names import DEFAULT_METRICS, Metric, parse_metrics
from harness.model import GoldenDataset
from harness.paths import cache_dir_of
from harness.protocol import Retriever, Stage
from harness.registry import BuildContext, SpecBase, spec_class
from harness.results import Results
from harness.validate import check_dataset_usable

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
            content=(lambda s=spec: content_fingerprint(s.model_dump(), ctx.config_dir, ctx.cache_dir)),
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
    if dataset is not None:
        ds = load_dataset(dataset, split or config.dataset.split, name=config.dataset.name)
    else:
        section = config.dataset.model_dump()
        if split:
            section["split"] = split
        ds = load_from_config(section, base)
    check_dataset_usable(ds)  # an empty corpus or a lone surrogate fails here, not after hours of work
    cache = cache_dir_of(config.cache_dir)
    ctx = BuildContext(cache_dir=cache, config_dir=base, seed=config.seed, depth=config.depth, show_progress=False)
    specs = config.specs()
    graph = graph_from_specs(specs, ctx)
    if retrievers:
        graph = graph.select(retrievers)
    rows = [f"{n}[{c}]" for c in config.chunking for n in graph.order] if config.chunking else graph.order
    baseline = config.baseline if config.baseline in rows else None
    if config.baseline and baseline is None:
        log.info("baseline %r is not among the retrievers run: no significance tests", config.baseline)
    resolved = config.model_dump(mode="json")
    resolved["dataset"] = {"path": str(ds.source) if ds.source else ds.name, "split": ds.split, "name": ds.name}
    resolved["cache_dir"] = str(cache)
    resolved["retrievers"] = {n: graph[n].spec for n in graph.order}
    from harness.executor import from_config as executor_from_config
    from harness.executor import use as use_executor

    executor = executor_from_config(config.executor) if config.executor is not None else None
    with use_executor(executor):
        return _run_config_graph(config, graph, ds, baseline, resolved, cache, out, resume, metrics, show_progress)


def _run_config_graph(
    config: RunConfig,
    graph: Graph,
    ds: GoldenDataset,
    baseline: str | None,
    resolved: dict[str, Any],
    cache: Path,
    out: Any,
    resume: bool,
    metrics: Sequence[str] | None,
    show_progress: bool,
) -> BenchmarkResults:
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
        chunking=config.chunking,
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
    check_dataset_usable(ds)
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


@dataclass
class _Variant:
    """The dataset one copy of the graph runs on: the dataset itself, or its chunks."""

    label: str | None
    dataset: GoldenDataset
    spec: dict[str, Any] | None = None
    #: the chunked corpus (None: retrievers see the documents themselves, as with chunking ``none``)
    chunked: Any = None


def _variants(ds: GoldenDataset, chunking: Mapping[str, Mapping[str, Any]] | None, cache_dir: Path) -> list[_Variant]:
    """One variant per chunking (``none`` runs on the documents themselves, so its rows equal an
    unchunked run exactly); chunked corpora come from the cache keyed by chunker and text hash."""
    if not chunking:
        return [_Variant(None, ds)]
    from harness.chunking import chunk_corpus, chunk_dataset, make_chunker

    out = []
    for label, spec in chunking.items():
        if spec.get("method") == "none":
            out.append(_Variant(label, ds, dict(spec)))
            continue
        progress.current().phase(f"chunking {len(ds.corpus)} docs ({label})")
        chunked = chunk_corpus(ds.corpus, make_chunker(dict(spec)), cache_dir=cache_dir)
        out.append(_Variant(label, chunk_dataset(ds, chunked), dict(spec), chunked))
        log.info("chunking %s: %d documents -> %d chunks", label, len(ds.corpus), len(chunked.corpus))
    return out


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
    chunking: Mapping[str, Mapping[str, Any]] | None = None,
) -> BenchmarkResults:
    """Execute ``graph`` on ``ds`` (once per chunking, rows ``name[chunking]``) and score it; with
    ``out``, store each run as it finishes.

    With chunkings, retrievers index and search the chunks; their chunk rankings are stored, and
    scored at document level (collapsed to parent documents, first chunk wins) against the
    dataset's judgments, so every chunking is judged on the same qrels. ``chunk_level`` holds the
    same metrics against chunk relevance.
    """
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
    variants = _variants(ds, chunking, cache_dir)
    parts = [(v, graph.suffixed(v.label) if v.label else graph) for v in variants]
    full = Graph(n for _, g in parts for n in (g[x] for x in g.order))
    variant_of = {n: v for v, g in parts for n in g.order}
    hashes: dict[str, str | None] = {}
    for v, g in parts:
        hashes.update(
            g.config_hashes(
                {
                    "dataset": v.dataset.fingerprint,
                    "chunking": v.spec,
                    "depth": settings.depth,
                    "seed": settings.seed,
                    "latency_queries": settings.latency_queries,
                    "warmup_queries": settings.warmup_queries,
                    "harness": __version__,
                }
            )
        )
    cq = CompiledQrels(ds.qrels)
    embed = _embedder(graph, ds, cache_dir, show_progress) if any(m.needs_embeddings for m in metrics) else None
    tags = {q.id: list(q.metadata.get("tags") or []) for q in ds.queries if isinstance(q.metadata.get("tags"), list)}
    outcomes: dict[str, Outcome] = {}
    doc_runs: dict[str, Any] = {}
    context = _ContextSource(ds, variant_of, outcomes)
    manifest = build_manifest(
        dataset=ds,
        config=record,
        seed=settings.seed,
        retrievers={},
        latency_queries=min(settings.latency_queries, len(ds.queries)),
    )

    def summarise(complete: bool) -> BenchmarkResults:
        ok = [n for n in full.order if n in outcomes and outcomes[n].ok]
        manifest["retrievers"] = {
            n: {
                "spec": full[n].spec,
                "inputs": full[n].inputs,
                "params": outcomes[n].params,
                "status": "ok" if outcomes[n].ok else "failed",
                "config_hash": hashes[n],
                "reused": outcomes[n].reused,
                **({"chunking": variant_of[n].label} if variant_of[n].label else {}),
            }
            for n in full.order
            if n in outcomes
        }
        res = score(
            {n: doc_runs[n] for n in ok},
            cq,
            metrics,
            baseline=baseline if (complete and baseline in outcomes) else None,
            seed=settings.seed,
            stats=stats,
            statistics=complete,
            embed=embed,
            context=context if any(m.needs_context for m in metrics) else None,
            efficiency=_efficiency(full, outcomes, len(ds.queries)),
            failures={n: o.error for n, o in outcomes.items() if o.error},
            manifest=manifest,
            query_tags=tags,
            complete=complete,
            results_cls=BenchmarkResults,
        )
        res._costs = {n: outcomes[n].cost for n in ok if outcomes[n].cost is not None}
        if complete and chunking:
            judged = [m for m in metrics if not (m.needs_embeddings or m.needs_context)]
            for n in ok:
                v = variant_of[n]
                chunk_qrels = v.dataset.qrels
                if judged and chunk_qrels:
                    res.chunk_level[n] = score({n: outcomes[n].run}, chunk_qrels, judged, statistics=False).summary[n]
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
        before, total = 0, sum(len(g) for _, g in parts)
        for v, g in parts:
            # one numbering over every chunking's graph: [3/6], not [1/2] twice
            numbered = progress.Numbered(reporter, before, total)
            before += len(g)
            with progress.use(numbered, quiet=False):
                for outcome in execute(g, v.dataset, settings, reuse={n: o for n, o in reuse.items() if n in g}):
                    outcomes[outcome.name] = outcome
                    if outcome.ok:
                        doc_runs[outcome.name] = _document_run(outcome.run, v, ds)
                    if store is not None:
                        node = full[outcome.name]
                        if not (outcome.reused and store.holds(outcome.name, hashes[outcome.name])):
                            _stored(
                                lambda o=outcome, n=node: store.save(
                                    o, config_hash=hashes[o.name], spec=n.spec, inputs=n.inputs
                                )
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


def _document_run(run: Any, variant: _Variant, ds: GoldenDataset) -> Any:
    """A chunk ranking as a ranking of parent documents (first chunk wins); a document run as is."""
    if variant.chunked is None:
        return run
    from harness.chunking import collapse_to_documents

    return collapse_to_documents(run, variant.chunked, doc_ids=ds.doc_ids)


class _ContextSource:
    """What the context metrics (``recall@Ntok``...) read for a row: its ranked chunks' token counts
    (the embedding model's tokenizer) and what each covers; token counts computed once per chunking."""

    def __init__(self, ds: GoldenDataset, variant_of: Mapping[str, _Variant], outcomes: Mapping[str, Outcome]):
        self.ds, self.variant_of, self.outcomes = ds, variant_of, outcomes
        self._chunked: dict[str | None, Any] = {}
        self._tokens: dict[str | None, Any] = {}

    def __call__(self, name: str, run: Any, query_ids: list[str]) -> Any:
        from harness.chunking import chunk_corpus, context_covers, make_chunker, token_counts
        from harness.metrics.context import ContextInput

        v = self.variant_of[name]
        if v.label not in self._chunked:
            self._chunked[v.label] = (
                v.chunked if v.chunked is not None else chunk_corpus(self.ds.corpus, make_chunker({"method": "none"}))
            )
            self._tokens[v.label] = token_counts(self._chunked[v.label].corpus)
        chunk_run = self.outcomes[name].run
        qids, toks, covers = context_covers(chunk_run, self.ds, self._chunked[v.label], self._tokens[v.label])
        at = {q: i for i, q in enumerate(qids)}
        return ContextInput([toks[at[q]] for q in query_ids], [covers[at[q]] for q in query_ids])


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
        spec = spec_class(str(item["type"])).model_validate(dict(item))
        spec.preflight(Path.cwd())  # imports, files and URLs resolved before any retriever runs
        return spec
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=".".join(["retrievers", name, *map(str, err["loc"])])) from None
    except HarnessError:
        raise
