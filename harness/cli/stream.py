"""``harness stream --config C --out DIR [--runbook FILE]``: quality while the index changes
(docs/streaming.md)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness.cli.command import add_command

log = logging.getLogger("harness")

ABOUT = """score retrievers while documents are inserted, deleted and updated (a report.html of it)

Plays a runbook of writes (drawn from the config's `stream:` section, or --runbook) against each
retriever through its add/delete/update, and at every checkpoint scores it on the documents visible
then beside an exact index of the same documents, with time to retrievable, ghost and stale hits,
blinks, write rate (cold or warm embedding cache, encoding apart) and search latency while writing.
Writes DIR/runbook.jsonl, DIR/runs/, DIR/stream.json and DIR/report.html (the charts, open it in a
browser); `harness report DIR` prints the tables again."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "stream", ABOUT)
    p.add_argument("--config", required=True, help="YAML run config (its `stream:` section is read)")
    p.add_argument("--out", required=True, help="new or empty folder for runbook.jsonl, runs/ and stream.json")
    p.add_argument("--runbook", help="replay this runbook.jsonl instead of drawing one (ids checked first)")
    p.add_argument("--no-progress", action="store_true", help="no progress display (per retriever, step, encode)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness import progress
    from harness.stream import StreamOptions, failures, run_stream, to_text

    opts = StreamOptions(
        config=Path(args.config), out=Path(args.out), runbook=Path(args.runbook) if args.runbook else None,
        progress=not args.no_progress,
    )  # fmt: skip
    # a terminal gets a live line, a log timestamped lines with a heartbeat: a stream takes minutes
    with progress.session(sys.stderr, enabled=opts.progress):
        doc = run_stream(opts)
    sys.stdout.write(to_text(doc))
    log.info("wrote %s: the page is %s", opts.out, opts.out / "report.html")
    failed = failures(doc)
    for name, error in failed.items():  # as harness run: the other rows are written, exit 1
        print(f"error: retriever {name!r} failed: {error}", file=sys.stderr)
    return 1 if failed else 0
