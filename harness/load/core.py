"""``harness load``: build each retriever once, then drive it level by level.

Per retriever: build and index (timed), a few warm-up requests, the GIL probe (in-process only),
the closed-loop levels, the open-loop levels, and, with ``search_params``, the recall-against-QPS
sweep. Queries are the golden set's, drawn with replacement by a seeded generator (every level and
retriever sees the same stream), one query per request at the config's depth.
"""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import harness.load.cost as costs
import harness.load.frontier as frontier
from harness.config import RunConfig, _located, parse_config, read_config_file
from harness.datasets import load_from_config
from harness.errors import InputError
from harness.load.drivers import closed_loop, open_loop
from harness.load.spec import CostSpec, LoadSpec
from harness.load.targets import build_target, gil_note, gil_probe, refuse_composed, warm
from harness.paths import cache_dir_of
from harness.registry import BuildContext
from harness.validate import check_dataset_usable

log = logging.getLogger("harness")


def load_load_config(path: str | os.PathLike[str]) -> tuple[RunConfig, LoadSpec, CostSpec | None]:
    """A run config with its ``load:`` and ``cost:`` sections, all validated (file, line and key in
    every error)."""
    from pydantic import ValidationError

    p, text, data = read_config_file(path)
    if not isinstance(data, dict):
        raise InputError("a config must be a YAML mapping (key: value)", path=p, line=1)
    config = parse_config(data, source=str(p), yaml_text=text, config_dir=p.resolve().parent)
    out: list[Any] = []
    for key, model in (("load", LoadSpec), ("cost", CostSpec)):
        raw = data.get(key)
        if raw is None:
            out.append(model() if key == "load" else None)
            continue
        try:
            out.append(model.model_validate(raw))
        except ValidationError as e:
            err = e.errors()[0]
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = f"unknown key (valid keys here: {', '.join(model.model_fields)})"
            raise _located(msg, (key, *err["loc"]), str(p), text) from None
    return config, out[0], out[1]


def run_load(
    config: RunConfig,
    spec: LoadSpec,
    cost: CostSpec | None = None,
    *,
    config_dir: str | os.PathLike[str] | None = None,
    retrievers: Sequence[str] | None = None,
    probe_gil: bool = True,
    show_progress: bool = False,
) -> dict[str, Any]:
    """``{retriever: {"levels": [...], ...}}`` (the ``load.json`` schema; docs/load.md). ``show_progress``:
    the retrievers report their build (the encode of a dense index) to the caller's display."""
    base = Path(config_dir) if config_dir is not None else Path.cwd()
    specs = config.specs()
    names = list(retrievers) if retrievers else list(specs)
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise InputError(f"no retriever {unknown[0]!r} in the config (it has: {', '.join(specs)})", field="retrievers")
    for name in names:  # before any retriever is built: a composed one is refused up front, not after the others ran
        refuse_composed(name, specs[name])
    # search settings apply to the retrievers that declare those knobs; none declaring them is an error
    sweep = [n for n in names if spec.search_params and set(spec.search_params) <= set(frontier.knobs_of(specs[n]))]
    if spec.search_params and not sweep:
        frontier.check_params(names[0], specs[names[0]], spec.search_params)
    ds = load_from_config(config.dataset.model_dump(), base)
    check_dataset_usable(ds)
    queries = list(ds.queries)
    if not queries:
        raise InputError("the dataset has no queries to send", field="dataset")
    seed = config.seed if spec.seed is None else spec.seed
    ctx = BuildContext(
        cache_dir=cache_dir_of(config.cache_dir),
        config_dir=base,
        seed=config.seed,
        depth=config.depth,
        show_progress=show_progress,
    )
    pool = max([*spec.concurrency, spec.workers, spec.sweep_concurrency])
    meta = {
        "dataset": ds.name,
        "split": ds.split,
        "queries": len(queries),
        "k": config.depth,
        "duration_s": spec.duration_s,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }
    out: dict[str, Any] = {}
    for name in names:
        log.info("load: %s: building", name)
        target = build_target(name, specs[name], ctx, ds, config.depth, pool)
        try:
            params = spec.search_params if name in sweep else {}
            out[name] = _drive(target, queries, ds, ctx, config, spec, cost, seed, probe_gil, meta, params)
        finally:
            target.close()
    return out


def _drive(target, queries, ds, ctx, config, spec: LoadSpec, cost, seed, probe_gil, meta, params) -> dict[str, Any]:
    warmed = warm(target, queries)
    rec: dict[str, Any] = {"kind": target.kind, **meta, "index_seconds": target.index_seconds, "warmup": warmed}
    if not warmed["ok"]:
        # nothing answered: no level could measure anything; say why, and go on with the next retriever
        failed = warmed["requests"] - warmed["ok"]
        rec["failed"] = f"warm-up: {failed} of {warmed['requests']} requests failed ({warmed['first_error']})"
        rec["levels"] = []
        log.warning("load: %s: %s; its levels were not run", target.name, rec["failed"])
        return rec
    if target.kind == "in-process" and probe_gil:
        probe = gil_probe(target, queries, seconds=min(1.0, spec.duration_s), seed=seed)
        rec["gil"] = probe
        note = gil_note(probe)
        if note:
            rec["notes"] = [note]
    levels = []
    for c in spec.concurrency:
        log.info("load: %s: closed loop, %d in flight, %g s", target.name, c, spec.duration_s)
        if target.load is not None:
            lv = target.load.closed_loop(
                c, spec.duration_s, warmup_s=spec.warmup_s, timeout_s=spec.timeout_s, seed=seed
            )
        else:
            lv = closed_loop(
                target.send, queries, c, spec.duration_s, warmup_s=spec.warmup_s, timeout_s=spec.timeout_s, seed=seed
            )
        levels.append(lv)
    for r in spec.rate:
        log.info("load: %s: open loop, %g/s, %g s", target.name, r, spec.duration_s)
        if target.load is not None:
            lv = target.load.open_loop(r, spec.duration_s, workers=spec.workers, timeout_s=spec.timeout_s, seed=seed)
        else:
            lv = open_loop(
                target.send, queries, r, spec.duration_s, workers=spec.workers, timeout_s=spec.timeout_s, seed=seed
            )
        levels.append(lv)
    note = _c1_note(levels)
    if note:
        rec.setdefault("notes", []).append(note)
    rec["levels"] = []
    for lv in levels:
        row = lv.to_json()
        if cost is not None:
            row.update(costs.level_costs(cost, lv.qps))
        rec["levels"].append(row)
    if cost is not None:
        tokens = (
            costs.count_tokens(target.obj, ds.corpus.contents(_doc_prefix(target.obj)))
            if target.obj is not None
            else None
        )
        best = max((lv.qps for lv in levels), default=None)
        rec["cost"] = {
            **cost.model_dump(),
            "usd_per_1m_queries_at_best_qps": costs.usd_per_million_queries(cost, best),
            "usd_index": costs.usd_index(cost, target.index_seconds),
            "corpus_tokens": tokens,
            "usd_embed_corpus": costs.usd_embed(cost, tokens),
        }
    if params:
        rec["search_params"] = frontier.sweep(
            target,
            params,
            ds,
            ctx,
            k=config.depth,
            metrics=["ndcg@10"],
            concurrency=spec.sweep_concurrency,
            duration_s=spec.sweep_duration_s,
            seed=seed,
        )
    return rec


def _c1_note(levels: list[Any]) -> str | None:
    """Why QPS at concurrency 1 and 1000 / p50 differ, when they differ by more than 1.5x: one client
    waits for each answer, so its QPS is 1000 / the *mean* latency, and a long tail pulls the mean
    above the median."""
    c1 = next((lv for lv in levels if lv.mode == "closed" and lv.concurrency == 1 and lv.p50_ms), None)
    if c1 is None or not c1.qps or not c1.mean_ms:
        return None
    ratio = (1000 / c1.p50_ms) / c1.qps
    if 1 / 1.5 <= ratio <= 1.5:
        return None
    return (
        # "1000 / p50 = 68", not "1000 / p50 (68)": a number in parentheses after p50 reads as the p50
        f"c=1: qps {c1.qps:,.4g} = 1000 / the mean latency ({c1.mean_ms:.3g} ms), not 1000 / p50 "
        f"= {1000 / c1.p50_ms:,.0f}: the mean is {c1.mean_ms / c1.p50_ms:.2g}x the median, a long tail "
        f"(p95 {c1.p95_ms:.3g} ms, p99 {c1.p99_ms:.3g} ms)"
    )


def _doc_prefix(obj: Any) -> str:
    enc = getattr(obj, "encoder", None)
    return str(getattr(enc, "doc_prefix", "") or "")
