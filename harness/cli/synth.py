"""``harness synth generate --dataset D --out OUT``: a synthetic golden set from a corpus;
``harness synth bias OUT``: how far to trust it (docs/synth.md)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from harness.cli.command import add_allow_incomplete, add_command

log = logging.getLogger("harness")

ABOUT = """generate a golden set from a corpus (generate), and measure its bias (bias)

`generate` draws documents (seeded, stratified by length, one per duplicate group), asks an
OpenAI-compatible endpoint (or extracts a sentence, the biased baseline) for questions, filters
them and writes a BEIR folder with synth.json. `bias` says how many questions BM25 solves at rank 1,
how many words they share with their source, and, beside a human set, whether it would pick the
same retriever."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "synth", ABOUT)
    ssub = p.add_subparsers(dest="synth_command", metavar="ACTION")
    g = ssub.add_parser("generate", help="a BEIR folder of generated questions (plus synth.json)")
    g.add_argument("--dataset", required=True, help="demo, or a folder holding corpus.jsonl (BEIR)")
    g.add_argument("--out", required=True, help="new folder to write (refused if it exists)")
    g.add_argument("--queries", type=int, required=True, metavar="N", help="source documents to draw")
    g.add_argument("--per-doc", type=int, default=1, metavar="K", help="questions per document (default 1)")
    g.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    g.add_argument("--strata", type=int, default=4, help="length strata of the draw (default 4: quartiles)")
    g.add_argument("--exclude-dataset", metavar="D2", help="a human set: documents in its qrels are not drawn")
    g.add_argument(
        "--generator",
        choices=["http", "extract"],
        default="http",
        help="http: an OpenAI-compatible endpoint; extract: a sentence of the document (no model)",
    )
    g.add_argument(
        "--style",
        choices=["question", "keyword", "paraphrase", "mixed"],
        default="question",
        help="how questions are asked (paraphrase: avoid the passage's words; mixed: in turn)",
    )
    g.add_argument("--model", help="http: the model name to ask for")
    from harness.cli.endpoint import add_endpoint_arguments

    add_endpoint_arguments(g, "document")  # the flags of judge auto --judge http
    g.add_argument(
        "--max-failed",
        type=float,
        default=0.2,
        metavar="F",
        help="share of documents whose replies may fail (left out, counted) before the run stops (default 0.2)",
    )
    g.add_argument("--drop-leaked", action="store_true", help="drop questions that stand verbatim in their source")
    g.add_argument("--max-overlap", type=float, metavar="F",
                   help="drop questions sharing more than F of their analysed words with their source")  # fmt: skip
    g.add_argument("--no-progress", action="store_true", help="no progress display")
    g.set_defaults(func=generate)
    b = ssub.add_parser("bias", help="the bias figures of a synthetic set (beside a human set)")
    b.add_argument("folder", metavar="OUT", help="a folder `harness synth generate` wrote")
    b.add_argument("--human", metavar="D", help="a human golden set over the same corpus (BEIR folder)")
    b.add_argument("--results", metavar="R_SYNTH", help="results folder of retrievers run over OUT")
    b.add_argument("--human-results", metavar="R_HUMAN", help="results folder of the same retrievers over D")
    b.add_argument("--metrics", help="with the results folders: comma-separated metrics (default: both folders')")
    add_allow_incomplete(b)
    b.add_argument("--format", choices=["text", "json"], default="text")
    b.set_defaults(func=bias)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def generate(args: argparse.Namespace) -> int:
    from harness.endpoint.client import EndpointStopped
    from harness.errors import InputError
    from harness.synth import generate as G
    from harness.synth.make import SynthSettings, check
    from harness.synth.make import generate as make
    from harness.synth.render import headline

    s = SynthSettings(
        queries=args.queries, seed=args.seed, per_doc=args.per_doc, style=args.style, generator=args.generator,
        strata=args.strata, exclude_dataset=args.exclude_dataset, drop_leaked=args.drop_leaked,
        max_overlap=args.max_overlap, max_failed=args.max_failed, model=args.model,
        temperature=args.temperature, max_tokens=args.max_tokens, concurrency=args.concurrency,
    )  # fmt: skip
    check(s)
    client = cache = None
    if args.generator == "http":
        from harness.cli.endpoint import endpoint_settings

        settings = endpoint_settings(args).check("--generator http")
        if not args.model:
            raise InputError("--generator http needs --model (the model name to ask for)", field="--model")
        client = settings.client(args.model)
        cache = G.reply_cache(client)
    try:
        prov = make(args.dataset, args.out, s, client=client, cache=cache, stream=sys.stderr,
                    show_progress=not args.no_progress)  # fmt: skip
    except EndpointStopped as e:
        raise InputError(f"stopped: {e}; replies received are kept in the reply cache", field="--url") from None
    finally:
        if client is not None:
            client.close()
    kept = sum(1 for q in prov["queries"] if q["kept"])
    filtered = ", ".join(f"{k} {v}" for k, v in prov["filtered"].items() if v) or "nothing"
    log.info(
        "%s: %d questions from %d documents (filtered: %s)", args.out, kept, len(prov["draw"]["documents"]), filtered
    )
    print(headline(prov["bias"]))
    return 0


def bias(args: argparse.Namespace) -> int:
    from harness.datasets import load_dataset
    from harness.errors import InputError
    from harness.synth.bias import report
    from harness.synth.folder import read_synth, write_bias
    from harness.synth.render import render

    synth = read_synth(args.folder)
    if bool(args.results) != bool(args.human_results):
        raise InputError("--results and --human-results go together", field="--results")
    if args.metrics and not args.results:
        raise InputError("--metrics needs --results and --human-results", field="--metrics")
    results = None
    if args.results:
        from harness.results import Results

        # read as every command reads a results folder: whole, its run files as the run wrote them
        allow = args.allow_incomplete
        results = (
            Results.open(args.results, allow_incomplete=allow, what="--results"),
            Results.open(args.human_results, allow_incomplete=allow, what="--human-results"),
        )
    dataset = load_dataset(args.folder)
    human = load_dataset(args.human) if args.human else None
    if results is not None:
        from harness.synth.bias import check_results

        check_results(results, dataset, human)  # each folder against the set it claims, --human or not
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    out = report(dataset, synth, human=human, results=results, metrics=metrics)
    from pathlib import Path

    write_bias(Path(args.folder), out)  # report.html of a run over the set shows them
    if args.format == "json":
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
    else:
        sys.stdout.write(render(out))
    return 0
