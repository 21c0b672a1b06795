"""``harness report DIR``: re-render a results folder (tables, plots) and print its table;
``--worst N`` drills down to the queries where a retriever loses most against the baseline."""

from __future__ import annotations

import argparse
import logging

log = logging.getLogger("harness")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="re-render a results folder and print its table; --worst N lists the queries that lose most",
        description="Re-write the tables and plots of a results folder (from results.json, runs/ and qrels.tsv) "
        "and print the comparison table.",
    )
    p.add_argument("folder", metavar="DIR", help="results folder (holding results.json)")
    p.add_argument("--worst", type=int, metavar="N", help="list the N queries where each retriever loses most")
    p.add_argument("--retriever", metavar="NAME", help="with --worst: only this retriever")
    p.add_argument("--metric", metavar="M", help="with --worst: the metric to rank losses by (default: the first)")
    p.add_argument("--baseline", metavar="NAME", help="with --worst: compare with this retriever instead")
    p.add_argument("--no-write", action="store_true", help="print only; leave the folder's files as they are")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.api import BenchmarkResults as Results
    from harness.errors import InputError
    from harness.report import write_reports
    from harness.report.drilldown import attach_folder, drilldown, print_drilldown
    from harness.report.terminal import make_console, print_results

    if args.worst is not None and args.worst < 1:
        raise InputError("--worst needs a positive number of queries", field="--worst")
    results = Results.load(args.folder)
    console = make_console()
    if not args.no_write:
        attach_folder(results)
        written = write_reports(results, results.folder)
        log.info("re-wrote %s in %s", ", ".join(p.name for p in written), results.folder)
    print_results(results, console)
    if args.worst is not None:
        found, metric, baseline, notes = drilldown(
            results, n=args.worst, metric=args.metric, retriever=args.retriever, baseline=args.baseline
        )
        print_drilldown(found, metric, baseline, notes, console)
    return 0
