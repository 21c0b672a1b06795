"""What MMR buys and what it costs: nDCG@10 against ILD@10 for a sweep of lambda over dense retrieval.

    python benchmarks/mmr_sweep.py                      # SciFact test split from ../shared/data
    python benchmarks/mmr_sweep.py --dataset demo --out results/mmr_sweep_demo.png

One harness run (``harness.api.benchmark``): ``dense`` once, then one ``mmr`` stage per lambda on
top of it, so every row shares the same first stage. Prints the trade-off table (deltas against
dense with the paired randomization test's Holm-adjusted p), the harness comparison table, the time
``mmr_order`` takes for n=1000 candidates, k=100, and saves the trade-off curve as a PNG.
Set HARNESS_CACHE_DIR to reuse cached document embeddings.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.api import benchmark  # noqa: E402
from harness.io import atomic  # noqa: E402
from harness.mmr import mmr_order  # noqa: E402
from harness.results.table import to_markdown  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "data" / "scifact"
LAMBDAS = (0.3, 0.5, 0.7, 0.9, 1.0)
NDCG, ILD = "ndcg@10", "ild@10"


def time_mmr_order(n: int = 1000, k: int = 100, dim: int = 384, repeats: int = 30, seed: int = 0) -> dict[str, float]:
    """Median milliseconds of mmr_order on random unit vectors (cosine similarity), after a warm-up."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(n, dim))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    sim, rel = e @ e.T, rng.random(n)
    mmr_order(rel, sim, 0.5, k)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mmr_order(rel, sim, 0.5, k)
        times.append(time.perf_counter() - t0)
    return {"median_ms": 1000 * statistics.median(times), "min_ms": 1000 * min(times)}


def sweep(args: argparse.Namespace) -> tuple[list[dict[str, float]], str]:
    retrievers: dict[str, dict] = {"dense": {"type": "dense"}}
    for lam in args.lambdas:
        retrievers[f"dense_mmr_{lam:g}"] = {"type": "mmr", "of": "dense", "lambda": lam, "top_n": args.top_n}
    res = benchmark(
        args.dataset,
        retrievers,
        metrics=[NDCG, ILD],
        baseline="dense",
        split=args.split,
        latency_queries=args.latency_queries,
        show_progress=sys.stderr.isatty(),
    )
    if res.failures:
        raise SystemExit(f"failed: {res.failures}")
    base = res.summary["dense"]
    rows = [{"lambda": float("nan"), "name": "dense", NDCG: base[NDCG], ILD: base[ILD]}]
    for lam in args.lambdas:
        name = f"dense_mmr_{lam:g}"
        sig = res.significance.get(name, {})
        rows.append(
            {
                "lambda": lam,
                "name": name,
                NDCG: res.summary[name][NDCG],
                ILD: res.summary[name][ILD],
                "p_ndcg": sig.get(NDCG, {}).get("p_holm", float("nan")),
                "p_ild": sig.get(ILD, {}).get("p_holm", float("nan")),
                "p50_ms": res.efficiency[name].get("latency_ms_p50", float("nan")),
            }
        )
    return rows, to_markdown(res)


def print_tradeoff(rows: list[dict[str, float]]) -> None:
    base = rows[0]
    print(f"| retriever | lambda | {NDCG} | Δ {NDCG} | p (Holm) | {ILD} | Δ {ILD} | p (Holm) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["name"] == "dense":
            print(f"| dense | – | {r[NDCG]:.4f} | – | – | {r[ILD]:.4f} | – | – |")
            continue
        print(
            f"| {r['name']} | {r['lambda']:g} | {r[NDCG]:.4f} | {r[NDCG] - base[NDCG]:+.4f} | {r['p_ndcg']:.3g} "
            f"| {r[ILD]:.4f} | {r[ILD] - base[ILD]:+.4f} | {r['p_ild']:.3g} |"
        )


def plot(rows: list[dict[str, float]], out: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mmr = [r for r in rows if r["name"] != "dense"]
    fig, ax = plt.subplots(figsize=(6, 4.2), dpi=120)
    ax.plot([r[ILD] for r in mmr], [r[NDCG] for r in mmr], "o-", color="tab:blue", label="dense + MMR")
    for r in mmr:
        ax.annotate(f"λ={r['lambda']:g}", (r[ILD], r[NDCG]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.plot([rows[0][ILD]], [rows[0][NDCG]], "s", color="tab:red", label="dense")
    ax.set_xlabel("ILD@10 (mean pairwise 1 - cosine, higher = more diverse)")
    ax.set_ylabel("nDCG@10")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return atomic.write_bytes(out, buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="BEIR folder or 'demo' (default: SciFact)")
    p.add_argument("--split", default="test")
    p.add_argument("--lambdas", type=lambda s: [float(x) for x in s.split(",")], default=list(LAMBDAS))
    p.add_argument("--top-n", type=int, default=100, help="candidates MMR re-orders (default 100)")
    p.add_argument("--latency-queries", type=int, default=20, help="queries timed one at a time per retriever")
    p.add_argument("--out", default="results/mmr_sweep.png", help="PNG of the trade-off curve")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    timing = time_mmr_order()
    print(
        f"mmr_order, n=1000 candidates, k=100 picks: median {timing['median_ms']:.2f} ms "
        f"(min {timing['min_ms']:.2f} ms)\n"
    )
    t0 = time.perf_counter()
    rows, table = sweep(args)
    name = Path(args.dataset).name if args.dataset != "demo" else "demo"
    print(f"MMR over dense on {name} ({args.split}), top_n={args.top_n}, relevance = query-document cosine\n")
    print_tradeoff(rows)
    print("\nHarness comparison table (baseline dense):\n")
    print(table)
    out = plot(rows, Path(args.out), f"MMR over dense, {name}: nDCG@10 vs ILD@10")
    print(f"plot: {out}   ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
