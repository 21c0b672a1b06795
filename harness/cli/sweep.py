"""``harness sweep --config FILE --out DIR``: tune options on selection queries, report on test ones."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from harness.cli.command import add_command

log = logging.getLogger("harness")


#: ``harness sweep --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """try a grid of retriever options; choose on selection queries, report the choice on test queries

Run the grid of a config's `sweep:` block (see docs/sweeps.md): every point is chosen on
the selection queries (a training split, or the other folds) and only the chosen point is scored
on the test queries, next to the default setting with a paired test."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "sweep", ABOUT)
    p.add_argument("--config", required=True, help="YAML run config with a `sweep:` block")
    p.add_argument("--out", help="folder for sweep.json, sweep.md and heatmaps (default: print only)")
    p.add_argument("--no-progress", action="store_true", help="no progress display (in a log: timestamped lines)")
    p.add_argument(
        "--max-points",
        type=int,
        default=None,
        metavar="N",
        help="refuse a sweep of more than N points in all, before any work (default 1,000; at most 100,000)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.results.terminal import make_console
    from harness.sweep import load_sweep_config, run_sweep, validate_sweep_folder, write_sweep
    from harness.sweep.render import print_sweep
    from harness.sweep.spec import DEFAULT_MAX_POINTS

    max_points = DEFAULT_MAX_POINTS if args.max_points is None else args.max_points
    config, sweep = load_sweep_config(args.config, max_points=max_points)
    if args.out:
        validate_sweep_folder(args.out)  # fail before the work, not after
    result = run_sweep(
        config,
        sweep,
        config_dir=Path(args.config).expanduser().resolve().parent,
        show_progress=not args.no_progress,
    )
    print_sweep(result, make_console())
    if args.out:
        written = write_sweep(result, args.out)
        log.info("wrote %s", ", ".join(str(p) for p in written))
    return 0
