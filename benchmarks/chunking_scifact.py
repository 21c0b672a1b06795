"""Issue-14 figures from the chunking library alone (no engine wiring): SciFact's corpus chunked
``none`` / ``tokens-128-32`` / ``sentences-256``, BM25 (bm25s, the harness adapter) over the chunks,
the chunk ranking collapsed to documents and scored on the document qrels, plus chunk-level nDCG@10
(chunk qrels through parent ids), recall@512tok / precision@512tok and context precision/recall@5.

It also checks that the ``none`` row equals the unchunked BM25 run exactly, and times chunking twice
with one cache folder (the second reads the spans from the cache): wall seconds, CPU seconds in
parentheses (on a shared machine the CPU time is the steadier figure).

    python benchmarks/chunking_scifact.py --cache /tmp/chunk-cache
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=SCIFACT)
    ap.add_argument("--cache", type=Path, required=True, help="chunk cache folder (reused across runs)")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--budget", type=int, default=512)
    args = ap.parse_args()

    import numpy as np

    from harness import evaluate
    from harness.chunking import (
        chunk_corpus,
        chunk_level_qrels,
        collapse_to_documents,
        context_covers,
        make_chunker,
        token_counts,
    )
    from harness.datasets import load_dataset
    from harness.metrics.context import context_precision, context_recall, precision_at_tokens, recall_at_tokens
    from retrievers.bm25 import BM25

    ds = load_dataset(args.data, "test")
    print(f"{ds.name}: {len(ds.corpus)} documents, {len(ds.queries)} queries")
    base = BM25(show_progress=False)
    base.index(ds.corpus)
    unchunked = base.search(ds.queries, args.depth)
    doc_metrics = ["ndcg@10", "recall@100"]
    print(
        f"{'chunking':16} {'chunks':>7} {'chunk_s(cpu)':>13} {'cached_s(cpu)':>13} {'doc ndcg@10':>11} {'doc R@100':>9}"
        f" {'chunk ndcg@10':>13} {f'R@{args.budget}tok':>10} {f'P@{args.budget}tok':>10} {'ctxP@5':>7} {'ctxR@5':>7}"
    )
    for spec in (
        {"method": "none"},
        {"method": "tokens", "size": 128, "overlap": 32},
        {"method": "sentences", "size": 256},
    ):
        ch = make_chunker(spec)
        t0, c0 = time.perf_counter(), time.process_time()
        chunked = chunk_corpus(ds.corpus, ch, cache_dir=args.cache)
        first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        again = chunk_corpus(ds.corpus, ch, cache_dir=args.cache)
        second, second_cpu = time.perf_counter() - t0, time.process_time() - c0
        assert spec["method"] == "none" or again.cached
        bm25 = BM25(show_progress=False)
        bm25.index(chunked.corpus)
        run = bm25.search(ds.queries, args.depth)
        doc_run = collapse_to_documents(run, chunked, doc_ids=ds.doc_ids)
        doc = evaluate(ds.qrels, doc_run, doc_metrics)
        if spec["method"] == "none":
            same = evaluate(ds.qrels, unchunked, doc_metrics, per_query=True) == evaluate(
                ds.qrels, doc_run, doc_metrics, per_query=True
            )
            assert same, "chunking none differs from the unchunked run"
        chunk = evaluate(chunk_level_qrels(ds, chunked), run, ["ndcg@10"])
        tokens = token_counts(chunked.corpus)
        _, toks, covers = context_covers(run, ds, chunked, tokens)
        r = np.mean(recall_at_tokens(toks, covers, args.budget))
        p = np.mean(precision_at_tokens(toks, covers, args.budget))
        cp, cr = np.mean(context_precision(covers, 5)), np.mean(context_recall(covers, 5))
        print(
            f"{ch.name:16} {len(chunked):7d} {first:6.2f}({first_cpu:5.2f}) {second:6.2f}({second_cpu:5.2f})"
            f" {doc['ndcg@10']:11.4f} {doc['recall@100']:9.4f}"
            f" {chunk['ndcg@10']:13.4f} {r:10.4f} {p:10.4f} {cp:7.4f} {cr:7.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
