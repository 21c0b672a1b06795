"""``harness inspect --dataset D [--results DIR] [--strict]``: is the golden set fit to decide?"""

from __future__ import annotations

import argparse
import logging
import sys

from harness.cli.command import add_command

log = logging.getLogger("harness")

ABOUT = """check a golden set (and its results) for defects that decide comparisons

Judgments (grades, unjudged queries, judged ids missing from the corpus), exact and near-duplicate
queries and documents and the duplicate groups a query judges differently, queries copied out of
their relevant document, and with --results the queries that cannot tell retrievers apart. The
verdict comes first; --strict exits 1 when a finding changes comparisons (leakage, duplicates
judged differently, judged ids missing), so a pull request that edits a golden set can be gated."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "inspect", ABOUT)
    p.add_argument(
        "--dataset",
        metavar="D",
        help="demo, a BEIR folder, an irds: id, or a YAML config (its dataset:, datasets: suite and chunking:)",
    )
    p.add_argument("--split", help="the split to inspect (default test)")
    p.add_argument("--corpus", metavar="FILE", help="a corpus file, with --golden (instead of --dataset)")
    p.add_argument("--golden", metavar="FILE", help="a golden set file (docs/golden-sets.md), with --corpus")
    p.add_argument("--judge-by", choices=["auto", "ids", "answers"], default="auto", help="for --golden rows")
    p.add_argument("--results", metavar="DIR", help="a results folder of this dataset (a suite: the suite folder)")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    p.add_argument("--plots", metavar="DIR", help="write the plots (PNG) into this new or empty folder")
    near = "near-duplicate documents: exact Jaccard of word 5-shingles at or above J (default 0.9)"
    p.add_argument("--near-threshold", type=float, default=None, metavar="J", help=near)
    p.add_argument("--strict", action="store_true", help="exit 1 when a finding changes comparisons")
    p.add_argument("--no-progress", action="store_true", help="no progress display (a live line on a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness import progress
    from harness.errors import InputError
    from harness.inspect import inspect_dataset
    from harness.inspect.near import THRESHOLD
    from harness.inspect.plots import write_plots
    from harness.inspect.render import render
    from harness.inspect.source import materialise, resolve

    threshold = THRESHOLD if args.near_threshold is None else args.near_threshold
    if not 0 < threshold <= 1:
        raise InputError(f"must be in (0, 1], got {threshold!r}", field="--near-threshold")
    plots = Path(args.plots).expanduser() if args.plots else None
    if plots is not None and plots.exists() and (not plots.is_dir() or any(plots.iterdir())):
        raise InputError("exists and is not an empty folder (nothing there is replaced)", path=plots, field="--plots")
    # every input is read and checked before any finding is computed
    targets = resolve(
        args.dataset,
        split=args.split,
        results=args.results,
        corpus=args.corpus,
        golden=args.golden,
        judge_by=args.judge_by,
    )
    found = {}
    # a live line on a terminal (near duplicates of a large corpus); --no-progress: none
    with progress.session(sys.stderr, enabled=False if args.no_progress else None):
        for t in targets:
            found[t.label] = inspect_dataset(
                materialise(t),
                never_judged=t.never_judged,
                not_in_queries=t.not_in_queries,
                results=t.results,
                near_threshold=threshold,
            )
    written: list[str] = []
    if plots is not None:
        for t in targets:
            written += [str(p) for p in write_plots(found[t.label], t.label, t.results, plots)]
    sys.stdout.write(render(found, args.format, written))
    changed = [label for label, f in found.items() if f.changes_comparisons]
    if args.strict and changed:
        log.info("--strict: findings that change comparisons in %s", ", ".join(changed))
        return 1
    return 0
