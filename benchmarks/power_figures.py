"""Power figures of a results folder next to statsmodels, and the resampling check of normal theory.

For every retriever against the folder's baseline, on each metric asked for: n, the observed delta,
sd_diff, the harness's ``mde`` and ``n_for_observed`` (from ``results.json`` significance), the same
from statsmodels' ``TTestPower().solve_power`` (mde difference and n rounded up), and the share of
``--sets`` resampled query sets (real differences, centred, shifted to the mde) the harness's paired
t-test rejects: 0.80 where the noncentral t holds.

    python benchmarks/power_figures.py results/scifact --metrics ndcg@10 map@100 --sets 4000

No folder at hand: ``--bm25-variants DATA`` runs BM25 settings on a BEIR folder's test split instead
(no model needed) and reports each setting against the default.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from statsmodels.stats.power import TTestPower

from harness.results import Results
from harness.stats import power as pw

VARIANTS = {
    "k1 3.0 b 0.9": {"k1": 3.0, "b": 0.9},
    "k1 1.2 b 0.75": {"k1": 1.2, "b": 0.75},
    "no stemming": {"stemmer": None},
    "no stop words": {"stopwords": None},
}


def row(name: str, metric: str, d: np.ndarray, entry: dict | None, sets: int, alpha: float) -> str:
    sd = float(d.std(ddof=1))
    # results written before the power figures existed carry none: computed here as compare() would
    figures = entry if entry is not None and entry.get("mde") is not None else pw.figures(d, alpha)
    sm = TTestPower()
    sm_mde = sd * sm.solve_power(nobs=d.size, alpha=alpha, power=0.8)
    sm_n = math.ceil(sm.solve_power(effect_size=abs(d.mean()) / sd, alpha=alpha, power=0.8))
    rate = pw.simulate(d, figures["mde"], sets=sets, alpha=alpha, seed=0)
    return (
        f"| {name} | {metric} | {d.size} | {d.mean():+.4f} | {sd:.4f} | {figures['mde']:.4f} | "
        f"{abs(figures['mde'] - sm_mde):.1e} | {figures['n_for_observed']:,} | {sm_n:,} | {rate:.3f} |"
    )


HEADER = (
    "| comparison | metric | n | delta | sd_diff | mde | mde - statsmodels | n_for_observed | statsmodels n | "
    "simulated power at mde |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def from_folder(folder: str, metrics: list[str], sets: int) -> None:
    res = Results.load(folder)
    if res.baseline is None or not res.significance:
        raise SystemExit(f"{folder}: no baseline, so no comparison to plan from; set `baseline:` in its config")
    alpha = ((res.manifest.get("config") or {}).get("stats") or {}).get("alpha", 0.05)
    print(HEADER)
    for r, per in res.significance.items():
        for m in metrics:
            d = res.scores(r)[m] - res.scores(res.baseline)[m]
            print(row(f"{r} vs {res.baseline}", m, d[~np.isnan(d)], per[m].model_dump(), sets, alpha))


def from_variants(data: str, metrics: list[str], sets: int) -> None:
    from harness.datasets import load_dataset
    from harness.metrics import evaluate_run
    from retrievers.bm25 import BM25

    ds = load_dataset(data)

    def scores(**options):
        bm25 = BM25(show_progress=False, **options)
        bm25.index(ds.corpus)
        return evaluate_run(ds.qrels, bm25.search(ds.queries, k=100), metrics).values

    base = scores()
    print(HEADER)
    for name, options in VARIANTS.items():
        other = scores(**options)
        for m in metrics:
            print(row(f"bm25 {name} vs bm25", m, other[m] - base[m], None, sets, 0.05))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", help="a results folder with a baseline")
    p.add_argument("--metrics", nargs="+", default=["ndcg@10", "map@100"])
    p.add_argument("--sets", type=int, default=4000)
    p.add_argument("--bm25-variants", metavar="DATA", help="BEIR folder: BM25 settings against the default")
    args = p.parse_args()
    if args.bm25_variants:
        from_variants(args.bm25_variants, args.metrics, args.sets)
    else:
        from_folder(args.folder, args.metrics, args.sets)


if __name__ == "__main__":
    main()
