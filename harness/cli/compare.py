"""``harness compare RUN_FILE... --qrels FILE``: the comparison table for TREC runs produced
elsewhere: the same metrics core, the same statistics (:func:`harness.stats.compare`), the same
table as ``harness run``; ``--out DIR`` writes a results folder that ``harness report`` reads."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness import clock, defaults
from harness.cli.command import add_allow_incomplete

log = logging.getLogger("harness")


def register(sub: argparse._SubParsersAction) -> None:
    from harness.config import StatsConfig

    d = StatsConfig()
    p = sub.add_parser(
        "compare",
        help="comparison table (significance, CIs) for TREC run files produced elsewhere",
        description="Score TREC run files against judgments and compare them with a baseline run: bootstrap CIs "
        "of every mean, paired randomization and t-tests, Holm correction, wins/ties/losses.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_FILE", help="TREC run files (named after the file stem)")
    p.add_argument("--qrels", required=True, help="TREC qrels (4 columns) or BEIR tsv (query-id corpus-id score)")
    p.add_argument("--baseline", metavar="NAME", help="the run the others are tested against (default: the first)")
    p.add_argument("--metrics", default=",".join(defaults.METRICS), help="comma-separated, e.g. ndcg@10,map,mrr@10")
    p.add_argument("--out", metavar="DIR", help="also write a results folder (tables, plots, runs, results.json)")
    p.add_argument("--dataset", help="BEIR folder or 'demo' the runs came from (recorded, for query text in reports)")
    p.add_argument("--split", default=defaults.SPLIT, help="the dataset's split (with --dataset; default test)")
    p.add_argument(
        "--judged-only", action="store_true", help="drop unjudged documents from each ranking first (trec_eval -J)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bootstrap", type=int, default=d.bootstrap, help=f"bootstrap resamples (default {d.bootstrap})")
    p.add_argument(
        "--permutations",
        type=int,
        default=d.permutations,
        help=f"randomization-test sign flips (default {d.permutations})",
    )
    p.add_argument("--alpha", type=float, default=d.alpha, help=f"significance level after Holm (default {d.alpha})")
    p.add_argument(
        "--correction",
        choices=["all", "metric"],
        default=d.correction,
        help=f"Holm's family: the whole table or each metric's column (default {d.correction})",
    )
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def _dataset_entry(args: argparse.Namespace, n_queries: int, n_judgments: int) -> dict:
    entry: dict = {"name": Path(args.qrels).name, "split": None, "queries": n_queries, "judgments": n_judgments}
    if args.dataset:
        from harness.datasets import DEMO

        source = None if args.dataset == DEMO else str(Path(args.dataset).expanduser().resolve())
        entry.update(name=DEMO if source is None else Path(source).name, split=args.split, source=source)
    return entry


def build_results(args: argparse.Namespace):
    """Score the run files with :func:`harness.engine.score` (the scorer ``harness run`` uses), for
    a :class:`~harness.results.Results` with no efficiency (nothing was timed here)."""
    from pydantic import ValidationError

    from harness.cli.evaluate import _run_names
    from harness.config import StatsConfig
    from harness.engine import score
    from harness.errors import InputError
    from harness.io.trec import read_qrels, read_run
    from harness.manifest import git_commit, library_versions
    from harness.metrics.evaluate import CompiledQrels, check_overlap
    from harness.metrics.names import parse_metrics

    try:
        stats = StatsConfig(
            bootstrap=args.bootstrap, permutations=args.permutations, alpha=args.alpha, correction=args.correction
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field=f"--{err['loc'][0]}") from None
    metrics = parse_metrics(args.metrics)
    bad = [m.name for m in metrics if m.needs_embeddings]
    if bad:
        raise InputError(f"{', '.join(bad)} needs document embeddings, which run files do not carry", field="--metrics")
    qrels = read_qrels(args.qrels)
    cq = CompiledQrels(qrels)
    names = _run_names(args.runs)
    if len(set(names)) != len(names):
        raise InputError("the same run file is named twice", field="RUN_FILE")
    baseline = args.baseline or names[0]
    if baseline not in names:
        by_path = dict(zip(args.runs, names))
        if baseline not in by_path:
            raise InputError(f"baseline {baseline!r} is not one of the runs ({', '.join(names)})", field="--baseline")
        baseline = by_path[baseline]
    from harness.results.integrity import check_stored_run

    for path in args.runs:
        check_stored_run(path, allow_incomplete=args.allow_incomplete)
    runs = {name: read_run(path, name=name) for name, path in zip(names, args.runs)}
    qrels, overlap = _paired_queries(qrels, runs, args.runs)
    if overlap:
        cq = CompiledQrels(qrels)  # the queries every run ranks (warned); none is missing from a run now
    for run, path in zip(runs.values(), args.runs):
        warning = check_overlap(cq, run, run_label=path, qrels_label=args.qrels)
        if warning:
            log.warning("%s", warning)
    depth = max((r.depth for r in runs.values()), default=0)
    manifest = {
        "created": clock.stamp(),
        "command": sys.argv,
        "versions": library_versions(),
        "git": git_commit(),
        "seed": args.seed,
        "dataset": _dataset_entry(args, len(cq), sum(len(j) for j in qrels.values())),
        "config": {
            "qrels": str(Path(args.qrels).resolve()),
            "metrics": [m.name for m in metrics],
            "baseline": baseline,
            "depth": depth,
            "seed": args.seed,
            "stats": stats.model_dump(),
        },
        "retrievers": {
            n: {"spec": {"type": "run_file", "path": str(Path(p).resolve())}, "inputs": [], "status": "ok"}
            for n, p in zip(names, args.runs)
        },
    }
    if overlap:
        manifest["query_overlap"] = overlap
    return score(
        runs,
        cq,
        metrics,
        baseline=baseline,
        seed=args.seed,
        stats=stats.model_dump(),
        manifest=manifest,
        judged_only=args.judged_only,
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


def run(args: argparse.Namespace) -> int:
    from harness.engine import check_out_dir
    from harness.results.terminal import print_results

    if args.out:
        check_out_dir(Path(args.out))
    results = build_results(args)
    if args.out:
        out = results.save(args.out)
        log.info("results written to %s", out)
    print_results(results)
    return 0
