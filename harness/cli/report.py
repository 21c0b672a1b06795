"""``harness report DIR``: print a results folder's table (``--write`` re-renders its files);
``--worst N`` drills down to the queries where a retriever loses most against the baseline. The flags
parsed into :class:`~harness.reporting.ReportOptions`; the folder's kind and its report:
:func:`harness.reporting.report`."""

from __future__ import annotations

import argparse

from harness.cli.command import add_allow_incomplete, add_command

#: ``harness report --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """print a results folder's table; --worst N lists the queries that lose most

Print the comparison table of a results folder (from results.json). The folder is left
as it is unless --write asks to re-render its tables and plots (from results.json, runs/ and qrels.tsv)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "report", ABOUT)
    p.add_argument("folder", metavar="DIR", help="results folder (holding results.json)")
    p.add_argument("--write", action="store_true", help="re-write the folder's tables and plots, then print")
    # printing only is the default now; the old flag stays accepted so existing scripts keep working
    p.add_argument("--no-write", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worst", type=int, metavar="N", help="list the N queries where each retriever loses most")
    p.add_argument("--retriever", metavar="NAME", help="with --worst: only this retriever")
    p.add_argument("--metric", metavar="M", help="with --worst: the metric to rank losses by (default: the first)")
    p.add_argument("--baseline", metavar="NAME", help="with --worst: compare with this retriever instead")
    p.add_argument(
        "--docs",
        type=int,
        metavar="K",
        default=3,
        help="with --worst: per query, the retriever's first K documents beside the relevant ones (default 3; 0: none)",
    )
    p.add_argument(
        "--qrels",
        metavar="FILE",
        help="re-score the stored runs against these judgments (no retriever runs; the folder is left as it is)",
    )
    p.add_argument(
        "--judged-only",
        action="store_true",
        help="re-score with unjudged documents removed from each ranking first (trec_eval -J)",
    )
    p.add_argument(
        "--by",
        choices=["tag"],
        help="also the table per slice of queries (their tags): counts, CIs, Holm-corrected tests within each slice",
    )
    p.add_argument(
        "--brief",
        action="store_true",
        help="only the comparison table, its legend with the power sentences, and the page's path (no "
        "per-comparison tests): the screen to end a long log on (make bench)",
    )
    p.add_argument("--html", action="store_true", help="(re-)write report.html, the page with the query explorer")
    p.add_argument("--serve", action="store_true", help="serve the folder's page on 127.0.0.1 (Ctrl-C stops)")
    p.add_argument("--port", type=int, default=8766, help="with --serve: port on 127.0.0.1 (default 8766; 0: any)")
    add_allow_incomplete(p)
    from harness.cli.judge_tools import add_ppi_arguments

    add_ppi_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.reporting import ReportOptions, report

    return report(ReportOptions(
        folder=args.folder, write=args.write, no_write=args.no_write, worst=args.worst, retriever=args.retriever,
        metric=args.metric, baseline=args.baseline, docs=args.docs, qrels=args.qrels, judged_only=args.judged_only,
        by=args.by, brief=args.brief, html=args.html, serve=args.serve, port=args.port,
        allow_incomplete=args.allow_incomplete, auto_qrels=args.auto_qrels, labelled=args.labelled, alpha=args.alpha,
    ))  # fmt: skip
