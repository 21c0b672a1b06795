"""Peak memory of ``harness evaluate`` on ~1 GB TREC runs of three shapes (and, on request, of
``harness compare`` and of the raw library routes).

Shapes (queries x documents per query, 25 million lines each, ~1.05 GB): 25,000 x 1,000 (few long
rankings), 250,000 x 100, and 1,000,000 x 25 (many short ones, where per-query Python objects would
dominate). Every query is judged (4 relevant documents each: 3 ranked, 1 not), and the run file's
lines are shuffled (a run file need not be grouped by query). Files are generated with numpy as
fixed-width lines (``q0000042 Q0 D0123456 0007 29.160000 synth``) in shuffled order, a chunk at a
time, under ``--dir`` (default ``/tmp/harness-evaluate-rss``; nothing is written into the
repository), and deleted after their shape unless ``--keep``. Each command runs in its own child
process and its peak RSS is that process's own ``wait4`` rusage (``ru_maxrss``).

    python benchmarks/evaluate_rss.py                                  # the three shapes, evaluate
    python benchmarks/evaluate_rss.py --shapes 2000x100 --reference    # small, with raw pandas
    python benchmarks/evaluate_rss.py --shapes 25000x1000 --compare    # and compare of two runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHAPES = "25000x1000,250000x100,1000000x25"
#: one line: qid, Q0, docno, rank, score, tag (fixed width: digits are filled in by numpy)
TEMPLATE = b"q0000000 Q0 D0000000 0000 00.000000 synth\n"
FIELDS = {"q": (1, 7), "d": (13, 7), "rank": (21, 4), "int": (26, 2), "frac": (29, 6)}
CHUNK = 1 << 20  # lines per block written


def _digits(mat: np.ndarray, values: np.ndarray, start: int, width: int) -> None:
    """Write ``values`` as zero-padded decimals into columns ``start .. start+width`` of ``mat``."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    mat[:, start : start + width] = (values[:, None] // powers) % 10 + ord("0")


def doc_of(q: np.ndarray, r: np.ndarray, docs: int) -> np.ndarray:
    """Document of query ``q`` at 0-based rank ``r``: distinct within a query for ``r`` < ``docs``
    (104,729 is prime, so coprime with a power-of-ten ``docs``)."""
    return (q * 7919 + r * 104729) % docs


def generate(folder: Path, queries: int, depth: int, docs: int, seed: int) -> tuple[Path, Path]:
    """The run (lines shuffled) and its qrels; both in ``folder``, reused if present."""
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / f"run-{queries}x{depth}-{docs}-{seed}.trec"
    qrels = folder / f"qrels-{queries}x{depth}-{docs}-{seed}.txt"
    if run.is_file() and qrels.is_file():
        return run, qrels
    order = np.random.default_rng(seed).permutation(queries * depth)
    tmp = run.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        for lo in range(0, len(order), CHUNK):
            idx = order[lo : lo + CHUNK]
            q, r = idx // depth, idx % depth
            micro = (depth - r) * 30_000_000 // depth  # score x 1e6: descending with rank, 30 at the top
            mat = np.tile(np.frombuffer(TEMPLATE, dtype=np.uint8), (len(idx), 1))
            for name, values in (("q", q), ("d", doc_of(q, r, docs)), ("rank", r + 1)):
                _digits(mat, values, *FIELDS[name])
            _digits(mat, micro // 1_000_000, *FIELDS["int"])
            _digits(mat, micro % 1_000_000, *FIELDS["frac"])
            fh.write(mat.tobytes())
    del order
    os.replace(tmp, run)
    line = np.frombuffer(b"q0000000 0 D0000000 1\n", dtype=np.uint8)
    with open(qrels, "wb") as fh:
        for lo in range(0, queries, CHUNK):
            q = np.repeat(np.arange(lo, min(queries, lo + CHUNK), dtype=np.int64), 4)
            # ranks 0-2, 5-11 and the last are relevant, and one document the run does not rank
            r = np.tile(np.array([0, 5, depth - 1, depth], dtype=np.int64), len(q) // 4)
            r[0::4] += q[0::4] % 3
            r[1::4] += q[1::4] % 7
            mat = np.tile(line, (len(q), 1))
            _digits(mat, q, 1, 7)
            _digits(mat, doc_of(q, r, docs), 12, 7)
            fh.write(mat.tobytes())
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
    ap.add_argument("--shapes", default=SHAPES, help=f"QUERIESxDEPTH, comma-separated (default {SHAPES})")
    ap.add_argument("--docs", type=int, default=1_000_000, help="document vocabulary (a power of ten)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/harness-evaluate-rss"))
    ap.add_argument("--reference", action="store_true", help="also raw pandas read_csv of the run's columns")
    ap.add_argument("--compare", action="store_true", help="also harness compare of two copies of the run")
    ap.add_argument("--pytrec", action="store_true", help="also pytrec_eval's dict-of-dicts parse (large)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files (default: delete each shape's)")
    args = ap.parse_args()
    py = sys.executable
    for shape in args.shapes.split(","):
        queries, depth = (int(x) for x in shape.lower().split("x"))
        t0 = time.perf_counter()
        folder = args.dir / shape
        run, qrels = generate(folder, queries, depth, args.docs, args.seed)
        size_mb = run.stat().st_size / 2**20
        qrels_mb = qrels.stat().st_size / 2**20
        print(f"{queries:,} x {depth:,}: run {size_mb:,.0f} MB ({queries * depth:,} lines, shuffled), "
              f"qrels {qrels_mb:,.0f} MB; generated in {time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
        rows = []
        if args.reference:
            rows.append(("raw pandas read_csv (3 columns)", [py, "-c", RAW_PANDAS, str(run)]))
        rows.append(("harness evaluate", [py, "-m", "harness", "evaluate", "--qrels", str(qrels), "--run", str(run)]))
        if args.compare:
            other = run.with_name(run.stem + "-b.trec")
            if not other.exists():
                os.link(run, other)
            rows.append(("harness compare (2 runs)", [py, "-m", "harness", "compare", str(run), str(other),
                                                      "--qrels", str(qrels), "--bootstrap", "200",
                                                      "--permutations", "200"]))  # fmt: skip
        if args.pytrec:
            rows.append(("raw dict-of-dicts parse (pytrec_eval input)", [py, "-c", PYTREC, str(run)]))
        for label, cmd in rows:
            load = "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
            peak, wall, rc = peak_of(cmd)
            print(f"  {label:45s} peak RSS {peak:8,.0f} MB  wall {wall:6.1f} s  exit {rc}  "
                  f"(load average before: {load})", flush=True)  # fmt: skip
        if not args.keep:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
