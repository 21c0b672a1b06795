"""``harness evaluate``: score TREC run files against qrels, trec_eval-exact."""

from __future__ import annotations

import argparse
import json
import sys

from harness import defaults
from harness.cli.command import add_allow_incomplete
from harness.engine import score
from harness.errors import InputError
from harness.io.qrels_columnar import read_qrels_columnar
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import CompiledQrels, check_overlap
from harness.metrics.names import parse_metrics


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score TREC run files against judgments",
        description="Score TREC run files against TREC qrels or a BEIR qrels tsv.",
    )
    p.add_argument(
        "--qrels", help="TREC qrels (4 columns) or BEIR tsv (query-id corpus-id score); optional with --nuggets"
    )
    p.add_argument(
        "--nuggets", metavar="FILE", help="nuggetizer nuggets JSONL, for the nugget metrics (docs/nuggets.md)"
    )
    p.add_argument("--assignments", metavar="FILE", help="nuggetizer assignments JSONL (assign --input-kind retrieval)")
    p.add_argument(
        "--auto-assignments",
        metavar="FILE",
        help="a judge's assignments: with --assignments (people's, on a sample of queries), each nugget metric's "
        "prediction-powered interval (docs/nuggets.md)",
    )
    p.add_argument(
        "--run", required=True, action="append", dest="runs", metavar="FILE", help="TREC run file (repeat for several)"
    )
    p.add_argument(
        "--metrics",
        help=f"comma-separated, e.g. ndcg@10,map,mrr@10 (default {','.join(defaults.METRICS)}; "
        f"with nuggets and no qrels {','.join(defaults.NUGGET_METRICS)})",
    )
    p.add_argument("--per-query", action="store_true", help="also report every query's values")
    p.add_argument(
        "--judged-only", action="store_true", help="drop unjudged documents from each ranking first (trec_eval -J)"
    )
    p.add_argument("--format", choices=["table", "json", "csv", "markdown"], default="table")
    add_allow_incomplete(p)
    from harness.cli.judge_tools import add_ppi_arguments

    add_ppi_arguments(p)
    p.set_defaults(func=run)


def _compiled_qrels(path: str) -> CompiledQrels:
    """A large qrels file in the plain shape as arrays (a million judged queries would otherwise be a
    million dicts); anything else through the line reader, with its located errors."""
    arrays = read_qrels_columnar(path)
    return CompiledQrels(read_qrels(path)) if arrays is None else CompiledQrels.from_arrays(*arrays)


def run(args: argparse.Namespace) -> int:
    if args.auto_qrels or args.auto_assignments:  # first: an alpha no interval can be computed at is one line
        from harness.stats.levels import check_level

        check_level(args.alpha, "--alpha")
    if args.qrels is None and args.nuggets is None:
        raise InputError("give --qrels, or --nuggets for the nugget metrics", field="--qrels")
    if args.metrics is None:
        args.metrics = ",".join(defaults.METRICS if args.qrels else defaults.NUGGET_METRICS)
    metrics = parse_metrics(args.metrics)
    from harness.nuggets.judgments import for_metrics

    nuggets = for_metrics(metrics, args.nuggets, args.assignments, qrels_given=args.qrels is not None)
    qrels = _compiled_qrels(args.qrels) if args.qrels else CompiledQrels(nuggets.qrels())  # type: ignore[union-attr]
    from harness.results.integrity import check_stored_run

    for path in args.runs:
        check_stored_run(path, allow_incomplete=args.allow_incomplete)
    from harness.results.record import run_names

    runs = {name: read_run(path, name=name) for name, path in zip(run_names(args.runs), args.runs)}
    if args.auto_assignments:  # prediction-powered intervals: people's assignments and a judge's
        from harness.judging.ppi import ppi_from_nugget_files, render

        report = ppi_from_nugget_files(
            runs, [m.name for m in metrics], nuggets=args.nuggets, assignments=args.assignments,
            auto_assignments=args.auto_assignments, labelled=args.labelled, alpha=args.alpha,
        )  # fmt: skip
        sys.stdout.write(
            json.dumps(report, indent=1, allow_nan=False) + "\n" if args.format == "json" else render(report)
        )
        return 0
    if args.auto_qrels:  # prediction-powered intervals: people's judgments (--qrels) and a judge's
        from harness.cli.judge_tools import print_ppi

        return print_ppi(args, runs, [m.name for m in metrics], fmt=args.format)
    for run, path in zip(runs.values(), args.runs):
        if nuggets is not None:
            nuggets.check_overlap(run, path)
        if args.qrels is None:
            continue
        warning = check_overlap(qrels, run, run_label=path, qrels_label=args.qrels)
        if warning:
            print(f"harness: warning: {warning}", file=sys.stderr)
    # the one scorer every command uses; evaluate prints means and per-query values, no statistics
    results = score(
        runs,
        qrels,
        metrics,
        statistics=False,
        judged_only=args.judged_only,
        nuggets=None if nuggets is None else nuggets.input_for,
    )
    from harness.results.evaluate_table import evaluate_table

    sys.stdout.write(evaluate_table(results, args.format, args.per_query))
    return 0
