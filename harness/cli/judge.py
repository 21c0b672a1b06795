"""``harness judge serve POOL``: grade a pool on a local page; ``harness judge merge POOL --qrels Q
--out Q2``: the old judgments plus the new grades (docs/judging.md)."""

from __future__ import annotations

import argparse
import logging
import sys

from harness.cli.command import add_command

log = logging.getLogger("harness")


ABOUT = """grade a pool: on a page (serve), by a judge (auto), merge into qrels (merge), agree, sample, status

Grow the judgments: `serve` grades a pool file in the browser, one document at a time, saving each
grade as it is made; `merge` writes the old judgments plus the new grades to a new qrels file.
`auto` fills a pool with an automatic judge's grades, `agree` measures a judge against people,
`sample` draws the queries people grade in full for prediction-powered intervals (`--active`: where
the judge is unsure), and `status` says when to stop grading."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "judge", ABOUT)
    jsub = p.add_subparsers(dest="judge_command", metavar="ACTION")
    s = jsub.add_parser("serve", help="a page on 127.0.0.1 to grade the pool (keys 0-3, Backspace undoes)")
    s.add_argument("pool", metavar="POOL", help="pool file from `harness pool` (.csv or .jsonl); grades go into it")
    s.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")
    s.add_argument(
        "--order", choices=["pool", "disagreement", "random"], default="pool",
        help="pool: the file's order; disagreement: where --against grades differ most first (people's "
        "grades the judge disputes come back); random: a seeded shuffle, for a calibration sample",
    )  # fmt: skip
    s.add_argument(
        "--against", action="append", metavar="GRADES", default=[],
        help="with --order disagreement: a judge's grade file or qrels (twice: two judges, on ungraded pairs)",
    )  # fmt: skip
    s.add_argument("--seed", type=int, default=0, help="with --order random: the seed (default 0)")
    s.set_defaults(func=serve)
    m = jsub.add_parser("merge", help="the old judgments plus the pool's grades, written to a new file")
    m.add_argument("pool", metavar="POOL", help="graded pool file")
    m.add_argument("--qrels", help="the judgments the pool was made against (never modified; none: a first round)")
    m.add_argument("--out", required=True, help="new qrels file to write (TREC format), plus OUT.provenance.json")
    m.set_defaults(func=merge)
    from harness.cli.judge_tools import register_tools

    register_tools(jsub)  # agree, sample, auto (automatic judges checked against people)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def serve(args: argparse.Namespace) -> int:
    from harness.judging.server import open_page
    from harness.results.page.serve import serve_until_interrupted

    judging, server, url = open_page(args.pool, args.port, args.order, args.against, args.seed)
    try:
        print(f"judging {len(judging.rows)} documents ({judging.graded} graded) at {url} - each grade is saved "
              f"to {args.pool} as it is made; Ctrl-C stops", flush=True)  # fmt: skip
        serve_until_interrupted(server)
    finally:
        judging.close()
    print(f"{judging.graded} of {len(judging.rows)} graded, saved in {args.pool}", file=sys.stderr)
    return 0


def merge(args: argparse.Namespace) -> int:
    from harness.judging.merge import merge_line

    log.info("%s", merge_line(args.pool, args.qrels, args.out))
    return 0
