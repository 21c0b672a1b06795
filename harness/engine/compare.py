"""Scoring TREC run files produced elsewhere (``harness compare``): the same metrics core, the
same statistics (:func:`harness.stats.compare`) and the same :class:`~harness.results.Results` as a
run of the harness's own retrievers, with nothing timed.

Run files are named by the record the harness stored beside them, else by their stem
(:func:`harness.results.record.run_names`); a run file stored in a results folder must still hash to
its record; runs that rank different judged queries are compared on the queries all of them rank.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from harness import clock, defaults
from harness.engine.score import score
from harness.results import Manifest, Results
from harness.results.integrity import check_stored_run
from harness.results.record import run_names

log = logging.getLogger("harness")


@dataclass(frozen=True)
class CompareOptions:
    """What ``harness compare`` was asked: run files, judgments, and the statistics settings."""

    runs: list[str]
    qrels: str
    baseline: str | None = None
    metrics: str = ",".join(defaults.METRICS)
    dataset: str | None = None
    split: str = defaults.SPLIT
    judged_only: bool = False
    seed: int = 0
    bootstrap: int = 1000
    permutations: int = 10000
    alpha: float = 0.05
    correction: str = "all"
    allow_incomplete: bool = False
    #: the command line recorded in the manifest
    command: list[str] = field(default_factory=list)


def _dataset_entry(args: CompareOptions, n_queries: int, n_judgments: int) -> dict:
    entry: dict = {"name": Path(args.qrels).name, "split": None, "queries": n_queries, "judgments": n_judgments}
    if args.dataset:
        from harness.datasets import DEMO

        source = None if args.dataset == DEMO else str(Path(args.dataset).expanduser().resolve())
        entry.update(name=DEMO if source is None else Path(source).name, split=args.split, source=source)
    return entry


def compare_runs(o: CompareOptions) -> Results:
    """Score the run files with :func:`harness.engine.score` (the scorer ``harness run`` uses), for
    a :class:`~harness.results.Results` with no efficiency (nothing was timed here)."""
    from pydantic import ValidationError

    from harness.config import StatsConfig
    from harness.errors import InputError
    from harness.io.trec import read_qrels, read_run
    from harness.manifest import git_commit, library_versions
    from harness.metrics.evaluate import CompiledQrels, check_overlap
    from harness.metrics.names import parse_metrics

    try:
        stats = StatsConfig(bootstrap=o.bootstrap, permutations=o.permutations, alpha=o.alpha, correction=o.correction)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=f"--{err['loc'][0]}") from None
    metrics = parse_metrics(o.metrics)
    bad = [m.name for m in metrics if m.needs_embeddings]
    if bad:
        raise InputError(f"{', '.join(bad)} needs document embeddings, which run files do not carry", field="--metrics")
    qrels = read_qrels(o.qrels)
    cq = CompiledQrels(qrels)
    names = run_names(o.runs)
    if len(set(names)) != len(names):
        raise InputError("the same run file is named twice", field="RUN_FILE")
    baseline = o.baseline or names[0]
    if baseline not in names:
        by_path = dict(zip(o.runs, names))
        if baseline not in by_path:
            raise InputError(f"baseline {baseline!r} is not one of the runs ({', '.join(names)})", field="--baseline")
        baseline = by_path[baseline]
    for path in o.runs:
        check_stored_run(path, allow_incomplete=o.allow_incomplete)
    runs = {name: read_run(path, name=name) for name, path in zip(names, o.runs)}
    qrels, overlap = _paired_queries(qrels, runs, o.runs)
    if overlap:
        cq = CompiledQrels(qrels)  # the queries every run ranks (warned); none is missing from a run now
    for run, path in zip(runs.values(), o.runs):
        warning = check_overlap(cq, run, run_label=path, qrels_label=o.qrels)
        if warning:
            log.warning("%s", warning)
    depth = max((r.depth for r in runs.values()), default=0)
    manifest = Manifest(
        {
            "created": clock.stamp(),
            "command": list(o.command),
            "versions": library_versions(),
            "git": git_commit(),
            "seed": o.seed,
            "dataset": _dataset_entry(o, len(cq), sum(len(j) for j in qrels.values())),
            "config": {
                "qrels": str(Path(o.qrels).resolve()),
                "metrics": [m.name for m in metrics],
                "baseline": baseline,
                "depth": depth,
                "seed": o.seed,
                "stats": stats.model_dump(),
            },
            "retrievers": {
                n: {"spec": {"type": "run_file", "path": str(Path(p).resolve())}, "inputs": [], "status": "ok"}
                for n, p in zip(names, o.runs)
            },
        }
    )
    if overlap:
        manifest.set("query_overlap", overlap)
    return score(
        runs,
        cq,
        metrics,
        baseline=baseline,
        seed=o.seed,
        stats=stats.model_dump(),
        manifest=manifest.data,
        judged_only=o.judged_only,
    )


def _paired_queries(qrels: dict, runs: dict, paths: list[str]) -> tuple[dict, dict | None]:
    """The judgments to compare on, and a note when the runs rank different judged queries.

    A paired test compares two runs query by query. Run files that rank different queries (two
    halves of a split, runs of two datasets) would be compared on queries one of them never saw, each
    scoring 0 there: a meaningless W/T/L and p-value. No judged query in common is refused (exit 2);
    a partial overlap is compared on the queries every run ranks, with a warning giving the counts."""
    from harness.errors import InputError

    if len(runs) < 2:
        return qrels, None
    judged = set(qrels)
    ranked = {name: judged.intersection(run.query_ids) for name, run in runs.items()}
    common = set.intersection(*ranked.values())
    if all(r == common for r in ranked.values()):
        return qrels, None
    counts = ", ".join(f"{path} {len(ranked[name])}" for name, path in zip(runs, paths, strict=True))
    if not common:
        raise InputError(
            f"the runs rank no judged query in common ({counts} of {len(judged)} judged queries): a paired "
            "comparison needs the same queries; compare runs of the same queries",
            field="RUN_FILE",
        )
    log.warning(
        "the runs rank different judged queries (%s of %d); compared on the %d that every run ranks",
        counts,
        len(judged),
        len(common),
    )
    note = {
        "judged": len(judged),
        "compared": len(common),
        "ranked": {name: len(r) for name, r in ranked.items()},
    }
    return {q: j for q, j in qrels.items() if q in common}, note
