"""``harness convert``: write any golden set the harness reads as a BEIR folder.

harness convert --corpus notes/ --golden questions.csv --out beir/
harness convert irds:beir/scifact/test --out scifact/
"""

from __future__ import annotations

import argparse
import sys

from harness import defaults
from harness.datasets import load_dataset, load_golden
from harness.errors import InputError
from harness.io.beir_write import write_beir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert",
        help="write a golden set (JSONL/CSV/Parquet/HF folder + corpus, irds: id, BEIR) as a BEIR folder",
        description=(
            "Write a dataset as a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv). Give either "
            "DATASET (demo, a BEIR folder, an irds: id) or --corpus and --golden."
        ),
    )
    p.add_argument("dataset", nargs="?", help="demo, a BEIR folder, or irds:ID (files already on disk)")
    p.add_argument("--corpus", help="JSONL {_id|id, text, title?}, Parquet, HF datasets folder, or folder of .txt/.md")
    p.add_argument("--golden", help="JSONL/CSV/TSV/Parquet/HF folder of question + relevant_ids and/or answers")
    p.add_argument("--out", required=True, help="output folder (must not hold a BEIR folder already)")
    p.add_argument("--split", default=None, help="split to read (BEIR, HF DatasetDict) and to write (default: test)")
    p.add_argument("--judge-by", choices=["auto", "ids", "answers"], default="auto", help="rows with ids and answers")
    p.add_argument("--corpus-format", choices=["jsonl", "csv", "tsv", "parquet", "hf", "text"], default=None)
    p.add_argument(
        "--golden-format",
        choices=["jsonl", "csv", "tsv", "parquet", "hf", "ragas"],
        default=None,
        help="ragas: a RAGAS EvaluationDataset (JSONL or CSV; no --corpus), written with its ranking as "
        "OUT/runs/ragas.trec (docs/nuggets.md)",
    )
    p.add_argument(
        "--keywords",
        choices=["resolve", "keep"],
        default="resolve",
        help="answer-judged queries: write their resolved judgments to qrels (resolve, any tool can score) "
        "or keep them as keywords judged by content (keep, harness only)",
    )
    p.add_argument(
        "--chunking",
        metavar="METHOD[:SIZE[:OVERLAP]]",
        default=None,
        help="write the chunked corpus (e.g. tokens:128:32, sentences:256, markdown:256) with chunk-level "
        "judgments (docs/chunking.md); chunks keep parent_id, start, end in their metadata",
    )
    p.set_defaults(func=run)


def parse_chunking_flag(value: str) -> dict:
    """``tokens:128:32`` -> ``{method: tokens, size: 128, overlap: 32}``."""
    parts = value.split(":")
    if len(parts) > 3 or not parts[0]:
        raise InputError(f"--chunking {value!r}: expected METHOD[:SIZE[:OVERLAP]], e.g. tokens:128:32")
    spec: dict = {"method": parts[0]}
    for key, text in zip(("size", "overlap"), parts[1:]):
        # ASCII digits only: int() would take "٣٢" (Arabic-Indic digits) as 32
        if not (text.isascii() and text.isdigit()):
            raise InputError(f"--chunking {value!r}: size and overlap are plain integers (0-9)")
        spec[key] = int(text)
    return spec


def run(args: argparse.Namespace) -> int:
    if args.golden_format == "ragas":
        if args.golden is None or args.corpus is not None or args.dataset is not None or args.chunking is not None:
            raise InputError("--golden-format ragas takes --golden FILE and --out alone", field="--golden-format")
        from harness.io.ragas import convert_ragas

        print(convert_ragas(args.golden, args.out, split=args.split), file=sys.stderr)
        return 0
    pair = args.corpus is not None or args.golden is not None
    if pair and args.dataset is not None:
        raise InputError("give either DATASET or --corpus and --golden, not both")
    if pair:
        if args.corpus is None or args.golden is None:
            raise InputError("--corpus and --golden go together")
        options = {k: getattr(args, k) for k in ("split", "judge_by", "corpus_format", "golden_format")}
        ds = load_golden(args.corpus, args.golden, **options)
    elif args.dataset is not None:
        ds = load_dataset(args.dataset, args.split or defaults.SPLIT)
    else:
        raise InputError("nothing to convert: give DATASET, or --corpus and --golden")
    if args.chunking is not None:
        from harness.chunking import chunk_corpus, chunk_dataset, make_chunker

        spec = parse_chunking_flag(args.chunking)
        try:
            chunker = make_chunker(spec)
        except InputError as e:
            raise InputError(f"{args.chunking!r}: {e.message}", field="--chunking") from None
        ds = chunk_dataset(ds, chunk_corpus(ds.corpus, chunker))
    out = write_beir(ds, args.out, keywords=args.keywords)
    n_judg = sum(len(v) for v in ds.qrels.values())
    print(
        f"wrote {out}: {len(ds.corpus)} documents, {len(ds.queries)} queries, {n_judg} judgments "
        f"(qrels/{ds.split}.tsv)",
        file=sys.stderr,
    )
    return 0
