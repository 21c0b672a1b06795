"""Wall time of ``harness history`` on 1,000 / 2,000 / 10,000 nights.

A seeded synthetic history (``--retrievers`` x ``--metrics`` per night, a baseline re-saved every
90 nights, about one night in 20 failing, one in 100 an error night) is written under ``--dir``
(default ``/tmp/harness-history-speed``) in the format ``harness check --history`` appends; then
``harness history FILE --out DIR`` runs in a child process per size and its wall time is printed,
with the time per night (flat when the command is linear in nights). The raw reference is reading
the same file with ``json.loads`` per line in a child process.

    python benchmarks/history_speed.py                      # 1000 2000 10000 nights
    python benchmarks/history_speed.py --nights 10000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "harness-history/1"


def generate(path: Path, nights: int, retrievers: int, metrics: int, seed: int) -> None:
    rng = random.Random(seed)
    names = [f"retriever{i}" for i in range(retrievers)]
    mets = ["ndcg@10", "recall@100", "mrr@10", "map", "precision@5", "recall@10"][:metrics]
    start = datetime(2020, 1, 1, 2, 0, tzinfo=timezone.utc)
    base: dict[str, dict[str, float]] = {}
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(nights):
            t = (start + timedelta(days=i)).isoformat(timespec="seconds")
            if i % 100 == 99:
                rec = {"schema": SCHEMA, "time": t, "baseline": "b.json", "current": "out", "verdict": "error",
                       "exit_code": 2, "error": "results file not found", "rows": [], "summary": {}}  # fmt: skip
                fh.write(json.dumps(rec) + "\n")
                continue
            if i % 90 == 0:
                base = {r: {m: 0.3 + 0.5 * rng.random() for m in mets} for r in names}
            summary = {r: {m: base[r][m] + rng.gauss(0, 0.01) for m in mets} for r in names}
            failing = rng.random() < 0.05
            rows = []
            for r in names:
                for m in mets:
                    cur = summary[r][m] - (0.05 if failing and r == names[0] else 0)
                    summary[r][m] = cur
                    rows.append({"retriever": r, "metric": m, "baseline": base[r][m], "current": cur,
                                 "delta": cur - base[r][m], "p_value": 0.5, "tolerance": 0.01, "queries": 300,
                                 "verdict": "regression" if failing and r == names[0] else "ok"})  # fmt: skip
            rec = {"schema": SCHEMA, "time": t, "commit": f"{rng.getrandbits(160):040x}", "dirty": False,
                   "dataset": {"name": "scifact", "split": "test", "fingerprint": "f" * 16, "queries": 300},
                   "baseline": "b.json", "current": "out", "alpha": 0.05, "test": "randomization",
                   "summary": summary, "baseline_summary": base, "rows": rows, "problems": [],
                   "verdict": "fail" if failing else "pass", "exit_code": 1 if failing else 0,
                   "headline": "x"}  # fmt: skip
            fh.write(json.dumps(rec) + "\n")


RAW = "import json, sys; print(sum(1 for line in open(sys.argv[1], 'rb') if json.loads(line)))"


def timed(cmd: list[str]) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, proc.returncode, proc.stderr[-1000:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nights", type=int, nargs="+", default=[1000, 2000, 10000])
    ap.add_argument("--retrievers", type=int, default=4)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/harness-history-speed"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.retrievers} retrievers x {args.metrics} metrics per night")
    for n in args.nights:
        path = args.dir / f"nights-{n}.jsonl"
        generate(path, n, args.retrievers, args.metrics, args.seed)
        out = args.dir / f"out-{n}"
        shutil.rmtree(out, ignore_errors=True)
        raw, _, _ = timed([sys.executable, "-c", RAW, str(path)])
        wall, rc, err = timed([sys.executable, "-m", "harness", "history", str(path), "--out", str(out)])
        size = path.stat().st_size / 2**20
        print(f"{n:>6} nights ({size:6.1f} MB): harness history {wall:6.1f} s ({1000 * wall / n:5.2f} ms/night), "
              f"exit {rc}; raw json.loads of the file {raw:5.2f} s")  # fmt: skip
        if rc:
            print(err, file=sys.stderr)


if __name__ == "__main__":
    main()
