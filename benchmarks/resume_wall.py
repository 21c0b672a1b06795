"""SIGKILL after the first of three retrievers, then ``--resume``: the wall time shows the finished
one is not run again.

Three retrievers on the demo (dense first, then two BM25s), each run with an empty cache of its own:
an uninterrupted ``harness run``; one SIGKILLed the moment dense's run file is on disk; the killed
folder resumed. Prints both wall times and whether the resumed results equal the uninterrupted ones
(summary, per-query scores, significance). Dense's cache is empty for the resume too, so running it
again would mean loading the model and encoding the corpus.

    python benchmarks/resume_wall.py
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = """dataset: demo
metrics: [ndcg@10, mrr@10, recall@100]
latency_queries: 20
baseline: bm25
retrievers:
  dense: {type: dense}
  bm25: {type: bm25}
  bm25_okapi: {type: bm25, backend: rank_bm25}
"""


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="harness-resume-"))
    (work / "run.yaml").write_text(CONFIG)
    cmd = [sys.executable, "-m", "harness", "run", "--config", "run.yaml", "--no-progress"]

    def env(name: str) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HARNESS_CACHE_DIR": str(work / name)}

    t0 = time.perf_counter()
    full = subprocess.run([*cmd, "--out", "full"], cwd=work, env=env("cache-full"), capture_output=True, text=True)
    t_full = time.perf_counter() - t0
    if full.returncode:
        print(full.stderr)
        return 1
    proc = subprocess.Popen([*cmd, "--out", "killed"], cwd=work, env=env("cache-killed"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    while not glob.glob(str(work / "killed" / "runs" / "dense-*.trec")):
        if proc.poll() is not None:
            print("the run ended before it could be killed")
            return 1
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    on_disk = sorted(p.name for p in (work / "killed" / "runs").iterdir())
    t0 = time.perf_counter()
    res = subprocess.run([*cmd, "--out", "killed", "--resume"], cwd=work, env=env("cache-resume"),
                         capture_output=True, text=True)  # fmt: skip
    t_resume = time.perf_counter() - t0
    if res.returncode:
        print(res.stderr)
        return 1
    a = json.loads((work / "full" / "results.json").read_text())
    b = json.loads((work / "killed" / "results.json").read_text())
    print(f"killed with on disk: {', '.join(on_disk)}")
    print("resume: " + "; ".join(ln.split("harness: ", 1)[-1] for ln in res.stderr.splitlines() if "[" in ln))
    same = {k: a[k] == b[k] for k in ("summary", "query_ids", "per_query", "significance")}
    print(f"resumed equals uninterrupted: {same}")
    print(f"wall: uninterrupted {t_full:.1f} s, resumed {t_resume:.1f} s ({t_resume / t_full:.2f}x)")
    return 0 if all(same.values()) and b["manifest"]["retrievers"]["dense"]["reused"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
