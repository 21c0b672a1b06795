"""Statistics speed: ``harness.stats.compare`` on 10k queries x 10 retrievers x 5 metrics.

What a comparison table costs: a percentile bootstrap CI (1,000 resamples) for every retriever x
metric mean (50) and every paired difference to the baseline (45), a two-sided paired randomization
test (10,000 sign flips) for each difference, the paired t-test, Holm over the table. Every interval
shares one seeded resample (``harness.stats.tests.bootstrap_cis``), as the randomization tests share
one sign matrix.

``--reference`` also times what main did before (a seeded gather per interval: 95 redraws of the
same resample) on the same data and prints the ratio and the largest difference between the two
sets of intervals (same draws; only the order of summation differs).

Synthetic data (seeded): a base per-query score in [0, 1], each retriever a noisy shift of it; two of
the five metrics are 0/1 per query (as hit_rate@k), so ties and repeated values are realistic.

The first ``import scipy.stats`` (for the t-test) is timed apart: 0.5 s on an idle machine, 10 s on a
loaded one, and paid once per process by whatever imports it first.

Usage: python benchmarks/stats_speed.py [--queries 10000] [--retrievers 10] [--metrics 5]
       [--bootstrap 1000] [--permutations 10000] [--repeat 1] [--reference]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from harness.stats import compare


def synthetic(queries: int, retrievers: int, metrics: int, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    base = rng.random((metrics, queries))
    out: dict[str, dict[str, np.ndarray]] = {}
    for r in range(retrievers):
        shift = rng.normal(0, 0.02)
        values = {}
        for m in range(metrics):
            v = np.clip(base[m] + shift + rng.normal(0, 0.1, queries), 0, 1)
            values[f"m{m}"] = (v > 0.5).astype(np.float64) if m < 2 else v
        out[f"r{r}"] = values
    return out


def reference_intervals(values, baseline: str, n: int, seed: int) -> dict[tuple[str, str, str], tuple[float, float]]:
    """The pre-change bootstrap: one gather per interval, each redrawing the same seeded resample."""

    def ci(x: np.ndarray) -> tuple[float, float]:
        rng = np.random.default_rng(seed)
        means = np.empty(n)
        block = max(1, 2**22 // x.size)
        for start in range(0, n, block):
            stop = min(n, start + block)
            means[start:stop] = x[rng.integers(0, x.size, size=(stop - start, x.size))].mean(axis=1)
        lo, hi = np.quantile(means, [0.025, 0.975])
        return float(lo), float(hi)

    out = {}
    for r, ms in values.items():
        for m, v in ms.items():
            out[("interval", r, m)] = ci(v)
            if r != baseline:
                out[("delta", r, m)] = ci(v - values[baseline][m])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--retrievers", type=int, default=10)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--permutations", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--reference", action="store_true", help="also time the pre-change per-interval bootstrap")
    args = ap.parse_args()

    t0 = time.perf_counter()
    import scipy.stats  # noqa: F401  (the t-test's; a one-time import, not statistics: timed apart)

    print(f"import scipy.stats (once per process, not in the figure below): {time.perf_counter() - t0:.2f} s")
    values = synthetic(args.queries, args.retrievers, args.metrics)
    qids = [f"q{i:06d}" for i in range(args.queries)]
    n_ci = args.retrievers * args.metrics + (args.retrievers - 1) * args.metrics
    print(
        f"{args.queries:,} queries x {args.retrievers} retrievers x {args.metrics} metrics: {n_ci} bootstrap "
        f"intervals ({args.bootstrap} resamples), {(args.retrievers - 1) * args.metrics} randomization tests "
        f"({args.permutations:,} flips)"
    )
    best, best_cpu = float("inf"), float("inf")
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        sig, ci = compare(
            values, "r0", seed=0, bootstrap=args.bootstrap, permutations=args.permutations, query_ids=qids
        )
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"harness.stats.compare: {best:.2f} s wall, {best_cpu:.2f} s CPU (all threads), best of {args.repeat}; "
        f"load average {load:.1f} on {os.cpu_count()} cores"
    )
    if args.reference:
        t0 = time.perf_counter()
        # compare sorts queries by id; these ids are already sorted, so the arrays are the same
        ref = reference_intervals(values, "r0", args.bootstrap, 0)
        t_ref = time.perf_counter() - t0
        diff = 0.0
        for (kind, r, m), (lo, hi) in ref.items():
            got = ci[r][m] if kind == "interval" else [sig[r][m]["ci_low"], sig[r][m]["ci_high"]]
            diff = max(diff, abs(got[0] - lo), abs(got[1] - hi))
        print(f"pre-change bootstrap alone (95 gathers): {t_ref:.2f} s; compare is {t_ref / best:.1f}x faster")
        print(f"largest difference between the two sets of intervals: {diff:.1e}")


if __name__ == "__main__":
    main()
