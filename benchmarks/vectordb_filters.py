"""Filtered search on SciFact: every engine, bm25 and dense on one golden set with per-query filters.

    HARNESS_CACHE_DIR=... python benchmarks/vectordb_filters.py [--dataset ../shared/data/scifact]

SciFact has no document metadata, so this script gives each document two fields derived from its id
(seeded, reproducible): ``shard`` (an integer 0..9) and ``lane`` (``a``/``b``), and each test query a
filter that admits its first relevant document: a third ``{shard: s}`` (10% of the corpus), a third
``{shard: {in: [s, s+1, s+2]}, lane: l}`` (~15%), a third ``{shard: {gte: s-2, lte: s+2}}`` (~50%).
One ``harness.api.benchmark`` run; prints the comparison table, then per retriever how many returned
documents violate their query's filter (must be 0) and ``ann_recall@100`` against exact filtered
search over the same embeddings.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.api import benchmark  # noqa: E402
from harness.datasets import load_dataset  # noqa: E402
from harness.filters import query_filter  # noqa: E402
from harness.model import Document, GoldenDataset, Query  # noqa: E402


def _h(s: str) -> int:
    return int(hashlib.sha256(s.encode()).hexdigest()[:8], 16)


def filtered(ds: GoldenDataset) -> GoldenDataset:
    meta = {d: {"shard": _h(d) % 10, "lane": "ab"[_h("lane" + d) % 2]} for d in ds.corpus.ids.tolist()}
    docs = [Document(id=d.id, title=d.title, text=d.text, metadata=meta[d.id]) for d in ds.corpus]
    queries = []
    for i, q in enumerate(ds.queries):
        rel = sorted(d for d, g in ds.qrels[q.id].items() if g > 0 and d in meta)
        if not rel:
            queries.append(q)
            continue
        s, lane = meta[rel[0]]["shard"], meta[rel[0]]["lane"]
        flt = [
            {"shard": s},
            {"shard": {"in": [s, (s + 1) % 10, (s + 2) % 10]}, "lane": lane},
            {"shard": {"gte": s - 2, "lte": s + 2}},
        ][i % 3]
        queries.append(Query(id=q.id, text=q.text, metadata={**q.metadata, "filter": flt}))
    return GoldenDataset.build(ds.name + "-filtered", docs, queries, ds.qrels, split=ds.split)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(REPO.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--only", help="comma-separated retriever names to run (default: all)")
    args = ap.parse_args()
    ds = filtered(load_dataset(args.dataset, args.split))
    specs = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "dense_hnsw": {"type": "dense", "index": "hnsw"},
        "lancedb": {"type": "lancedb"},
        "lancedb_hnsw": {"type": "lancedb", "index": "hnsw"},
        "pgvector": {"type": "pgvector"},
        "pgvector_hnsw": {"type": "pgvector", "index": "hnsw"},
        # pgvector filters the rows its HNSW scan yields (no iterative scan before 0.8): a larger
        # ef_search yields more rows for the filter to keep
        "pgvector_hnsw_ef1000": {"type": "pgvector", "index": "hnsw", "search_params": {"ef_search": 1000}},
        "qdrant": {"type": "qdrant"},
        "chroma": {"type": "chroma"},
    }
    if args.only:
        specs = {k: v for k, v in specs.items() if k in args.only.split(",")}
    res = benchmark(
        ds,
        specs,
        metrics=["ndcg@10", "recall@100"],
        baseline="dense" if "dense" in specs else None,
        latency_queries=100,
    )
    print(res.table())
    meta = {d.id: d.metadata for d in ds.corpus}
    print("| retriever | returned docs | filter violations | ann_recall@100 |\n|---|---:|---:|---:|")
    for name, run in res.runs.items():
        n = bad = 0
        for q in ds.queries:
            f = query_filter(q)
            for d, _ in run.ranking(q.id):
                n += 1
                bad += f is not None and not f.matches(meta[d])
        recall = res.efficiency[name].get("ann_recall@100")
        print(f"| {name} | {n} | {bad} | {'–' if recall is None else f'{recall:.4f}'} |")


if __name__ == "__main__":
    main()
