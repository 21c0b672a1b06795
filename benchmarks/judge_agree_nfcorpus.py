"""`harness judge agree` on NFCorpus against the reference libraries.

"People": NFCorpus's test qrels (grades 1-2) plus every unjudged pair of the bm25 + dense top-10
pool as grade 0. "Judge": a seeded noisy copy (a quarter of the grades moved one step, a tenth
redrawn). Prints `harness judge agree --format json`'s figures beside scikit-learn's
`cohen_kappa_score(..., labels=[0, 1, 2, 3])`, krippendorff's ordinal alpha and scipy's
`kendalltau` over the folder's retrievers, and the largest difference.

    harness run --config nfcorpus-4.yaml --out nf      # bm25, bm25_plain, dense, hybrid; depth 10
    python benchmarks/judge_agree_nfcorpus.py --results nf --out /tmp/agree-nf
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np

from harness.cli import main


def noisy(grades: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for k in sorted(grades):
        g, u = grades[k], rng.random()
        if u < 0.1:
            g = int(rng.integers(0, 4))
        elif u < 0.35:
            g = int(np.clip(g + rng.choice([-1, 1]), 0, 3))
        out[k] = g
    return out


def write(path: Path, grades: dict) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(grades.items())))
    return path


def run() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="a results folder on NFCorpus test with bm25 and dense")
    ap.add_argument("--out", required=True, help="a new working folder")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    import krippendorff
    from scipy.stats import kendalltau
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    from harness.io.trec import read_qrels
    from harness.judging.pool import pooled
    from harness.results import Results
    from harness.results.store import read_runs

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    folder = Path(args.results)
    runs = read_runs(Results.load(folder))
    qrels = read_qrels(folder / "qrels.tsv")
    people = {(q, d): g for q, j in qrels.items() for d, g in j.items()}
    pairs = pooled({n: runs[n] for n in ("bm25", "dense")}, qrels, depth=10)
    for q, d, _, _ in pairs:
        people[q, d] = 0
    judge = noisy(people, args.seed)
    a, b = write(out / "people.txt", people), write(out / "judge.txt", judge)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["judge", "agree", str(a), str(b), "--results", str(folder), "--metrics", "ndcg@10",
                   "--format", "json"])  # fmt: skip
    assert rc == 0
    rep = json.loads(buf.getvalue())
    keys = sorted(people)
    ga, gb = [people[k] for k in keys], [judge[k] for k in keys]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = {
            "kappa": cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3]),
            "kappa_quadratic": cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="quadratic"),
            "alpha": krippendorff.alpha(
                reliability_data=[ga, gb], level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
            ),
        }
    names = list(rep["systems"])
    xa = [rep["systems"][r]["ndcg@10"][0] for r in names]
    xb = [rep["systems"][r]["ndcg@10"][1] for r in names]
    ref["tau"] = kendalltau(xa, xb).statistic
    got = {**{k: rep[k] for k in ("kappa", "kappa_quadratic", "alpha")}, "tau": rep["tau"]["ndcg@10"]}
    cm = confusion_matrix(ga, gb, labels=[0, 1, 2, 3]).tolist()
    print(f"{rep['n']} pairs ({len(pairs)} pooled as 0); confusion equal to scikit-learn's: {rep['confusion'] == cm}")
    for k in got:
        print(f"{k:>16}: harness {got[k]:.12f}  reference {ref[k]:.12f}  |diff| {abs(got[k] - ref[k]):.1e}")
    print(f"{'tau_AP':>16}: {rep['tau_ap']['ndcg@10']:.6f}")
    for r in names:
        under_a, under_b = rep["systems"][r]["ndcg@10"]
        print(f"{r:>16}: nDCG@10 people {under_a:.4f}  judge {under_b:.4f}")
    for r, m in rep["by_retriever"].items():
        print(f"{r:>16}: {m['n']} pairs, quadratic kappa {m['kappa_quadratic']:.3f}, base rate people "
              f"{m['binary']['base_rate_a']:.3f} judge {m['binary']['base_rate_b']:.3f}")  # fmt: skip


if __name__ == "__main__":
    run()
