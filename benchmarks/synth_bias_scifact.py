"""`harness synth` on SciFact: the biased baseline (`--generator extract`) against the human set.

Draws 300 documents (seed 0, documents judged in the human test set excluded), makes one question
each with `--generator extract` (a sentence span of the document: no model, nothing simulated
beyond that), runs four BM25 variants over both sets with `harness run`, and prints
`harness synth bias --human` side by side: the share of questions BM25 solves at rank 1, the word
overlap with the source, the lengths, and whether the synthetic set picks the same retriever.
The figures of docs/synth.md come from this script.

    python benchmarks/synth_bias_scifact.py --data ../shared/data/scifact --work /tmp/synth-scifact
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import time
from pathlib import Path

from harness.cli import main

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "synth-bm25-variants.yaml"


def harness(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(list(args))
    if rc != 0:
        raise SystemExit(f"harness {' '.join(args)} exited {rc}")
    return out.getvalue()


def run(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/scifact")
    ap.add_argument("--work", default="/tmp/synth-scifact")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    synth, cfg = work / "synth", CONFIG
    t0 = time.perf_counter()
    harness("synth", "generate", "--dataset", a.data, "--out", str(synth), "--queries", str(a.queries),
            "--seed", str(a.seed), "--generator", "extract", "--exclude-dataset", a.data, "--no-progress")  # fmt: skip
    t_gen = time.perf_counter() - t0
    harness("run", "--config", str(cfg), "--dataset", str(synth), "--out", str(work / "r_synth"), "--no-progress")
    harness("run", "--config", str(cfg), "--dataset", a.data, "--out", str(work / "r_human"), "--no-progress")
    common = ["--human", a.data, "--results", str(work / "r_synth"), "--human-results", str(work / "r_human")]
    t0 = time.perf_counter()
    figures = json.loads(harness("synth", "bias", str(synth), *common, "--format", "json"))
    t_bias = time.perf_counter() - t0
    print(harness("synth", "bias", str(synth), *common))
    sr, hr = figures["source_rank"], figures["human"]["source_rank"]
    print(f"{'':<22}{'extract':>10}{'human':>10}")
    for key in ("at1", "at10", "mrr"):
        print(f"{'source_rank.' + key:<22}{sr[key]:>10.3f}{hr[key]:>10.3f}")
    print(f"{'overlap.mean':<22}{figures['overlap']['mean']:>10.3f}{figures['human']['overlap']['mean']:>10.3f}")
    print(f"{'length.mean':<22}{figures['length']['mean']:>10.2f}{figures['human']['length']['mean']:>10.2f}")
    print(f"length.ks {figures['length']['ks']:.3f}; tau ndcg@10 {figures['tau']['ndcg@10']}")
    print(f"generate {t_gen:.1f} s ({a.queries} documents, near-duplicate search included); bias {t_bias:.1f} s")
    return figures


if __name__ == "__main__":
    run()
