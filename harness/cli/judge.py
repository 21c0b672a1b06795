"""``harness judge serve POOL``: grade a pool on a local page; ``harness judge merge POOL --qrels Q
--out Q2``: the old judgments plus the new grades (docs/judging.md)."""

from __future__ import annotations

import argparse
import logging
import sys

from harness.cli.command import add_command, serve_until_interrupted

log = logging.getLogger("harness")


ABOUT = """grade a pool on a local page (serve), or merge its grades into qrels (merge)

Grow the judgments: `serve` grades a pool file in the browser, one document at a time, saving each
grade as it is made; `merge` writes the old judgments plus the new grades to a new qrels file.
`auto` fills a pool with an automatic judge's grades, `agree` measures a judge against people, and
`sample` draws the queries people grade in full for prediction-powered intervals."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "judge", ABOUT)
    jsub = p.add_subparsers(dest="judge_command", metavar="ACTION")
    s = jsub.add_parser("serve", help="a page on 127.0.0.1 to grade the pool (keys 0-3, Backspace undoes)")
    s.add_argument("pool", metavar="POOL", help="pool file from `harness pool` (.csv or .jsonl); grades go into it")
    s.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")
    from harness.cli.judge_tools import add_order_arguments

    add_order_arguments(s)
    s.set_defaults(func=serve)
    m = jsub.add_parser("merge", help="the old judgments plus the pool's grades, written to a new file")
    m.add_argument("pool", metavar="POOL", help="graded pool file")
    m.add_argument("--qrels", required=True, help="the judgments the pool was made against (never modified)")
    m.add_argument("--out", required=True, help="new qrels file to write (TREC format), plus OUT.provenance.json")
    m.set_defaults(func=merge)
    from harness.cli.judge_tools import register_tools

    register_tools(jsub)  # agree, sample, auto (automatic judges checked against people)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def serve(args: argparse.Namespace) -> int:
    import os

    from harness.errors import InputError
    from harness.judging.server import Judging, make_server, page_url

    if not 0 <= args.port <= 65535:
        raise InputError("must be 0..65535", field="--port")
    judging = Judging(args.pool)  # takes the pool's lock: one server per pool
    try:
        from harness.cli.judge_tools import apply_order

        apply_order(args, judging)  # --order: disagreement-first or random (docs/judging.md)
        try:
            server = make_server(judging, args.port)
        except OSError as e:
            raise InputError(f"cannot listen on 127.0.0.1:{args.port} ({e.strerror or e})", field="--port") from None
        url = page_url(server, judging)
        judging.lock.describe(f"pid {os.getpid()}, http://127.0.0.1:{server.server_address[1]}/")
        print(
            f"judging {len(judging.rows)} documents ({judging.graded} graded) at {url} "
            f"- each grade is saved to {args.pool} as it is made; Ctrl-C stops",
            flush=True,
        )
        serve_until_interrupted(server)
    finally:
        judging.close()
    print(f"{judging.graded} of {len(judging.rows)} graded, saved in {args.pool}", file=sys.stderr)
    return 0


def merge(args: argparse.Namespace) -> int:
    from harness.judging.merge import check_out, provenance_path, write_merged
    from harness.judging.merge import merge as do_merge

    check_out(args.qrels, args.out)
    merged = do_merge(args.pool, args.qrels)
    out = write_merged(merged, args.qrels, args.out)
    log.info(
        "%s: %d judgments from %s plus %d new (%d already judged alike, %d left ungraded); provenance in %s",
        out,
        merged.provenance["qrels"]["judgments"],
        args.qrels,
        merged.added,
        merged.already,
        merged.ungraded,
        provenance_path(out).name,
    )
    return 0
