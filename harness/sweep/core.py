"""Run a sweep: choose each swept retriever's point on selection queries, report it on test queries.

Honest selection, as the design asks: the point is chosen by one metric's mean over the
*selection* queries only (a training split, or the other folds); the test queries are then used
once, to score the chosen point next to the default setting with a paired randomization test
(:func:`harness.stats.compare` over the test queries alone). The selection-vs-test gap of the
chosen point is reported too: it is how much the choice flattered itself.

Retrievers are swept one at a time in the order the ``grid`` names them; a later one is swept on
the earlier ones' chosen points (a hybrid is tuned over the chosen BM25), and its default is the
config's setting all the way down. Every variant runs once over selection and test queries
together (see :mod:`harness.sweep.plan`), so indexes are built once per distinct setting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from harness.api import benchmark as api_benchmark
from harness.api import cache_dir_of
from harness.config import RunConfig
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.metrics.evaluate import mean
from harness.model import GoldenDataset
from harness.stats import compare
from harness.sweep.plan import BenchmarkFn, Planner, VariantRunner
from harness.sweep.spec import Point, SweepSpec, point_label
from harness.sweep.validate import validate_plan

log = logging.getLogger("harness")


class Context(BaseModel):
    """One selection/test division of the queries: ``select_on`` has one, ``folds: N`` has N."""

    name: str
    select_ids: list[str]
    test_ids: list[str]


class PointScore(BaseModel):
    point: Point
    label: str
    #: mean of the sweep metric over the selection queries (averaged over folds); None if it failed
    selection: float | None
    #: in how many contexts (folds) this point was chosen
    chosen: int = 0
    error: str | None = None


class TestRow(BaseModel):
    """One metric of the chosen-vs-default comparison on the test queries."""

    metric: str
    default: float
    chosen: float
    default_ci: list[float]
    chosen_ci: list[float]
    delta: float
    delta_ci: list[float]
    p_value: float
    p_t: float
    p_holm: float
    wins: int
    ties: int
    losses: int


class Section(BaseModel):
    """The sweep of one retriever."""

    retriever: str
    axes: list[tuple[str, list[Any]]] | None
    points: list[PointScore]
    default: Point
    default_in_grid: bool
    default_selection: float | None
    #: chosen point per context
    chosen: list[Point]
    #: earlier swept retrievers held at their chosen points, per context (labels)
    held: list[dict[str, str]]
    test: list[TestRow]
    #: mean of the sweep metric: chosen point on selection vs on test queries (the optimism of the choice)
    selection_of_chosen: float
    test_of_chosen: float
    selection_of_default: float
    test_of_default: float
    n_test: int
    #: the sweep metric per test query: ``{query_id: {"chosen": v, "default": v}}`` (held out)
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)

    @property
    def gap(self) -> float:
        return self.selection_of_chosen - self.test_of_chosen


class SweepResult(BaseModel):
    dataset: str
    mode: str
    metric: str
    metrics: list[str]
    contexts: list[dict[str, Any]]
    sections: list[Section]
    work: dict[str, Any]
    stats: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0


def build_queries(config: RunConfig, sweep: SweepSpec, base: Path) -> tuple[GoldenDataset, list[Context]]:
    """The dataset a sweep runs on (selection and test queries together), and its contexts."""
    if config.datasets is not None:
        raise InputError("a sweep tunes on one dataset: give dataset:, not datasets: (a suite)", field="datasets")
    path: Any = config.dataset.path
    if path != "demo":
        p = Path(path).expanduser()
        path = str(p if p.is_absolute() else base / p)
    split = config.dataset.split
    test = load_dataset(path, split, name=config.dataset.name)
    if sweep.folds is not None:
        ids = sorted(q.id for q in test.queries)
        if sweep.folds > len(ids):
            raise InputError(f"{sweep.folds} folds for {len(ids)} queries", field="sweep.folds")
        order = np.random.default_rng(config.seed).permutation(len(ids))
        folds = [sorted(ids[i] for i in order[f :: sweep.folds]) for f in range(sweep.folds)]
        contexts = [
            Context(name=f"fold {f + 1}", select_ids=sorted(set(ids) - set(fold)), test_ids=fold)
            for f, fold in enumerate(folds)
        ]
        return test, contexts
    assert sweep.select_on is not None
    if sweep.select_on == split:
        raise InputError(
            f"select_on is the split the sweep reports on ({split!r}): choosing on the test queries is what a "
            "sweep exists to avoid; name another split, or use `folds: N`",
            field="sweep.select_on",
        )
    sel = load_dataset(path, sweep.select_on, name=config.dataset.name)
    both = {q.id for q in sel.queries} & {q.id for q in test.queries}
    if both and len(both) == len(sel.queries):
        raise InputError(_no_selection_queries(sweep.select_on, split, sel, both), field="sweep.select_on")
    if both:
        raise InputError(
            f"{len(both)} queries are in both {sweep.select_on!r} and {split!r} (e.g. {sorted(both)[0]!r}), so "
            "they cannot be held out; use splits with disjoint queries, or `folds: N`",
            field="sweep.select_on",
        )
    merged = GoldenDataset(
        name=test.name,
        corpus=test.corpus,
        queries=[*sel.queries, *test.queries],
        qrels={**sel.qrels, **test.qrels},
        split=f"{sweep.select_on}+{split}",
        source=test.source,
    )
    ctx = Context(
        name=f"{sweep.select_on} -> {split}",
        select_ids=[q.id for q in sel.queries],
        test_ids=[q.id for q in test.queries],
    )
    return merged, [ctx]


def _no_selection_queries(select_on: str, split: str, sel: GoldenDataset, both: set[str]) -> str:
    """Why the selection split has no query of its own: usually its judgments name no query of
    queries.jsonl (they were skipped, with a warning), and what is left are keyword-judged queries
    with no ``split`` field, which belong to every split."""
    keyword = sum(1 for q in sel.queries if q.keywords)
    why = f"split {select_on!r} has no query to choose on that is not also in {split!r}"
    if keyword == len(both):
        why += (
            f": its judgments name no query of queries.jsonl, and its {keyword} keyword-judged queries have no "
            "`split` field, so they belong to every split"
        )
    return why + "; judge queries of queries.jsonl in that split, or use `folds: N`"


def run_sweep(
    config: RunConfig,
    sweep: SweepSpec,
    *,
    config_dir: str | Path | None = None,
    show_progress: bool = False,
    benchmark: BenchmarkFn | None = None,
) -> SweepResult:
    """Run ``sweep`` over ``config``'s retrievers (see module doc); ``benchmark`` defaults to
    :func:`harness.benchmark`."""
    base = Path(config_dir) if config_dir is not None else Path.cwd()
    validate_plan(config, sweep)  # before any work (once per spec: load_sweep_config checked it with its lines)
    dataset, contexts = build_queries(config, sweep, base)
    metrics = list(dict.fromkeys([sweep.metric, *config.metrics]))
    planner = Planner(config.retrievers)
    runner = VariantRunner(
        dataset,
        planner,
        metrics=metrics,
        benchmark=benchmark or api_benchmark,
        depth=config.depth,
        cache_dir=cache_dir_of(config.cache_dir).resolve(),
        seed=config.seed,
        workdir=base.resolve(),
        show_progress=show_progress,
    )
    stats = config.stats.model_dump()
    chosen: list[dict[str, Point]] = [{} for _ in contexts]
    sections: list[Section] = []
    for name in sweep.grid:
        points = sweep.points(name)
        held = [{n: point_label(p) for n, p in c.items()} for c in chosen]
        cells = [[planner.variant(name, {**c, name: p}).key for p in points] for c in chosen]
        default_key = planner.variant(name, {}).key
        log.info("sweeping %s: %d points x %d selection set(s)", name, len(points), len(contexts))
        runner.ensure([*(k for row in cells for k in row), default_key])
        if default_key in runner.failed:
            raise InputError(f"{name!r} at its config setting failed: {runner.failed[default_key]}")
        selection = np.array(
            [[runner.mean(k, ctx.select_ids, sweep.metric) for k in row] for row, ctx in zip(cells, contexts)]
        )
        if np.isnan(selection).all(axis=1).any():
            raise InputError(f"every point of {name!r} failed; see the log for why")
        # ties go to the first point in grid order (nanargmax returns the first maximum)
        picks = [int(np.nanargmax(row)) for row in selection]
        for c, i in enumerate(picks):
            chosen[c][name] = points[i]
        section = _section(
            name,
            sweep,
            points,
            cells,
            default_key,
            picks,
            selection,
            contexts,
            runner,
            planner,
            metrics,
            stats,
            config.seed,
        )
        section.held = held
        sections.append(section)
        log.info(
            "%s: chose %s (selection %s %.4f); test %.4f vs default %.4f",
            name,
            " / ".join(dict.fromkeys(point_label(p) for p in section.chosen)),
            sweep.metric,
            section.selection_of_chosen,
            section.test_of_chosen,
            section.test_of_default,
        )
    mode = f"select_on: {sweep.select_on}" if sweep.select_on else f"folds: {sweep.folds}"
    return SweepResult(
        dataset=dataset.name,
        mode=mode,
        metric=sweep.metric,
        metrics=metrics,
        contexts=[
            {"name": c.name, "selection_queries": len(c.select_ids), "test_queries": len(c.test_ids)} for c in contexts
        ],
        sections=sections,
        work={
            **runner.work.as_dict(),
            "variants": {runner.name_of(k): planner.variants[k].spec.type for k in runner.scores},
        },
        stats=stats,
        seed=config.seed,
    )


def _section(
    name: str,
    sweep: SweepSpec,
    points: Sequence[Point],
    cells: Sequence[Sequence[str]],
    default_key: str,
    picks: Sequence[int],
    selection: np.ndarray,
    contexts: Sequence[Context],
    runner: VariantRunner,
    planner: Planner,
    metrics: Sequence[str],
    stats: Mapping[str, Any],
    seed: int,
) -> Section:
    options = list(dict.fromkeys(o for p in points for o in p))
    default = planner.option_values(name, options)
    with np.errstate(all="ignore"):
        grid_means = np.nanmean(selection, axis=0) if len(contexts) > 1 else selection[0]
    counts = np.bincount(picks, minlength=len(points))
    scored = [
        PointScore(
            point=p,
            label=point_label(p),
            selection=None if np.isnan(grid_means[i]) else float(grid_means[i]),
            chosen=int(counts[i]),
            error=runner.failed.get(cells[0][i]),
        )
        for i, p in enumerate(points)
    ]
    # held-out scores: each context's test queries, scored by that context's chosen point
    test_ids = [q for ctx in contexts for q in ctx.test_ids]
    chosen_vals = {
        m: np.concatenate([runner.values(cells[c][picks[c]], ctx.test_ids, m) for c, ctx in enumerate(contexts)])
        for m in metrics
    }
    default_vals = {m: runner.values(default_key, test_ids, m) for m in metrics}
    sig, intervals = compare(
        {"chosen": chosen_vals, "default": default_vals}, "default", seed=seed, query_ids=test_ids, **stats
    )
    rows = []
    for m in metrics:
        t = sig["chosen"][m]
        rows.append(
            TestRow(
                metric=m,
                default=_mean(default_vals[m]),
                chosen=_mean(chosen_vals[m]),
                default_ci=intervals["default"][m],
                chosen_ci=intervals["chosen"][m],
                delta=t["delta"],
                delta_ci=[t["ci_low"], t["ci_high"]],
                p_value=t["p_value"],
                p_t=t["p_t"],
                p_holm=t["p_holm"],
                wins=t["wins"],
                ties=t["ties"],
                losses=t["losses"],
            )
        )
    sel_chosen = float(np.mean([selection[c][picks[c]] for c in range(len(contexts))]))
    sel_default = float(np.mean([runner.mean(default_key, ctx.select_ids, sweep.metric) for ctx in contexts]))
    return Section(
        retriever=name,
        axes=sweep.axes(name),
        points=scored,
        default=default,
        default_in_grid=any(p == {o: default[o] for o in p} for p in points),
        default_selection=sel_default,
        chosen=[dict(points[i]) for i in picks],
        held=[],
        test=rows,
        selection_of_chosen=sel_chosen,
        test_of_chosen=rows[0].chosen,
        selection_of_default=sel_default,
        test_of_default=rows[0].default,
        n_test=len(test_ids),
        per_query={
            q: {"chosen": float(c), "default": float(d)}
            for q, c, d in zip(test_ids, chosen_vals[metrics[0]], default_vals[metrics[0]], strict=True)
        },
    )


def _mean(v: np.ndarray) -> float:
    return mean(v[~np.isnan(v)])
