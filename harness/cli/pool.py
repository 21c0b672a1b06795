"""``harness pool DIR [DIR...] --depth 10 --out pool.csv``: the unjudged documents in any stored
run's top ``depth``, for judges to grade (docs/judging.md)."""

from __future__ import annotations

import argparse
import logging

from harness.cli.command import add_allow_incomplete, add_command

log = logging.getLogger("harness")


ABOUT = """list the unjudged documents in the retrievers' top k, to judge

Depth-k pooling over the stored runs of results folders (no retriever is run): for each judged
query, every document some retriever ranks in its top --depth that carries no judgment, with the
query and document text, who retrieved it and its best rank. Grade them with `harness judge serve`."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "pool", ABOUT)
    p.add_argument("folders", nargs="+", metavar="DIR", help="results folders (holding results.json and runs/)")
    p.add_argument("--depth", type=int, default=10, help="pool each run's top k (default 10)")
    p.add_argument("--max-per-query", type=int, metavar="N", help="at most N documents per query (best ranked first)")
    p.add_argument("--qrels", metavar="FILE", help="judgments to pool against (default: the folders' qrels.tsv)")
    p.add_argument("--out", required=True, metavar="FILE", help="pool file to write: .csv or .jsonl (must be new)")
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness.errors import InputError
    from harness.judging.pool import build_pool, write_pool
    from harness.suite import is_suite

    out = Path(args.out)
    if out.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("the pool file must end in .csv or .jsonl", field="--out")
    if out.exists():
        raise InputError("exists; the pool may hold grades already (choose a new file)", path=out, field="--out")
    for folder in args.folders:
        if is_suite(folder):  # one pool judges one dataset's documents
            raise InputError("a suite folder: pool one dataset's folder (DIR/<dataset>)", path=folder)
    rows = build_pool(
        args.folders,
        args.depth,
        max_per_query=args.max_per_query,
        qrels=args.qrels,
        allow_incomplete=args.allow_incomplete,
    )
    write_pool(out, rows)
    queries = len({r.query_id for r in rows})
    log.info("%d unjudged documents over %d queries (top %d) written to %s", len(rows), queries, args.depth, out)
    return 0
