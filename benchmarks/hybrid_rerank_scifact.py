"""The hybrid and rerank figures on SciFact test: BM25, dense, their fusions, and a trained cross-encoder
reranking the RRF hybrid's top 100 (alone and interpolated).

    HF_HUB_OFFLINE=1 HARNESS_CACHE_DIR=/work/cache python benchmarks/hybrid_rerank_scifact.py \
        --model /work/models/scifact-reranker

The reranker comes from ``harness train-reranker --dataset ../shared/data/scifact --split train``;
``--interpolate`` defaults to the alpha its held-out queries recommended (``training.json``), so
nothing here is tuned on the test queries. Encoding SciFact's corpus takes minutes on 2 cores the
first time; the embedding and pair-score caches make later runs fast (latency is never cached).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = {"bm25": 0.676, "dense": 0.645, "hybrid": 0.714}


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from harness.api import benchmark
    from retrievers.rerank import default_reranker

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "scifact"))
    p.add_argument("--split", default="test")
    p.add_argument("--model", default=None, help="reranker folder (default: the reranker found offline)")
    p.add_argument("--interpolate", type=float, default=None, help="alpha (default: training.json's recommendation)")
    p.add_argument("--top-n", type=int, default=100)
    p.add_argument("--latency-queries", type=int, default=20, help="queries timed one by one (each reranks top-n)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--baseline", default="bm25", help="retriever the paired tests compare against")
    args = p.parse_args()

    model = args.model or default_reranker()
    retrievers: dict = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "hybrid": {"type": "hybrid", "of": ["bm25", "dense"], "fusion": "rrf"},
        "hybrid_w": {"type": "hybrid", "of": ["bm25", "dense"], "fusion": "weighted", "weights": [0.5, 0.5]},
    }
    alpha, trained = args.interpolate, None
    if model is not None:
        info = Path(model) / "training.json"
        trained = json.loads(info.read_text()) if info.is_file() else None
        if alpha is None and trained:
            alpha = trained.get("recommended_interpolate")
        rr = {"type": "rerank", "of": "hybrid", "model": str(model), "top_n": args.top_n, "threads": args.threads}
        retrievers["hybrid_rerank"] = rr
        if alpha is not None:
            retrievers["hybrid_rerank_blend"] = {**rr, "interpolate": alpha}
    else:
        print("no reranker found (train one: harness train-reranker --dataset ../shared/data/scifact --split train)")

    results = benchmark(
        args.data,
        retrievers,
        metrics=["ndcg@10", "recall@100", "mrr@10"],
        baseline=args.baseline,
        split=args.split,
        latency_queries=args.latency_queries,
        warmup_queries=2,
        show_progress=True,
    )
    for name, error in results.failures.items():
        print(f"FAILED {name}: {error}")
    print(f"\nSciFact {args.split}, {len(results.query_ids)} queries")
    print(f"{'retriever':<22}{'nDCG@10':>9}{'ref':>7}{'R@100':>8}{'MRR@10':>8}{'qps':>9}{'p50 ms':>9}{'index s':>9}")
    for name, s in results.summary.items():
        e = results.efficiency[name]
        ref = f"{REFERENCE[name]:.3f}" if name in REFERENCE else ""
        print(
            f"{name:<22}{s['ndcg@10']:>9.4f}{ref:>7}{s['recall@100']:>8.4f}{s['mrr@10']:>8.4f}"
            f"{e['qps'] or 0:>9.1f}{e['latency_ms_p50'] or 0:>9.1f}{e['index_seconds']:>9.1f}"
        )
    sig = results.significance or {}
    for name, by_metric in sig.items():
        d = by_metric.get("ndcg@10")
        if d:
            print(
                f"{name} vs {args.baseline}, nDCG@10: delta {d['delta']:+.4f} "
                f"[{d['ci_low']:+.4f}, {d['ci_high']:+.4f}], "
                f"p {d['p_value']:.4f} (Holm {d['p_holm']:.4f}), W/T/L {d['wins']}/{d['ties']}/{d['losses']}"
            )
    if trained:
        t = trained["timings"]
        print(
            f"\nreranker {model}: trained {t['train_seconds'] / 60:.1f} min (+ validation "
            f"{t['validation_seconds'] / 60:.1f} min, total {t['total_seconds'] / 60:.1f} min) on "
            f"{trained['queries']['train']} queries, {trained['examples']['pairs']} pairs, best epoch "
            f"{trained['best_epoch']}; interpolate alpha {alpha} (from held-out queries)"
        )
    s = results.summary
    if {"bm25", "dense", "hybrid"} <= s.keys():
        ok = s["hybrid"]["ndcg@10"] > max(s["bm25"]["ndcg@10"], s["dense"]["ndcg@10"])
        print(f"hybrid > bm25 and dense: {'OK' if ok else 'FAIL'}")
    for name in ("hybrid_rerank", "hybrid_rerank_blend"):
        if name in s:
            v = s[name]["ndcg@10"]
            print(
                f"{name} >= bm25: {'OK' if v >= s['bm25']['ndcg@10'] else 'FAIL'}; "
                f">= hybrid: {'OK' if v >= s['hybrid']['ndcg@10'] else 'no'}"
            )
    return 1 if results.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
