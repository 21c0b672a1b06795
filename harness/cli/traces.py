"""``harness traces import SPANS... --out DIR``: production retrieval spans (OpenTelemetry) as a
BEIR-layout folder with the production run and traffic counts (docs/traces.md)."""

from __future__ import annotations

import argparse
import sys

from harness.cli.command import add_command

ABOUT = """production retrieval spans as a golden set (import), and what to grade of it (pool)

`import` reads OpenTelemetry spans (OTLP JSON lines as the Collector's file exporter writes them,
OTLP protobuf, Phoenix/OpenInference JSONL) in the GenAI or OpenInference conventions, and writes
queries.jsonl (one per distinct query, with its count), corpus.jsonl, runs/production.trec and
traces.json. Judge it (pool, judge serve, judge auto), then weigh every figure by traffic with
`dataset: {path: DIR, weights: count}`."""


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "traces", ABOUT)
    tsub = p.add_subparsers(dest="traces_command", metavar="ACTION")
    i = tsub.add_parser("import", help="spans -> queries.jsonl, corpus.jsonl, runs/production.trec, traces.json")
    i.add_argument("spans", nargs="+", metavar="SPANS", help="span files (.jsonl/.json: OTLP JSON or Phoenix; .pb)")
    i.add_argument("--out", required=True, help="new folder to write (refused if it exists)")
    i.add_argument("--corpus", help="the team's corpus (BEIR folder or corpus.jsonl); every ranked id is checked")
    i.add_argument("--since", help="spans starting at or after this time (ISO 8601 or unix seconds)")
    i.add_argument("--until", help="spans starting at or before this time")
    i.add_argument("--service", action="append", default=[], help="only this service.name (repeatable)")
    i.add_argument("--data-source", action="append", default=[], help="only this gen_ai.data_source.id (repeatable)")
    i.add_argument("--sample", type=int, metavar="N", help="N queries, stratified by how often they were asked")
    i.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    i.add_argument("--min-count", type=int, default=1, metavar="N", help="queries asked at least N times")
    i.add_argument("--redact", type=_csv, default=[], metavar="KINDS",
                   help="email,phone,card,key: replaced before anything is written")  # fmt: skip
    i.add_argument("--max-spans", type=int, metavar="N", help="read at most N spans")
    i.add_argument("--no-progress", action="store_true", help="no progress display")
    i.set_defaults(func=import_)
    p2 = tsub.add_parser("pool", help="production's and candidates' top k of every query, to grade (a pool file)")
    p2.add_argument("folder", metavar="DIR", help="a folder `harness traces import` wrote")
    p2.add_argument(
        "--run", action="append", default=[], metavar="NAME=FILE", help="a candidate's TREC run (repeatable)"
    )
    p2.add_argument("--depth", type=int, default=10, help="pool each run's top k (default 10)")
    p2.add_argument("--max-per-query", type=int, metavar="N", help="at most N documents per query (best ranked first)")
    p2.add_argument("--qrels", metavar="FILE", help="judgments already made: their pairs are not pooled again")
    p2.add_argument("--out", required=True, metavar="FILE", help="pool file to write: .csv or .jsonl (must be new)")
    p2.set_defaults(func=pool)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def pool(args: argparse.Namespace) -> int:
    from harness.errors import InputError
    from harness.traces.pool import pool_traces

    runs = {}
    for item in args.run:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"{item!r}: give NAME=FILE", field="--run")
        runs[name] = path
    rows = pool_traces(args.folder, runs, args.out, depth=args.depth, max_per_query=args.max_per_query,
                       qrels=args.qrels)  # fmt: skip
    print(f"{args.out}: {len(rows)} documents to grade over {len({r.query_id for r in rows})} queries")
    return 0


def import_(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from harness.errors import InputError
    from harness.traces import ImportOptions, import_traces

    try:
        options = ImportOptions(
            spans=args.spans, out=args.out, corpus=args.corpus, since=args.since, until=args.until,
            services=args.service, data_sources=args.data_source, sample=args.sample, seed=args.seed,
            min_count=args.min_count, redact=args.redact, max_spans=args.max_spans,
        )  # fmt: skip
    except ValidationError as e:
        err = e.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else None
        own = err["type"] == "value_error" and "error" in err.get("ctx", {})  # the options' own words, unprefixed
        raise InputError(str(err["ctx"]["error"]) if own else err["msg"], field=flag) from None
    report = import_traces(options, stream=sys.stderr, show_progress=False if args.no_progress else None)
    print(report.headline())
    return 0
