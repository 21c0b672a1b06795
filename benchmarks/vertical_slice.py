"""Issue-3 figures: BM25 and dense quality on SciFact, bm25s vs rank-bm25 speed in one run, and
the embedding cache's effect on a second identical run (Cranfield, fresh cache).

    python benchmarks/vertical_slice.py [--data ../shared/data] [--skip-cache]

Prints nDCG@10 next to the published numbers, qps of both BM25 backends and their ratio, and the
wall time of two identical `harness run` calls with a fresh cache_dir and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def harness_run(config: str, out: Path, env: dict[str, str]) -> tuple[float, dict]:
    cfg = out.parent / f"{out.name}.yaml"
    cfg.write_text(config, encoding="utf-8")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--config", str(cfg), "--out", str(out), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"harness run failed:\n{proc.stderr}")
    return wall, json.loads((out / "results.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--skip-cache", action="store_true", help="skip the Cranfield cache timing")
    args = ap.parse_args()
    data = Path(args.data).resolve()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        # 1) SciFact quality and BM25 speed, one run
        cache = os.environ.get("HARNESS_CACHE_DIR", str(Path("~/.cache/retrieval-harness").expanduser()))
        _, res = harness_run(
            f"""
dataset: {{path: {data / "scifact"}, split: test}}
metrics: [ndcg@10, recall@100]
cache_dir: {cache}
baseline: bm25
retrievers:
  bm25: {{type: bm25}}
  bm25_rank: {{type: bm25, backend: rank_bm25}}
  dense: {{type: dense}}
""",
            tmp_path / "scifact",
            env,
        )
        s, e = res["summary"], res["efficiency"]
        print("SciFact test, nDCG@10 (published: BM25 0.665 BEIR / 0.679 Pyserini; all-MiniLM-L6-v2 0.645 MTEB)")
        for name in ("bm25", "bm25_rank", "dense"):
            print(
                f"  {name:10s} nDCG@10 {s[name]['ndcg@10']:.4f}  recall@100 {s[name]['recall@100']:.4f}  "
                f"qps {e[name]['qps']:9.1f}  p50 {e[name]['latency_ms_p50']:.2f} ms"
            )
        ratio = e["bm25"]["qps"] / e["bm25_rank"]["qps"]
        print(f"  bm25 (bm25s) qps / rank_bm25 qps = {ratio:.1f}x  (target >= 30x)")

        if args.skip_cache:
            return
        # 2) Cranfield, fresh cache: second identical run
        cache_env = {k: v for k, v in env.items() if k != "HARNESS_CACHE_DIR"}
        config = f"""
dataset: {{path: {data / "cranfield"}, split: test}}
metrics: [ndcg@10]
cache_dir: {tmp_path / "fresh-cache"}
retrievers:
  bm25: {{type: bm25}}
  dense: {{type: dense}}
"""
        first, r1 = harness_run(config, tmp_path / "cran1", cache_env)
        second, r2 = harness_run(config, tmp_path / "cran2", cache_env)
        print("Cranfield, fresh cache_dir, two identical runs (wall time of the whole `harness run` process)")
        print(f"  first {first:.1f} s, second {second:.1f} s: ratio {second / first:.1%} (target <= 25%)")
        print(
            f"  dense nDCG@10 first {r1['summary']['dense']['ndcg@10']:.4f} second "
            f"{r2['summary']['dense']['ndcg@10']:.4f} (identical: {r1['summary'] == r2['summary']})"
        )


if __name__ == "__main__":
    main()
