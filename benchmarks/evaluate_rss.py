"""Peak memory of ``harness evaluate`` and ``harness compare`` on a 1 GB TREC run file.

A seeded synthetic run (``--queries`` queries x ``--depth`` documents drawn from a ``--docs``
document corpus, ~50 bytes a line: 25,000 x 1,000 is 1.0 GB) and qrels (3 relevant documents
per query) are written once under ``--dir`` (default ``/tmp/harness-evaluate-rss``; nothing is
written into the repository). Each command then runs in its own child process and its peak RSS
is read from ``getrusage(RUSAGE_CHILDREN)`` after it exits (``ru_maxrss``), next to the same
measure for the raw library route: pandas reading the run's three columns (``read_csv``,
``sep=r"\\s+"``), and pytrec_eval's parse of the run when ``--pytrec`` is given (slow, large).

    python benchmarks/evaluate_rss.py                 # 1 GB run: evaluate, compare, raw pandas
    python benchmarks/evaluate_rss.py --queries 2000  # a 100 MB run, quickly
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def generate(folder: Path, queries: int, depth: int, docs: int, seed: int) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / f"run-{queries}x{depth}-{docs}-{seed}.trec"
    qrels = folder / f"qrels-{queries}-{docs}-{seed}.txt"
    if run.is_file() and qrels.is_file():
        return run, qrels
    rng = np.random.default_rng(seed)
    tmp = run.with_suffix(".tmp")
    with open(tmp, "w", encoding="ascii") as fh:
        for q in range(queries):
            ids = rng.choice(docs, size=depth, replace=False)
            scores = np.sort(rng.random(depth))[::-1] * 30
            fh.write(
                "".join(f"q{q} Q0 D{d:07d} {r} {s:.6f} synthetic\n" for r, (d, s) in enumerate(zip(ids, scores), 1))
            )
    os.replace(tmp, run)
    with open(qrels, "w", encoding="ascii") as fh:
        for q in range(queries):
            for d in rng.choice(docs, size=3, replace=False):
                fh.write(f"q{q} 0 D{d:07d} 1\n")
    return run, qrels


def peak_of(cmd: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of one child process (``wait4``: its own rusage)."""
    import tempfile

    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            print(err.read()[-2000:].decode(errors="replace"), file=sys.stderr)
    return usage.ru_maxrss / 1024, wall, proc.returncode


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


RAW_PANDAS = textwrap.dedent("""
    import sys, pandas as pd
    df = pd.read_csv(sys.argv[1], sep=r"\\s+", header=None, usecols=[0, 2, 4], engine="c")
    print(len(df))
""")

PYTREC = textwrap.dedent("""
    import sys, pytrec_eval
    run = {}
    for line in open(sys.argv[1]):
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    print(len(run))
""")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=25000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/harness-evaluate-rss"))
    ap.add_argument("--pytrec", action="store_true", help="also pytrec_eval's dict-of-dicts parse (large)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    run, qrels = generate(args.dir, args.queries, args.depth, args.docs, args.seed)
    size_mb = run.stat().st_size / 2**20
    print(f"run file {run}: {size_mb:,.0f} MB ({args.queries:,} queries x {args.depth:,}), "
          f"generated/found in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    other = run.with_name(run.stem + "-b.trec")
    if not other.exists():
        os.link(run, other)
    py = sys.executable
    rows = [
        ("raw pandas read_csv (3 columns)", [py, "-c", RAW_PANDAS, str(run)]),
        ("harness evaluate", [py, "-m", "harness", "evaluate", "--qrels", str(qrels), "--run", str(run)]),
        ("harness compare (2 runs)", [py, "-m", "harness", "compare", str(run), str(other), "--qrels", str(qrels),
                                      "--bootstrap", "200", "--permutations", "200"]),
    ]  # fmt: skip
    if args.pytrec:
        rows.append(("raw dict-of-dicts parse (pytrec_eval input)", [py, "-c", PYTREC, str(run)]))
    raw = None
    for label, cmd in rows:
        peak, wall, rc = peak_of(cmd)
        raw = raw or peak
        print(f"{label:45s} peak RSS {peak:8,.0f} MB  ({peak / raw:4.2f}x raw pandas)  wall {wall:6.1f} s  exit {rc}")


if __name__ == "__main__":
    main()
