"""``harness export DIR --to FORMAT --out OUT``: a results or suite folder in another tool's format
(:mod:`harness.export`): github-benchmark, mteb, ir-metadata, ranx."""

from __future__ import annotations

import argparse
import sys

from harness.cli.command import add_allow_incomplete, add_command

#: ``harness export --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """write a results folder in the formats other tools read

github-benchmark: github-action-benchmark's customBiggerIsBetter JSON (one file); mteb: MTEB's
results layout (OUT/<retriever>/<revision>/<Task>.json, model_meta.json); ir-metadata: the run files
with an ir_metadata block first; ranx: ranx's JSON runs and qrels. DIR is a results folder or a suite
folder; an incomplete folder or one whose run files changed is refused (exit 2) unless
--allow-incomplete. Prints every file written."""


def register(sub: argparse._SubParsersAction) -> None:
    from harness.export.command import FORMATS

    p = add_command(sub, "export", ABOUT)
    p.add_argument("folder", metavar="DIR", help="results folder or suite folder")
    p.add_argument("--to", required=True, choices=FORMATS, help="the format")
    p.add_argument("--out", required=True, metavar="OUT", help="a JSON file (github-benchmark) or a new folder")
    p.add_argument(
        "--repository",
        metavar="URL",
        help="ir-metadata: the source repository (default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY when set)",
    )
    p.add_argument("--actor", metavar="TEAM", help="ir-metadata: the team behind the runs")
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.export.command import ExportOptions, default_repository, export

    options = ExportOptions(
        folder=args.folder,
        to=args.to,
        out=args.out,
        allow_incomplete=args.allow_incomplete,
        repository=args.repository or default_repository(),
        actor=args.actor,
    )
    sys.stdout.write(export(options))
    return 0
