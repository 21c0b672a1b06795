"""Score runs: the one function every entry point uses (``harness run``, ``harness.benchmark``,
``harness compare``, ``harness evaluate``, ``harness check``'s inputs), so the same runs give the same
summary, per-query scores and significance whichever way they came in.

Pure: runs, judgments and settings in; :class:`~harness.results.Results` out. No files, no
printing, no model loading (embedding metrics get their vectors from the caller's ``embed``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.metrics.context import ContextInput
from harness.metrics.diversity import embedding_metrics
from harness.metrics.evaluate import CompiledQrels, evaluate_run, judged_at_10, mean
from harness.metrics.names import Metric, parse_metrics
from harness.metrics.nuggets import NuggetInput
from harness.results import Comparison, Manifest, Results
from harness.results.data import Weights
from harness.run import Run
from harness.stats import compare
from harness.stats.weighted import as_weights, effective_n, weighted_mean

#: ``embed(doc_ids) -> (len(doc_ids), dim) array``: document vectors for embedding metrics (ild@k)
Embed = Callable[[Sequence[str]], np.ndarray]
#: ``context(name, run, query_ids) -> ContextInput``: per query, the ranked chunks' token counts and
#: what they cover, for the RAG context metrics (recall@Ntok...)
Context = Callable[[str, Run, list[str]], ContextInput]
#: ``nuggets(run, query_ids) -> NuggetInput``: per query its nuggets and each ranked passage's
#: assignment, for the nugget metrics (:meth:`harness.nuggets.NuggetJudgments.input_for`)
Nuggets = Callable[[Run, list[str]], NuggetInput]


def score(
    runs: Mapping[str, Run],
    qrels: Mapping[str, Mapping[str, int]] | CompiledQrels,
    metrics: Sequence[str | Metric],
    *,
    baseline: str | None = None,
    seed: int = 0,
    stats: Mapping[str, Any] | None = None,
    statistics: bool = True,
    embed: Embed | None = None,
    context: Context | None = None,
    nuggets: Nuggets | None = None,
    efficiency: Mapping[str, Mapping[str, Any]] | None = None,
    failures: Mapping[str, str] | None = None,
    manifest: Mapping[str, Any] | None = None,
    query_tags: Mapping[str, Sequence[str]] | None = None,
    complete: bool = True,
    judged_only: bool = False,
    weights: Mapping[str, float] | None = None,
    weights_field: str = "weight",
) -> Results:
    """Per-query scores of every metric for every run, their means, and (with ``statistics``)
    bootstrap intervals and paired tests against ``baseline`` (Holm over the whole table).

    Runs are scored in the order given. ``efficiency``, ``failures``, ``manifest`` and
    ``query_tags`` are carried into the results as they are. ``judged_only``:
    trec_eval ``-J`` (:mod:`harness.metrics.judged_only`); each run's ``judged@10`` is recorded
    either way (``Results.judged_at_10``), so a table can show how far its judgments reach.
    ``weights`` (query id -> weight, from the dataset's ``weights_field``): every mean, interval and
    test is traffic-weighted (:mod:`harness.stats.weighted`) and the results record the weights.
    """
    metrics = parse_metrics(metrics)
    cq = qrels if isinstance(qrels, CompiledQrels) else CompiledQrels(qrels)
    judged = [m for m in metrics if not (m.needs_embeddings or m.needs_context or m.needs_nuggets)]
    embedded = [m for m in metrics if m.needs_embeddings]
    contextual = [m for m in metrics if m.needs_context]
    nuggety = [m for m in metrics if m.needs_nuggets]
    if nuggety and nuggets is None and runs:
        raise InputError(
            f"{', '.join(m.name for m in nuggety)} needs nuggets and their assignments "
            "(--nuggets and --assignments, or the config's dataset: nuggets:, assignments:)",
            field="metrics",
        )
    if embedded and embed is None and runs:
        raise InputError(
            f"{', '.join(m.name for m in embedded)} needs document embeddings, which these runs do not carry; "
            "`harness run` computes it from the configured dense model",
            field="metrics",
        )
    if contextual and context is None and runs:
        raise InputError(
            f"{', '.join(m.name for m in contextual)} needs the ranked chunks' token counts, "
            "which these runs do not carry",
            field="metrics",
        )
    if baseline is not None and baseline not in runs and baseline not in (failures or {}):
        raise InputError(f"baseline {baseline!r} is not one of the runs ({', '.join(runs)})", field="baseline")
    # per-query arrays in sorted query-id order: the same runs give the same arrays whichever order
    # the judgments came in (a dataset's order, or a qrels.tsv's)
    order = np.argsort(np.asarray(cq.query_ids, dtype=object), kind="stable")
    query_ids = [cq.query_ids[i] for i in order]
    w = _weights(weights, query_ids, weights_field)
    res = Results(
        weights=None if w is None else Weights(field=weights_field, values=w.tolist(), effective_n=effective_n(w)),
        complete=complete,
        manifest=dict(manifest or {}),
        query_ids=query_ids,
        failures=dict(failures or {}),
        efficiency={k: dict(v) for k, v in (efficiency or {}).items() if k in runs},
        query_tags={q: list(t) for q, t in (query_tags or {}).items()},
    )
    values: dict[str, dict[str, np.ndarray]] = {}
    # judged@10, which every result records, is scored in the same pass as the metrics asked (a
    # second pass over a large run cost as much time and memory as the first); not under -J, where
    # the metrics see a condensed run and judged@10 the run as it is
    reach = [] if judged_only or not judged or any(m.name == "judged@10" for m in judged) else parse_metrics(
        ["judged@10"]
    )
    for name, run in runs.items():
        ev = evaluate_run(cq, run, judged + reach, judged_only=judged_only) if judged else None
        vals = dict(ev.values) if ev else {}
        if embedded:
            vals.update(embedding_metrics(run, embedded, cq.query_ids, embed))
        if contextual:
            ctx = context(name, run, list(cq.query_ids))
            vals.update({m.name: m.spec.compute(ctx, m.k) for m in contextual})
        if nuggety:
            nin = nuggets(run, list(cq.query_ids))  # type: ignore[misc]
            vals.update({m.name: m.spec.compute(nin, m.k) for m in nuggety})
        vals = {m.name: np.asarray(vals[m.name], dtype=np.float64)[order] for m in metrics}
        values[name] = vals
        res.summary[name] = {m: mean(v) if w is None else weighted_mean(v, w) for m, v in vals.items()}
        res.per_query[name] = {m: float_list(v) for m, v in vals.items()}
        res.counts[name] = dict(ev.counts) if ev else {"queries": len(cq.query_ids)}
        if ev is not None and reach:
            res.judged_at_10[name] = float(mean(ev.values["judged@10"]))
        else:
            res.judged_at_10[name] = judged_at_10(cq, run, res.summary[name])
    if judged_only:
        Manifest.of(res).update_config(judged_only=True)
    if statistics and values:
        base = baseline if baseline in values else None  # a failed baseline: intervals only
        significance, res.intervals = compare(
            values, base, seed=seed, query_ids=query_ids, weights=w, **dict(stats or {})
        )
        res.significance = {r: {m: Comparison(**c) for m, c in ms.items()} for r, ms in significance.items()}
    return res.attach(runs, _plain_qrels(qrels))


def float_list(values: np.ndarray) -> list[float]:
    """``values.tolist()``, with equal values (bit for bit) one Python float object: a metric over a
    million queries takes few distinct values (0, 1, 1/k, i/n), and a float apiece is 32 bytes a
    query where a shared one is 8 (the results of a million-query run held ~220 MB of them)."""
    v = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if v.size < 1024:
        return v.tolist()
    bits, inverse = np.unique(v.view(np.int64), return_inverse=True)
    if 2 * bits.size > v.size:
        return v.tolist()  # mostly distinct: sharing would save little
    shared = np.empty(bits.size, dtype=object)
    shared[:] = bits.view(np.float64).tolist()
    return shared[inverse.ravel()].tolist()


def _weights(weights: Mapping[str, float] | None, query_ids: list[str], field: str):
    """The weights of the scored queries in their order; every scored query needs one."""
    if weights is None:
        return None
    missing = [q for q in query_ids if q not in weights]
    if missing:
        raise InputError(f"query {missing[0]!r} has no weight ({len(missing)} queries lack one)", field=field)
    try:
        return as_weights([weights[q] for q in query_ids], len(query_ids))
    except ValueError as e:
        raise InputError(str(e), field=field) from None


def _plain_qrels(qrels: Mapping[str, Mapping[str, int]] | CompiledQrels) -> Mapping[str, Mapping[str, int]]:
    if isinstance(qrels, CompiledQrels) and qrels._judged is None:
        # read from a large file as arrays: a view, not a dict per query (a million of them is ~200 MB)
        return qrels.as_mapping()
    if isinstance(qrels, CompiledQrels):
        return {q: dict(qrels.judged(i)) for i, q in enumerate(qrels.query_ids)}
    return {q: dict(j) for q, j in qrels.items()}
