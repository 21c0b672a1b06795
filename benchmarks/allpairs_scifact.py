"""All-pairs figures of a results folder checked against independent computations, and their speed.

For each metric asked for, over every retriever of the folder (``harness power DIR --all-pairs``'s
figures, from :func:`harness.stats.allpairs.all_pairs` with the command's defaults):

- the Tukey HSD's mse, every q and p against a direct two-way ANOVA (sums of squares with numpy,
  ``scipy.stats.studentized_range``): the largest absolute difference;
- the randomized Tukey HSD's p against an independent loop (one draw at a time, argsort of uniform
  keys) with ``--ref-draws`` draws: the largest absolute difference;
- the compact-letter rule over every pair (share-a-group iff not separated);
- the swap rate at each n against an independent simulation (``rng.choice`` per draw) with the same
  draws: the largest absolute difference;
- wall time of the vectorised randomized test against the loop, per 10,000 draws (a ratio measured in
  the same run).

    python benchmarks/allpairs_scifact.py results/scifact --metrics ndcg@10 map@100
"""

from __future__ import annotations

import argparse
import math
import time
from itertools import combinations

import numpy as np
from scipy.stats import studentized_range

from harness.results import Results
from harness.stats import allpairs as ap


def direct_anova(x: np.ndarray) -> tuple[float, int, list[tuple[float, float]]]:
    k, n = x.shape
    grand = x.mean()
    ss_res = ((x - grand) ** 2).sum() - n * ((x.mean(1) - grand) ** 2).sum() - k * ((x.mean(0) - grand) ** 2).sum()
    df = (k - 1) * (n - 1)
    mse = ss_res / df
    out = []
    for i, j in combinations(range(k), 2):
        q = abs(x[i].mean() - x[j].mean()) / math.sqrt(mse / n)
        out.append((q, float(studentized_range.sf(q, k, df))))
    return mse, df, out


def loop_randomized(x: np.ndarray, draws: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    k, n = x.shape
    rows, xt, best = np.arange(n)[:, None], x.T, np.empty(draws)
    for d in range(draws):
        means = xt[rows, rng.random((n, k)).argsort(axis=1)].mean(axis=0)
        best[d] = means.max() - means.min()
    m = x.mean(axis=1)
    return [float((best >= abs(m[i] - m[j]) - 1e-12).mean()) for i, j in combinations(range(k), 2)]


def loop_swaps(x: np.ndarray, n: int, draws: int, seed: int) -> float:
    """One draw at a time: a shuffled query order split into its first n and next n, and the upper
    triangle of the outer sign products."""
    rng = np.random.default_rng(seed)
    k, total = x.shape
    upper = np.triu_indices(k, 1)
    swaps = compared = 0.0
    for _ in range(draws):
        order = rng.permutation(total)
        a, b = x[:, order[:n]].mean(axis=1), x[:, order[n : 2 * n]].mean(axis=1)
        da, db = np.subtract.outer(a, a)[upper], np.subtract.outer(b, b)[upper]
        differs = np.abs(da) > 1e-12  # a tie on the first set: left out; on the second: half a swap
        tie_b = np.abs(db) <= 1e-12
        swaps += float(((da * db < 0) & ~tie_b & differs).sum() + 0.5 * (tie_b & differs).sum())
        compared += float(differs.sum())
    return swaps / compared if compared else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--metrics", nargs="+")
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--ref-draws", type=int, default=20_000)
    parser.add_argument("--swap-draws", type=int, default=1_000)
    args = parser.parse_args()
    res = Results.load(args.folder)
    names = [r for r in res.summary if r in res.per_query]
    for metric in args.metrics or res.metrics:
        x = np.vstack([res.scores(r)[metric] for r in names])
        t0 = time.perf_counter()
        f = ap.all_pairs(x, names, alpha=0.05, draws=args.draws, seed=0, swap_draws=args.swap_draws)
        t_all = time.perf_counter() - t0
        mse, df, direct = direct_anova(x)
        dq = max(abs((p.q or math.inf) - q) for p, (q, _) in zip(f.pairs, direct))
        dp = max(abs(p.p - pv) for p, (_, pv) in zip(f.pairs, direct))
        t0 = time.perf_counter()
        ref = loop_randomized(x, args.ref_draws, seed=12345)
        t_loop = (time.perf_counter() - t0) / args.ref_draws * 10_000
        t0 = time.perf_counter()
        ap.max_range_null(x, 10_000, 1)
        t_vec = time.perf_counter() - t0
        drand = max(abs(p.p_randomized - r) for p, r in zip(f.pairs, ref))
        separated = {frozenset((p.a, p.b)) for p in f.pairs if p.p_randomized < f.alpha}
        rule = all(
            any(a in g and b in g for g in f.groups) == (frozenset((a, b)) not in separated)
            for a, b in combinations(names, 2)
        )
        swaps = [(s.n, s.rate, loop_swaps(x, s.n, s.draws, seed=99)) for s in f.swap if s.rate is not None]
        print(f"\n{metric}: {len(names)} retrievers x {x.shape[1]} queries ({', '.join(names)})")
        print(f"  {ap.sentence(f)}")
        print(f"  tukey: mse {f.mse:.10g} (direct - ours {mse - f.mse:.1e}), df {f.df} (direct {df})")
        print(f"  max |q - direct| {dq:.1e}, max |p - direct| {dp:.1e}")
        print(f"  randomized ({f.draws:,} draws) vs independent loop ({args.ref_draws:,}): max |p - ref| {drand:.4f}")
        for p, r in zip(f.pairs, ref):
            print(
                f"    {p.a:>12} - {p.b:<12} delta {p.delta:+.4f}  p tukey {p.p:.4f}  "
                f"p rand {p.p_randomized:.4f}  ref {r:.4f}"
            )
        print(f"  groups {f.groups}; letter rule holds for every pair: {rule}")
        print(f"  discriminative power: {f.discriminative_power}; n_for_5pct: {f.n_for_5pct}")
        worst = max(abs(a - b) for _, a, b in swaps) if swaps else float("nan")
        print("  swap rate (n, ours, independent): " + ", ".join(f"({n}, {a:.3f}, {b:.3f})" for n, a, b in swaps))
        print(f"  max |swap - independent| {worst:.4f}")
        print(
            f"  time: all figures {t_all:.2f} s; 10,000 draws vectorised {t_vec:.2f} s vs loop {t_loop:.2f} s "
            f"(x{t_loop / t_vec:.1f})"
        )


if __name__ == "__main__":
    main()
