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


if __name__ == "__main__":
    main_()
