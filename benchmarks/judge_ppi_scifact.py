"""Prediction-powered intervals on SciFact with a simulated judge: how much a judge that
agrees with people at a given kappa narrows the interval on nDCG@10, against people alone.

No LLM or trained cross-encoder ships with the harness, so the graders are simulated, seeded and
reproducible: "people" grade each pooled pair by a rule that makes top-ranked documents more often
relevant, and the judge copies the people's grade except on a share ``--noise`` of the pairs, where
it guesses. The whole loop is the real one: `harness pool` (bm25 + a second bm25 without stemming,
top 10), `harness judge sample` (100 queries), `harness judge agree`, `harness evaluate
--auto-qrels`. For each noise level it prints the judge's quadratic kappa against people on the
sample, and the PPI and people-only 95% intervals of bm25's nDCG@10 and of the difference.

    python benchmarks/judge_ppi_scifact.py --data ../shared/data/scifact --out /tmp/ppi-bench

``--active`` measures active sampling instead (docs/judging.md, "Active sampling"): judges of
quadratic kappa about 0.9, 0.5 and 0.0 that say how sure they are (calibrated probabilities: a
share of pairs they know, one-hot-ish on the people's grade, the rest the grades' overall
distribution), ``u`` from those probabilities as ``judge sample --active`` computes it, and over
``--seeds`` seeds the coverage of the 95% interval on the difference of nDCG@10 and its mean width,
active against a uniform sample of the same expected size. Each seed draws the paper's setting:
N queries drawn with replacement from SciFact's (units from a distribution whose mean, the target,
is known), then each labelled with its ``pi`` (Bernoulli). Vectorised numpy over the seeds:

    python benchmarks/judge_ppi_scifact.py --data ../shared/data/scifact --out /tmp/ppi-active --active
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
from pathlib import Path

from harness.cli import main


def grade(q: str, d: str, salt: str, p_rel: float) -> int:
    u = int(hashlib.sha256(f"{salt}|{q}|{d}".encode()).hexdigest()[:12], 16) / 16**12
    return 0 if u >= p_rel else 1 + int(u / p_rel * 3) % 3


def quiet(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    if rc != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {rc}")
    return buf.getvalue()


def write_qrels(path: Path, qrels: dict) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q in sorted(qrels) for d, g in sorted(qrels[q].items())))
    return path


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="SciFact in BEIR layout")
    ap.add_argument("--out", required=True, help="a new working folder")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--noise", default="0.1,0.25,0.5,1.0", help="shares of pairs the judge guesses")
    ap.add_argument("--active", action="store_true", help="the active-sampling coverage study instead")
    ap.add_argument("--seeds", type=int, default=2000, help="--active: seeds (default 2000)")
    ap.add_argument("--budgets", default="30,60,120", help="--active: expected labelled queries")
    ap.add_argument("--kappas", default="0.9,0.5,0.0", help="--active: the judges' target quadratic kappas")
    ap.add_argument("--mix", type=float, default=0.2, help="--active: the uniform share")
    args = ap.parse_args()
    from harness.io.trec import read_qrels
    from harness.judging.pool import read_pool, write_pool
    from harness.results import Results

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    (out / "sf.yaml").write_text(
        f"dataset: {{path: {Path(args.data).resolve()}, split: test}}\nmetrics: [ndcg@10]\ndepth: 10\nseed: 0\n"
        "latency_queries: 1\nwarmup_queries: 0\nbaseline: bm25\nretrievers:\n  bm25: {type: bm25}\n"
        "  bm25_plain: {type: bm25, stemmer: null, stopwords: null}\n"
    )
    folder = out / "run"
    quiet(["run", "--config", str(out / "sf.yaml"), "--out", str(folder), "--no-progress"])
    quiet(["pool", str(folder), "--depth", "10", "--out", str(out / "pool.csv")])
    quiet(["judge", "sample", str(out / "pool.csv"), "--queries", str(args.queries), "--seed", str(args.seed),
           "--out", str(out / "sample.csv")])  # fmt: skip
    pool = read_pool(out / "pool.csv")
    truth = {(r.query_id, r.doc_id): grade(r.query_id, r.doc_id, "truth", 0.5 / r.best_rank**0.5) for r in pool}
    if args.active:
        active_study(args, folder, truth, read_qrels(folder / "qrels.tsv"))
        return
    sample = read_pool(out / "sample.csv")
    for r in sample:
        r.grade = truth[r.query_id, r.doc_id]
    write_pool(out / "sample.csv", sample)
    base = read_qrels(folder / "qrels.tsv")
    human = {q: dict(j) for q, j in base.items()}
    for r in sample:
        human[r.query_id][r.doc_id] = r.grade
    write_qrels(out / "human.txt", human)
    res = Results.load(folder)
    runs = [str(folder / res.run_files[n]["file"]) for n in ("bm25", "bm25_plain")]
    print(f"{len(pool)} pooled pairs over {len({r.query_id for r in pool})} queries; "
          f"{len(sample)} pairs of {args.queries} sampled queries graded by 'people'")  # fmt: skip
    print(
        f"{'noise':>6} {'qkappa':>7}  {'bm25 PPI':>26} {'people only':>26}  "
        f"{'plain - bm25 PPI':>28} {'people only':>28}"
    )
    for noise in (float(x) for x in args.noise.split(",")):
        judge = {q: dict(j) for q, j in base.items()}
        for (q, d), g in truth.items():
            judge[q][d] = g if grade(q, d, "noise", noise) == 0 else grade(q, d, "judge", 0.4)
        jpath = write_qrels(out / f"judge-{noise}.txt", judge)
        agree = json.loads(quiet(["judge", "agree", str(out / "sample.csv"), str(jpath), "--format", "json"]))
        rep = json.loads(quiet(["evaluate", "--qrels", str(out / "human.txt"), "--auto-qrels", str(jpath),
                                "--labelled", str(out / "sample.csv"), "--run", runs[0], "--run", runs[1],
                                "--metrics", "ndcg@10", "--format", "json"]))  # fmt: skip
        a = rep["runs"]["bm25"]["ndcg@10"]
        b = rep["differences"]["bm25_plain - bm25"]["ndcg@10"]

        def iv(x: dict) -> str:
            return f"{x['mean']:.4f} [{x['low']:.4f},{x['high']:.4f}]"

        print(f"{noise:>6} {agree['kappa_quadratic']:>7.3f}  {iv(a['ppi']):>26} {iv(a['classical']):>26}  "
              f"{iv(b['ppi']):>28} {iv(b['classical']):>28}")  # fmt: skip


# ----------------------------------------------------------------------------- --active


def judge_probs(truth: dict, share: float, rng) -> tuple[dict, dict]:
    """A judge that knows a ``share`` of the pairs (0.9 on the people's grade, the rest spread) and
    for the others gives, and draws its grade from, the grades' overall distribution: calibrated."""
    import numpy as np

    keys = sorted(truth)
    t = np.array([truth[k] for k in keys])
    marginal = np.bincount(t, minlength=4) / t.size
    knows = rng.random(t.size) < share
    p = np.tile(marginal, (t.size, 1))
    p[knows] = 0.1 / 3
    p[knows, t[knows]] = 0.9
    g = np.where(knows, t, (rng.random(t.size)[:, None] >= np.cumsum(marginal)[None, :-1]).sum(axis=1))
    return {k: p[i] for i, k in enumerate(keys)}, {k: int(g[i]) for i, k in enumerate(keys)}


def intervals(y, f, pi, xi, z: float):
    """The active estimator (harness.stats.active), one design per row: estimate and half-width."""
    import numpy as np

    w = xi / pi
    a, b = y * w, f * (w - 1)
    ac, bc = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    var_b = (bc * bc).sum(axis=1)
    lam = np.where(var_b > 0, (ac * bc).sum(axis=1) / np.where(var_b > 0, var_b, 1), 0.0)
    t = a - lam[:, None] * b
    return t.mean(axis=1), z * t.std(axis=1, ddof=1) / np.sqrt(t.shape[1])


def active_study(args, folder: Path, truth: dict, base: dict) -> None:
    import time

    import numpy as np
    from scipy.stats import norm

    from harness.judging.active_sample import uncertainty
    from harness.metrics.evaluate import CompiledQrels, evaluate_run
    from harness.results import Results
    from harness.results.store import read_runs
    from harness.stats.active import active_mean_ci, spread_budget
    from harness.stats.agreement import cohen_kappa, confusion

    runs = read_runs(Results.load(folder))
    queries = sorted(base)
    pool_q = sorted({q for q, _ in truth})

    def diff(qrels: dict) -> np.ndarray:
        cq = CompiledQrels(qrels)
        v = {r: dict(zip(cq.query_ids, evaluate_run(cq, runs[r], ["ndcg@10"]).values["ndcg@10"].tolist()))
             for r in ("bm25", "bm25_plain")}  # fmt: skip
        return np.array([v["bm25_plain"].get(q, 0.0) - v["bm25"].get(q, 0.0) for q in queries])

    def laid(grades: dict) -> dict:
        out = {q: dict(j) for q, j in base.items()}
        for (q, d), g in grades.items():
            out.setdefault(q, {})[d] = g
        return out

    y_all = diff(laid(truth))
    theta = float(y_all.mean())
    keys = sorted(truth)
    tv = np.array([truth[k] for k in keys])
    z = float(norm.isf(0.025))
    n = len(queries)
    print(f"{len(queries)} queries ({len(pool_q)} pooled, {len(truth)} pooled pairs); target: the mean difference "
          f"of nDCG@10 (bm25_plain - bm25) under people's grades = {theta:.5f}; {args.seeds} seeds, N = {n} queries "
          f"drawn with replacement per seed, mix {args.mix}")  # fmt: skip
    print(f"{'kappa':>6} {'budget':>6} {'labelled':>8} {'cov active':>10} {'cov uniform':>11} {'width active':>12} "
          f"{'width uniform':>13} {'ratio':>6} {'mean lam':>8}")  # fmt: skip
    for target in (float(x) for x in args.kappas.split(",")):
        rng = np.random.default_rng(12345)
        best = None
        for share in np.linspace(0, 1, 101):
            probs, jg = judge_probs(truth, share, np.random.default_rng(7))
            k = cohen_kappa(confusion(tv, np.array([jg[x] for x in keys])), "quadratic")
            if best is None or abs(k - target) < abs(best[0] - target):
                best = (k, share, probs, jg)
        kappa, share, probs, jg = best
        f_all = diff(laid(jg))
        t0 = time.perf_counter()
        u_pool, how = uncertainty("ndcg@10", runs, base, probs, pool_q, [("bm25_plain", "bm25")], seed=0, draws=200)
        u_map = dict(zip(pool_q, u_pool.tolist()))
        u_all = np.array([u_map.get(q, 0.0) for q in queries])
        u_secs = time.perf_counter() - t0
        for budget in (int(x) for x in args.budgets.split(",")):
            t1 = time.perf_counter()
            idx = rng.integers(0, n, size=(args.seeds, n))
            y, f, u = y_all[idx], f_all[idx], u_all[idx]
            pi_a = spread_budget(u, budget, args.mix)
            pi_u = np.full_like(pi_a, budget / n)
            r = rng.random((args.seeds, n))
            xi_a, xi_u = (r < pi_a).astype(float), (rng.random((args.seeds, n)) < pi_u).astype(float)
            est_a, h_a = intervals(y, f, pi_a, xi_a, z)
            est_u, h_u = intervals(y, f, pi_u, xi_u, z)
            for s in range(3):  # the vectorised figures are the library's
                iv, _ = active_mean_ci(y[s], f[s], pi_a[s], xi_a[s])
                assert abs(iv.mean - est_a[s]) < 1e-9 and abs(iv.high - iv.mean - h_a[s]) < 1e-9
            cov_a = float(np.mean(np.abs(est_a - theta) <= h_a))
            cov_u = float(np.mean(np.abs(est_u - theta) <= h_u))
            w = xi_a / pi_a
            ac, bc = y * w, f * (w - 1)
            ac, bc = ac - ac.mean(1, keepdims=True), bc - bc.mean(1, keepdims=True)
            lam = float(np.mean((ac * bc).sum(1) / np.maximum((bc * bc).sum(1), 1e-300)))
            print(f"{kappa:>6.3f} {budget:>6} {xi_a.sum(1).mean():>8.1f} {cov_a:>10.4f} {cov_u:>11.4f} "
                  f"{2 * h_a.mean():>12.5f} {2 * h_u.mean():>13.5f} {h_a.mean() / h_u.mean():>6.3f} {lam:>8.3f}"
                  f"   ({time.perf_counter() - t1:.1f} s; u: {how} in {u_secs:.1f} s; knows {share:.2f})")  # fmt: skip


if __name__ == "__main__":
    main_()
