"""``harness report DIR``: print a results folder's table (``--write`` re-renders its files);
``--worst N`` drills down to the queries where a retriever loses most against the baseline."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from harness.cli.command import add_allow_incomplete, add_command, serve_until_interrupted

if TYPE_CHECKING:
    from harness.results import Results

log = logging.getLogger("harness")


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
    from harness.errors import InputError
    from harness.results import Results
    from harness.results.drilldown import attach_folder, drilldown, print_drilldown
    from harness.results.render import write_renderings
    from harness.results.terminal import make_console, print_results
    from harness.suite import is_suite

    if is_suite(args.folder):  # a suite folder: its suite table (docs/suites.md)
        from harness.cli.suite import report_suite

        return report_suite(args)
    from harness.stream import is_stream_folder

    if is_stream_folder(args.folder):  # a stream folder: its table per retriever (docs/streaming.md)
        from harness.stream import read_stream, to_text

        print(to_text(read_stream(args.folder, allow_incomplete=args.allow_incomplete)), end="")
        return 0
    if args.worst is not None and args.worst < 1:
        raise InputError("--worst needs a positive number of queries", field="--worst")
    if args.docs < 0:
        raise InputError("--docs needs a number of documents >= 0", field="--docs")
    if args.write and args.no_write:
        raise InputError("--write and --no-write contradict each other", field="--write")
    if args.auto_qrels:  # before anything is read
        from harness.stats.levels import check_level

        check_level(args.alpha, "--alpha")

    results = Results.open(args.folder, allow_incomplete=args.allow_incomplete)
    if args.auto_qrels:  # prediction-powered intervals over the stored runs (docs/judging.md)
        from harness.cli.judge_tools import report_ppi

        return report_ppi(args, results)
    if args.qrels or args.judged_only:
        from harness.engine.rescore import rescore

        if args.write or args.html or args.serve:
            flag = "--write" if args.write else "--html" if args.html else "--serve"
            raise InputError(f"{flag} renders the folder as it was scored; a re-score is printed only", field=flag)
        results = rescore(results, args.qrels, judged_only=args.judged_only)
    if args.serve:
        return serve_page(results, args.port)
    console = make_console()
    if args.html and not args.write:
        from harness.results.page.render import write_report_page

        folder = results.folder
        images = [folder / f for f in ("metric_at_k.png", "quality_latency.png") if (folder / f).is_file()]
        written = write_report_page(attach_folder(results), folder, images)
        log.info("wrote %s in %s", ", ".join(p.name for p in written), results.folder)
    if args.write:
        attach_folder(results)
        written = write_renderings(results, results.folder)
        log.info("re-wrote %s in %s", ", ".join(p.name for p in written), results.folder)
    print_results(results, console, detail=not args.brief)
    if args.brief:
        from harness.results.page.render import PAGE_FILE

        page = results.folder / PAGE_FILE if results.folder is not None else None
        if page is not None and page.is_file():
            console.print(f"page: {page} (open it in a browser: every query, every ranking, the tests behind ▲/▼)")
        elif results.folder is not None:
            console.print(f"no page yet: `harness report {results.folder} --html` writes {PAGE_FILE}")
    if args.by == "tag":
        from harness.results.slices import print_by_tag

        print_by_tag(results, console)
    if args.worst is not None:
        found, metric, baseline, notes = drilldown(
            results, n=args.worst, metric=args.metric, retriever=args.retriever, baseline=args.baseline, docs=args.docs
        )
        print_drilldown(found, metric, baseline, notes, console)
    return 0


def serve_page(results: Results, port: int) -> int:
    """``--serve``: the folder's page (built now, not read from disk) on 127.0.0.1 until Ctrl-C."""
    from harness.errors import InputError
    from harness.results.drilldown import attach_folder
    from harness.results.page.render import CAPTIONS, PAGE_FILE, read_check_section, render
    from harness.results.page.serve import make_server

    if not 0 <= port <= 65535:
        raise InputError("must be 0..65535", field="--port")
    folder = results.folder
    images = [folder / f for f in ("metric_at_k.png", "quality_latency.png") if (folder / f).is_file()]
    images += sorted(folder.glob("perquery_*.png"))
    page = render(
        attach_folder(results), images=images, captions=CAPTIONS, check_section=read_check_section(folder / PAGE_FILE)
    )
    try:
        server = make_server(page, port)
    except OSError as e:
        raise InputError(f"cannot listen on 127.0.0.1:{port} ({e.strerror or e})", field="--port") from None
    host, bound = server.server_address[:2]
    print(f"report of {folder} at http://{host}:{bound}/ - Ctrl-C stops", flush=True)
    serve_until_interrupted(server)
    return 0
