"""Recall against QPS: one index, several search-time settings (ann-benchmarks' picture, with the
quality measured on the golden set too).

A retriever type declares its search-time knobs on its spec: ``search_knobs()`` (names that can
change on a built index, e.g. ``ef_search`` for ``dense`` with ``index: hnsw``, ``nprobe`` for
``ivf``), ``exact_spec()`` (the exact counterpart: the same embeddings in a flat index), and on the
built retriever ``set_search_param(name, value)``. Per setting:

- ``recall@10`` against exact search: mean over queries of |approx top 10 & exact top 10| / |exact
  top 10| (the ANN literature's k-recall@k, FAISS's ``knn_intersection_measure``);
- ``ndcg@10`` (and every other requested metric) against the golden set's judgments;
- ``qps`` at one closed-loop concurrency, timed the way the index is measured: with the queries'
  embeddings computed once beforehand (the encoder's memo), so the figure is the index's search,
  which is what the knob changes. End-to-end serving figures are the load levels'.

The Pareto front keeps the settings no other setting beats on both recall and QPS.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.load.drivers import closed_loop
from harness.load.targets import Target
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.model import GoldenDataset
from harness.protocol import HasExactSpec, Serving, Tunable
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from harness.validate import validate_output

log = logging.getLogger("harness")

RECALL_K = 10


def knobs_of(spec: SpecBase) -> list[str]:
    fn = getattr(spec, "search_knobs", None)
    return list(fn()) if callable(fn) else []


def check_params(name: str, spec: SpecBase, params: dict[str, list[Any]]) -> None:
    """Refuse (before any work) a knob the retriever does not declare."""
    knobs = knobs_of(spec)
    for p in params:
        if p not in knobs:
            have = ", ".join(knobs) if knobs else "none (an exact index has nothing to trade)"
            raise InputError(
                f"retriever {name!r} ({spec.type}) has no search-time knob {p!r}; its knobs: {have}",
                field="search_params",
            )


def k_recall(approx: Run, exact: Run, k: int = RECALL_K) -> float:
    """Mean over the exact run's queries of |approx top k & exact top k| / |exact top k|."""
    vals = []
    for qid, ranking in exact.items():
        want = {d for d, _ in ranking[:k]}
        if not want:
            continue
        got = {d for d, _ in approx.ranking(qid)[:k]} if qid in approx else set()
        vals.append(len(want & got) / len(want))
    return float(np.mean(vals)) if vals else 0.0


def batch_run(obj: Any, name: str, dataset: GoldenDataset, k: int) -> Run:
    queries = list(dataset.queries)
    doc_ids = np.asarray(dataset.doc_ids, dtype=object)
    return validate_output(obj.search(queries, k), queries, k, doc_ids, name)


def pareto(points: Sequence[dict[str, Any]], x: str = "qps", y: str = "recall@10") -> list[int]:
    """Indexes of the points no other point beats on both ``x`` and ``y`` (higher is better)."""
    keep = []
    for i, p in enumerate(points):
        if p.get(x) is None or p.get(y) is None:
            continue
        dominated = any(
            j != i
            and q.get(x) is not None
            and q.get(y) is not None
            and q[x] >= p[x]
            and q[y] >= p[y]
            and (q[x] > p[x] or q[y] > p[y])
            for j, q in enumerate(points)
        )
        if not dominated:
            keep.append(i)
    return keep


def sweep(
    target: Target,
    params: dict[str, list[Any]],
    dataset: GoldenDataset,
    ctx: BuildContext,
    *,
    k: int,
    metrics: Sequence[str] = ("ndcg@10",),
    concurrency: int = 1,
    duration_s: float = 3.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Every setting of ``params`` (one knob at a time, the others at the spec's value) on the
    target's built index; see the module doc."""
    obj, spec = target.obj, target.spec
    if obj is None or spec is None or not isinstance(obj, Tunable):
        raise InputError(f"retriever {target.name!r}: search settings can only be swept in process")
    if isinstance(obj, Serving):
        obj.serving_mode(False)  # memoised query embeddings: the knob's effect, not the encoder's time
    exact_spec = spec.exact_spec() if isinstance(spec, HasExactSpec) else None
    exact_run = None
    if exact_spec is not None:
        exact = exact_spec.build(ctx)
        exact.index(dataset.corpus)
        exact_run = batch_run(exact, target.name, dataset, k)
        del exact
    cq = CompiledQrels(dataset.qrels)
    points: list[dict[str, Any]] = []
    queries = list(dataset.queries)
    for knob, values in params.items():
        default = getattr(spec, knob, None)
        for v in values:
            obj.set_search_param(knob, v)
            run = batch_run(obj, target.name, dataset, k)  # also fills the query memo
            means = evaluate_run(cq, run, list(metrics)).means()
            lv = closed_loop(target.send, queries, concurrency, duration_s, warmup_s=0.3, seed=seed)
            point = {"param": knob, "value": v, **{m: means.get(m) for m in metrics}}
            point["recall@10"] = k_recall(run, exact_run) if exact_run is not None else None
            point.update(qps=lv.qps, p50_ms=lv.p50_ms, p99_ms=lv.p99_ms, concurrency=concurrency)
            points.append(point)
            log.info(
                "%s %s=%s: recall@10 %s, qps %.0f",
                target.name,
                knob,
                v,
                f"{point['recall@10']:.4f}" if point["recall@10"] is not None else "-",
                lv.qps,
            )
        if default is not None:
            obj.set_search_param(knob, default)
    front = pareto(points)
    for i, p in enumerate(points):
        p["pareto"] = i in front
    if isinstance(obj, Serving):
        obj.serving_mode(True)
    return {
        "retriever": target.name,
        "concurrency": concurrency,
        "duration_s": duration_s,
        "qps_measures": "search only (query embeddings computed once beforehand)",
        "points": points,
    }
