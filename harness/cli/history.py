"""``harness history FILE.jsonl --out DIR``: trend plots and a page from ``harness check --history``.

Writes ``DIR/trend-<metric>.png`` (one line per retriever, the baseline and its tolerance band, failed
nights marked) and ``DIR/index.html`` (every plot and a table of nights). Lines cut short in the
history are skipped with a warning naming their line; a file that is not a history is bad input.
"""

from __future__ import annotations

import argparse
import logging

from harness.cli.command import add_command
from harness.gate import history, trend

log = logging.getLogger("harness")


#: ``harness history --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """plot the nightly history written by `harness check --history` (PNG per metric, HTML page)

Render a trend PNG per metric (one line per retriever, baseline and tolerance band,
failed nights in red) and an HTML page with the plots and a table of nights."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "history", ABOUT)
    p.add_argument("file", metavar="FILE.jsonl", help="history file written by `harness check --history`")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for index.html and the trend PNGs")
    p.add_argument("--metrics", action="append", help="metrics to plot, comma-separated (default: all)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    hist = history.read(args.file)
    for line, why in hist.skipped:
        log.warning(f"{args.file}:{line}: skipped: {why}")
    metrics = [x.strip() for v in args.metrics for x in v.split(",") if x.strip()] if args.metrics else None
    files = trend.render(hist, args.out, source=args.file, metrics=metrics)
    failed = sum(n.get("verdict") != "pass" for n in hist.nights)
    print(f"{len(hist.nights)} nights ({failed} failed or not checked): wrote {len(files) - 1} plot(s) and {files[-1]}")
    return 0
