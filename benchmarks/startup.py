"""Start-up of the ``harness`` command: wall seconds of ``--version``, ``--help`` and ``harness evaluate`` on a
small run (the demo's judgments, one run file of its 50 queries), each a fresh interpreter, as a user's shell
starts it. Each checkout given is measured in turn, round by round (A B A B ...), so a machine that grows
busier does not favour the one measured last; the median of the rounds is printed per command and checkout.

    python benchmarks/startup.py                                  # this checkout
    python benchmarks/startup.py --checkout OTHER --checkout .    # before (another checkout) and after

Each checkout runs as ``PYTHONPATH=CHECKOUT python -c 'from harness.cli import main; ...'`` with the working
folder off the path, as the console script runs (docs/install.md has the figures).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONSOLE = (
    "import os, sys\n"
    "sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]\n"
    "from harness.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _small_run(folder: Path) -> tuple[Path, Path]:
    """The demo's qrels, and a run that ranks each query's judged documents first (then one unjudged)."""
    qrels = REPO / "datasets" / "demo" / "qrels" / "test.tsv"
    judged: dict[str, list[str]] = {}
    for line in qrels.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, _grade = line.split("\t")[:3]
        judged.setdefault(qid, []).append(doc)
    run = folder / "small.trec"
    with run.open("w", encoding="utf-8") as f:
        for qid, docs in judged.items():
            for rank, doc in enumerate([*docs, "unjudged"], 1):
                f.write(f"{qid} Q0 {doc} {rank} {1.0 / rank:.4f} small\n")
    return qrels, run


def _seconds(checkout: Path, args: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CONSOLE, *args], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: harness {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", action="append", type=Path, help="a checkout to measure (repeatable; default: this)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds per command and checkout (default 7)")
    args = ap.parse_args()
    checkouts = [c.resolve() for c in (args.checkout or [REPO])]
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        qrels, run = _small_run(cwd)
        commands = {
            "--version": ["--version"],
            "--help": ["--help"],
            "evaluate (50 queries)": ["evaluate", "--qrels", str(qrels), "--run", str(run)],
        }
        for checkout in checkouts:  # one untimed call each: .pyc files written, the disk cache warm
            for argv in commands.values():
                _seconds(checkout, argv, cwd)
        times: dict[tuple[str, Path], list[float]] = {}
        for _ in range(args.rounds):
            for label, argv in commands.items():
                for checkout in checkouts:
                    times.setdefault((label, checkout), []).append(_seconds(checkout, argv, cwd))
    width = max(len(str(c)) for c in checkouts)
    print(f"python {sys.version.split()[0]}, {args.rounds} rounds, median (min-max) wall seconds")
    for label in commands:
        for checkout in checkouts:
            t = times[(label, checkout)]
            print(f"{label:<22} {checkout!s:<{width}}  {statistics.median(t):.3f} ({min(t):.3f}-{max(t):.3f})")


if __name__ == "__main__":
    main()
