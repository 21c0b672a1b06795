"""``harness baseline save RESULTS --to FILE``: keep what ``harness check`` needs, to commit
(the file's format: :mod:`harness.results.baseline`)."""

from __future__ import annotations

import argparse
import sys

from harness.cli.command import add_allow_incomplete, add_command, usage

#: ``harness baseline save --help``: its line in ``harness --help``, a blank line, its description
ABOUT_SAVE = """write a compact baseline file from a results folder

Write the parts of RESULTS that `harness check` reads (manifest, summary, per-query
scores, counts) to FILE, atomically. Replacing an existing FILE needs --force."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("baseline", help="save results as a baseline file for `harness check`")
    actions = p.add_subparsers(dest="baseline_command", metavar="ACTION")
    s = add_command(actions, "save", ABOUT_SAVE)
    s.add_argument("results", metavar="RESULTS", help="results folder or results.json")
    s.add_argument(
        "--to", required=True, metavar="FILE", help="baseline file, e.g. results/baselines/demo/nightly.json"
    )
    s.add_argument("--force", action="store_true", help="replace FILE if it exists (updating a committed baseline)")
    s.add_argument("--retrievers", action="append", help="keep only these retrievers, comma-separated")
    add_allow_incomplete(s)
    s.set_defaults(func=save)
    p.set_defaults(func=lambda args: usage(p))


def save(args: argparse.Namespace) -> int:
    from harness.results import Results
    from harness.results.baseline import save_baseline

    results = Results.open(args.results, allow_incomplete=args.allow_incomplete, what="results")
    names = [x.strip() for v in args.retrievers for x in v.split(",") if x.strip()] if args.retrievers else None
    sys.stdout.write(save_baseline(results, args.to, retrievers=names, force=args.force, source=args.results))
    return 0
