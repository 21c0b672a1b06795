"""``harness nuggets assign``: assign nuggets to the passages of a results folder's top k by a judge
(docs/nuggets.md)."""

from __future__ import annotations

import argparse
import logging
import sys

from harness.cli.command import add_allow_incomplete, add_command

log = logging.getLogger("harness")

ABOUT = """assign nuggets to retrieved passages with a judge (assign)

`assign` asks a judge (an OpenAI-compatible endpoint with nuggetizer's prompt, or a team's class)
which nuggets each passage of a results folder's top k supports, for every passage the assignments
file does not hold yet, and appends nuggetizer's records to it: cached, resumable, concurrent,
costed. The nugget metrics (nugget_vital@k...) then score the folder's runs."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "nuggets", ABOUT)
    nsub = p.add_subparsers(dest="nuggets_command", metavar="ACTION")
    a = nsub.add_parser("assign", help="assign nuggets to every unassessed passage of a folder's top k")
    a.add_argument("--nuggets", required=True, metavar="N", help="nuggetizer nuggets JSONL")
    a.add_argument("--results", required=True, metavar="DIR", help="results folder whose stored runs to assign")
    a.add_argument("--depth", type=int, default=10, metavar="K", help="top K of every run (default 10)")
    a.add_argument(
        "--judge", required=True, help="http (an OpenAI-compatible endpoint) or module:Class (a team's assigner)"
    )
    a.add_argument(
        "--out", required=True, metavar="A", help="assignments JSONL: new, or one to add to (its records are kept)"
    )
    a.add_argument("--model", help="http: the model name to ask for")
    from harness.cli.endpoint import add_endpoint_arguments

    add_endpoint_arguments(a, "passage")  # the flags of judge auto --judge http
    a.add_argument("--price-in", type=float, metavar="USD", help="USD per 1M input tokens (cost line)")
    a.add_argument("--price-out", type=float, metavar="USD", help="USD per 1M output tokens (cost line)")
    a.add_argument(
        "--judge-option", action="append", default=[], metavar="KEY=VALUE", help="module:Class: keyword arguments"
    )
    add_allow_incomplete(a)
    a.add_argument("--no-progress", action="store_true", help="no progress display")
    a.set_defaults(func=assign)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def assign(args: argparse.Namespace) -> int:
    from harness import progress as progress_mod
    from harness.cli.endpoint import endpoint_settings
    from harness.judging.judge import parse_options
    from harness.judging.nugget_assign import AssignOptions
    from harness.judging.nugget_assign import assign as run_assign

    opts = AssignOptions(
        nuggets=args.nuggets, results=args.results, out=args.out, judge=args.judge, depth=args.depth,
        model=args.model, endpoint=endpoint_settings(args), price_in=args.price_in, price_out=args.price_out,
        judge_options=parse_options(args.judge_option), allow_incomplete=args.allow_incomplete,
    )  # fmt: skip
    with progress_mod.session(sys.stderr, enabled=not args.no_progress) as bar:
        report = run_assign(opts, progress=bar)
    for line in report.lines():
        log.info("%s", line)
    report.raise_if_cut()
    return 0
