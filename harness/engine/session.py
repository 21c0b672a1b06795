"""A run, end to end: the dataset (once per chunking), the graph, the results folder, the display
and the scoring. ``harness run`` (:func:`harness.api.run_config`) and :func:`harness.benchmark` both
build one :class:`Session` from a validated :class:`~harness.config.RunConfig` and run it, so a
script and the CLI give the same numbers.

A session executes each node once (:func:`harness.engine.schedule.execute`), stores each finished
run as it finishes (:class:`harness.engine.RunStore`, when there is a results folder), then scores
everything with the one scoring function (:func:`harness.engine.score`). The results it returns
render and save themselves (:mod:`harness.results`, the layer below); the engine never imports an
adapter, so the entry points hand it an embedder for embedding metrics.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import __version__, defaults, progress
from harness.config import RunConfig
from harness.datasets import load_dataset, load_from_config, query_weights
from harness.efficiency import Cost
from harness.engine.fingerprint import content_fingerprint
from harness.engine.graph import Graph, Node
from harness.engine.schedule import ScheduleSettings, execute
from harness.engine.score import score
from harness.errors import InputError
from harness.manifest import build_manifest
from harness.metrics.evaluate import CompiledQrels
from harness.metrics.names import Metric, parse_metrics
from harness.model import GoldenDataset
from harness.outcome import Outcome
from harness.paths import cache_dir_of
from harness.registry import BuildContext, SpecBase
from harness.results import Manifest, Results
from harness.results.store import RunStore
from harness.validate import check_corpus_needed, check_dataset_usable

log = logging.getLogger("harness")

__all__ = ["Embedder", "Session", "nodes_from_specs", "recorded_spec", "run_graph"]

#: ``embedder(graph, dataset, cache_dir, show_progress) -> embed(doc_ids) -> (n, dim) array``: document
#: vectors for the embedding metrics (``ild@k``), from the dense adapter the entry points pass in
Embedder = Callable[[Graph, GoldenDataset, Path, bool], Callable[[Sequence[str]], Any]]


@dataclass
class Session:
    """One run of a validated config: what to run (graph, dataset, settings), how to score it, and
    what the layers above hand the engine (``embedder``: document vectors from an adapter)."""

    graph: Graph
    dataset: GoldenDataset
    settings: ScheduleSettings
    metrics: list[str]
    baseline: str | None
    stats: dict[str, Any]
    config_record: dict[str, Any]
    cache_dir: Path
    chunking: dict[str, dict[str, Any]] | None = None
    executor: dict[str, Any] | str | None = None
    embedder: Embedder | None = None
    #: ``dataset: {weights: FIELD}``: (field, query id -> weight); every figure is traffic-weighted
    weights: tuple[str, dict[str, float]] | None = None
    #: ``dataset: {nuggets: N, assignments: A}``: the nugget metrics' judgments (harness.nuggets)
    nuggets: Any = None

    @classmethod
    def from_config(
        cls,
        config: RunConfig,
        *,
        config_dir: str | os.PathLike[str] | None = None,
        dataset: str | os.PathLike[str] | GoldenDataset | None = None,
        split: str | None = None,
        objects: Mapping[str, Node] | None = None,
        retrievers: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        **wiring: Any,
    ) -> Session:
        """The session of ``config`` (validated by :func:`harness.config.parse_config`): ``dataset`` /
        ``split`` override the config's, as the CLI flags do; ``objects`` are nodes for retrievers given
        as Python objects (their config entries are placeholders); ``retrievers`` runs a subset (with
        what they build on), ``metrics`` scores a subset. ``wiring``: ``embedder``."""
        objects = dict(objects or {})
        config.require_extras(objects=objects, metrics=metrics)  # a missing extra: exit 2 before the dataset is read
        base = Path(config_dir) if config_dir is not None else Path.cwd()
        if dataset is not None:
            ds = load_dataset(dataset, split or config.dataset.split, name=config.dataset.name)
        else:
            section = config.dataset.model_dump()
            for key in ("weights", "nuggets", "assignments"):
                section.pop(key, None)  # read from the loaded queries, and the nugget files, below
            if split:
                section["split"] = split
            ds = load_from_config(section, base)
        field = config.dataset.weights
        weights = (field, query_weights(ds, field)) if field else None
        check_dataset_usable(ds)  # an empty corpus or a lone surrogate fails here, not after hours of work
        nuggets = _nuggets(config, base, metrics)  # a bad nugget file: exit 2 before any work
        cache = cache_dir_of(config.cache_dir)
        ctx = BuildContext(cache_dir=cache, config_dir=base, seed=config.seed, depth=config.depth, show_progress=False)
        specs = config.specs(objects=objects)
        check_corpus(specs, ds.corpus, base)  # e.g. a colbert store larger than memory: exit 2, nothing written
        built = {node.name: node for node in nodes_from_specs(specs, ctx)}
        graph = Graph(objects[n] if n in objects else built[n] for n in config.retrievers)
        if retrievers:
            graph = graph.select(retrievers)
        check_corpus_needed(ds, {n: graph[n].spec.get("type") for n in graph.order})  # 0 documents: exit 2 now
        from harness.results.synthetic_set import read_bias

        read_bias(ds.source)  # a synthetic set's hand-edited bias.json: one line now, not a page lost at the end
        rows = [f"{n}[{c}]" for c in config.chunking for n in graph.order] if config.chunking else graph.order
        baseline = config.baseline if config.baseline in rows else None
        if config.baseline and baseline is None:
            log.info("baseline %r is not among the retrievers run: no significance tests", config.baseline)
        resolved = config.model_dump(mode="json")
        if resolved.get("stream") is None:  # a run's results.json says nothing of a section it had none of
            resolved.pop("stream", None)
        resolved["dataset"] = {"path": str(ds.source) if ds.source else ds.name, "split": ds.split, "name": ds.name}
        if field:
            resolved["dataset"]["weights"] = field
        for key in ("nuggets", "assignments"):
            if getattr(config.dataset, key):
                resolved["dataset"][key] = str(base / getattr(config.dataset, key))
        resolved["cache_dir"] = str(cache)
        resolved["retrievers"] = {n: graph[n].spec for n in graph.order}
        return cls(
            graph=graph,
            dataset=ds,
            settings=ScheduleSettings(
                depth=config.depth,
                seed=config.seed,
                latency_queries=config.latency_queries,
                warmup_queries=config.warmup_queries,
                timeout_s=config.timeout_s or defaults.TIMEOUT_S,
            ),
            metrics=list(metrics) if metrics else list(config.metrics),
            baseline=baseline,
            stats=config.stats.model_dump(),
            config_record=resolved,
            cache_dir=cache,
            chunking=config.chunking,
            executor=config.executor,
            weights=weights,
            nuggets=nuggets,
            **wiring,
        )

    def run(
        self, *, out: str | os.PathLike[str] | None = None, resume: bool = False, show_progress: bool = False
    ) -> Results:
        """Execute, store (with ``out``; ``resume`` reuses stored runs whose config hash matches) and
        score, with the model-work pool the config names (``executor:``) for the whole run."""
        from harness.executor import from_config as executor_from_config
        from harness.executor import use as use_executor

        executor = executor_from_config(self.executor) if self.executor is not None else None
        with use_executor(executor):
            return run_graph(self, out=out, resume=resume, show_progress=show_progress)


def _nuggets(config: RunConfig, base: Path, metrics: Sequence[str] | None) -> Any:
    """The config's nugget judgments (``dataset: {nuggets, assignments}``), read and checked now;
    None when it names none and asks no nugget metric (one that does without them: exit 2 here)."""
    from harness.nuggets.judgments import for_metrics

    d = config.dataset
    return for_metrics(
        parse_metrics(list(metrics) if metrics else list(config.metrics)),
        base / d.nuggets if d.nuggets else None,
        base / d.assignments if d.assignments else None,
        qrels_given=True,
        flags=("dataset.nuggets", "dataset.assignments", "dataset"),
    )


def check_corpus(specs: Mapping[str, SpecBase], corpus: Any, config_dir: Path) -> None:
    """Each spec's ``check_corpus(corpus, config_dir)``, where it has one: what only the corpus can
    tell (the size of an index it would build), refused before any work, naming the retriever."""
    for name, spec in specs.items():
        check = getattr(spec, "check_corpus", None)
        if not callable(check):
            continue
        try:
            check(corpus, config_dir)
        except InputError as e:
            field = ".".join(["retrievers", name, *([e.field] if e.field else [])])
            raise InputError(e.message, field=field) from None


def nodes_from_specs(specs: Mapping[str, SpecBase], ctx: BuildContext) -> list[Node]:
    return [
        Node(
            name=name,
            make=(lambda s=spec: s.build(ctx)),
            inputs=spec.inputs(),
            spec=recorded_spec(spec),
            allow_unknown_docs=bool(getattr(spec, "allow_unknown_docs", False)),
            # what the spec reads (a run file, a module's source, model files) joins its config hash
            content=(lambda s=spec: content_fingerprint(s.model_dump(), ctx.config_dir, ctx.cache_dir)),
        )
        for name, spec in specs.items()
    ]


def recorded_spec(spec: SpecBase) -> dict[str, Any]:
    """What results.json records of a spec (secrets left out where the spec declares them)."""
    redact = getattr(spec, "redacted", None)
    return dict(redact()) if callable(redact) else spec.model_dump(mode="json")


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


@dataclass
class _Run:
    """One run in progress, the context every step of :func:`run_graph` reads: what to run (the
    session, one graph per chunking and the config hash of every node) and what has finished."""

    session: Session
    metrics: list[Metric]
    #: each chunking's dataset and the graph run on it (rows ``name[chunking]``)
    parts: list[tuple[_Variant, Graph]]
    #: every part's nodes in one graph (a pipeline's cost adds up its components')
    full: Graph
    variant_of: dict[str, _Variant]
    hashes: dict[str, str | None]
    qrels: CompiledQrels
    manifest: dict[str, Any]
    tags: dict[str, list[str]]
    judged_only: bool
    outcomes: dict[str, Outcome]
    embed: Any = None
    #: what the context metrics read (token counts computed once per chunking), when one is asked for
    context: _ContextSource | None = None
    #: each finished row's ranking of documents (a chunk ranking collapsed to its parents)
    doc_runs: dict[str, Any] = field(default_factory=dict)


def run_graph(
    session: Session, *, out: str | os.PathLike[str] | None = None, resume: bool = False, show_progress: bool = False
) -> Results:
    """Execute the session's graph on its dataset (once per chunking, rows ``name[chunking]``) and
    score it; with ``out``, store each run as it finishes (``resume`` reuses stored runs whose
    config hash matches).

    Four steps over one context (:class:`_Run`): :func:`_plan` (chunkings, config hashes, the
    manifest), :func:`_execute` (each node once, each finished run stored at once),
    :func:`_summarise` (score what finished) and publishing the folder.

    With chunkings, retrievers index and search the chunks; their chunk rankings are stored, and
    scored at document level (collapsed to parent documents, first chunk wins) against the
    dataset's judgments, so every chunking is judged on the same qrels. ``chunk_level`` holds the
    same metrics against chunk relevance.
    """
    run = _plan(session, show_progress)
    store = RunStore(out, resume=resume) if out is not None else None
    # the harness's own display (third-party bars silenced): on a terminal always unless switched
    # off; off a terminal (CI logs, a pipe) plain timestamped lines only when asked
    display = progress.session(sys.stderr, enabled=True if show_progress else None)
    reporter = display.__enter__()
    try:
        if store is not None:
            store.__enter__()
        _execute(run, store, reporter, resume=resume)
        reporter.phase("scoring and statistics")
        results = _summarise(run, complete=True)
        if store is not None:
            _stored(lambda: store.publish(results))
        return results
    finally:
        display.__exit__(None, None, None)
        if store is not None:
            store.__exit__(None, None, None)


def _plan(session: Session, show_progress: bool) -> _Run:
    """The run's context: one copy of the graph per chunking, every node's config hash, and the
    manifest (the config as run)."""
    s, settings, ds = session, session.settings, session.dataset
    metrics = parse_metrics(s.metrics)
    record = {
        **dict(s.config_record),
        "depth": settings.depth,
        "baseline": s.baseline,
        "metrics": [m.name for m in metrics],
        "seed": settings.seed,
        "latency_queries": settings.latency_queries,
        "warmup_queries": settings.warmup_queries,
        "timeout_s": settings.timeout_s,
    }
    variants = _variants(ds, s.chunking, s.cache_dir)
    parts = [(v, s.graph.suffixed(v.label) if v.label else s.graph) for v in variants]
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
    needs_embeddings = any(m.needs_embeddings for m in metrics)
    variant_of = {n: v for v, g in parts for n in g.order}
    outcomes: dict[str, Outcome] = {}
    return _Run(
        session=s,
        metrics=metrics,
        parts=parts,
        full=Graph(n for _, g in parts for n in (g[x] for x in g.order)),
        variant_of=variant_of,
        hashes=hashes,
        qrels=CompiledQrels(ds.qrels),
        manifest=build_manifest(
            dataset=ds,
            config=record,
            seed=settings.seed,
            retrievers={},
            latency_queries=min(settings.latency_queries, len(ds.queries)),
        ),
        tags={q.id: list(q.metadata.get("tags") or []) for q in ds.queries if isinstance(q.metadata.get("tags"), list)},
        judged_only=bool(record.get("judged_only")),
        outcomes=outcomes,
        embed=_embed(s.embedder, s.graph, ds, s.cache_dir, show_progress) if needs_embeddings else None,
        context=_ContextSource(ds, variant_of, outcomes) if any(m.needs_context for m in metrics) else None,
    )


def _execute(run: _Run, store: RunStore | None, reporter: Any, *, resume: bool) -> None:
    """Each node once, chunking by chunking; with a store, each finished run is stored at once and
    the folder's summary brought up to date (``complete: false``) before the next node starts."""
    ds = run.session.dataset
    reuse = store.stored(run.hashes) if (store is not None and resume) else {}
    settings = run.session.settings
    before, total = 0, sum(len(g) for _, g in run.parts)
    for v, g in run.parts:
        # one numbering over every chunking's graph: [3/6], not [1/2] twice
        numbered = progress.Numbered(reporter, before, total)
        before += len(g)
        with progress.use(numbered, quiet=False):
            for outcome in execute(g, v.dataset, settings, reuse={n: o for n, o in reuse.items() if n in g}):
                run.outcomes[outcome.name] = outcome
                if outcome.ok:
                    run.doc_runs[outcome.name] = _document_run(outcome.run, v, ds)
                if store is not None:
                    _store(run, store, outcome)


def _store(run: _Run, store: RunStore, outcome: Outcome) -> None:
    """One finished node into the results folder (unless ``--resume`` found it there), then the
    summary of everything stored so far."""
    node = run.full[outcome.name]
    if not (outcome.reused and store.holds(outcome.name, run.hashes[outcome.name])):
        _stored(lambda: store.save(outcome, config_hash=run.hashes[outcome.name], spec=node.spec, inputs=node.inputs))
    partial = _summarise(run, complete=False)
    _stored(lambda: store.write_results(partial, run.session.dataset.qrels))


def _summarise(run: _Run, *, complete: bool) -> Results:
    """Score every finished row (statistics only once ``complete``), with the manifest's record of
    each node and, for chunked rows, their chunk-level metrics."""
    s, outcomes, full, metrics = run.session, run.outcomes, run.full, run.metrics
    if not complete:
        # embedding metrics (ild@k) wait for the last row: embedding the top documents of the first
        # row would fill the embedding cache before a dense row is timed, and that row would show a
        # warm 0.000 s for a corpus nobody's row was charged for (the honest cost is the dense row's)
        metrics = [m for m in metrics if not m.needs_embeddings]
    ok = [n for n in full.order if n in outcomes and outcomes[n].ok]
    Manifest(run.manifest).set(
        "retrievers",
        {
            n: {
                "spec": full[n].spec,
                "inputs": full[n].inputs,
                "params": outcomes[n].params,
                "status": "ok" if outcomes[n].ok else "failed",
                "config_hash": run.hashes[n],
                "reused": outcomes[n].reused,
                **({"chunking": run.variant_of[n].label} if run.variant_of[n].label else {}),
            }
            for n in full.order
            if n in outcomes
        },
    )
    res = score(
        {n: run.doc_runs[n] for n in ok},
        run.qrels,
        metrics,
        baseline=s.baseline if (complete and s.baseline in outcomes) else None,
        seed=s.settings.seed,
        stats=s.stats,
        statistics=complete,
        embed=run.embed if complete else None,
        context=run.context,
        nuggets=None if s.nuggets is None else s.nuggets.input_for,
        efficiency=_efficiency(full, outcomes, len(s.dataset.queries)),
        failures={n: o.error for n, o in outcomes.items() if o.error},
        manifest=run.manifest,
        query_tags=run.tags,
        complete=complete,
        judged_only=run.judged_only,
        **({"weights": s.weights[1], "weights_field": s.weights[0]} if s.weights else {}),
    )
    # what .save() stores with each run
    res.attach(res.runs, res.qrels, {n: outcomes[n].cost for n in ok if outcomes[n].cost is not None})
    res.attach_dataset(s.dataset)  # the page's texts come from what the run holds, not a second read
    if complete and s.chunking:
        judged = [m for m in metrics if not (m.needs_embeddings or m.needs_context or m.needs_nuggets)]
        for n in ok:
            chunk_qrels = run.variant_of[n].dataset.qrels
            if judged and chunk_qrels:
                res.chunk_level[n] = score({n: outcomes[n].run}, chunk_qrels, judged, statistics=False).summary[n]
    return res


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


def _embed(embedder: Embedder | None, graph: Graph, ds: GoldenDataset, cache_dir: Path, show_progress: bool) -> Any:
    if embedder is None:
        raise InputError("embedding metrics (ild@k) need an embedder; run through harness.run_config or benchmark")
    return embedder(graph, ds, cache_dir, show_progress)
