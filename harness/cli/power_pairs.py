"""``harness power DIR --all-pairs``: its flags, checked, as :class:`~harness.results.pairs.PairsOptions`
(the report itself: :mod:`harness.results.pairs`; docs/power.md, "All pairs")."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.errors import InputError
from harness.results.pairs import DRAWS, ONE_PAIR, OPTIONS, SWAP_DRAWS, PairsOptions, all_pairs_report, parse_sizes


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--all-pairs`` options of ``harness power``."""
    p.add_argument(
        "--all-pairs",
        action="store_true",
        help="every pair of retrievers: Tukey HSD, randomized Tukey HSD, groups, discriminative power, swap rate",
    )
    p.add_argument("--draws", type=int, metavar="B", help=f"with --all-pairs: randomized draws (default {DRAWS:,})")
    p.add_argument("--seed", type=int, help="with --all-pairs: random seed (default: the results' seed)")
    p.add_argument(
        "--sizes",
        metavar="N1,N2",
        help="with --all-pairs: set sizes of the swap rate (default 5, 10, 25, 50, 100, ... up to half the queries)",
    )
    p.add_argument(
        "--swap-draws",
        type=int,
        metavar="D",
        help=f"with --all-pairs: draws of two disjoint query sets per size (default {SWAP_DRAWS:,}; 0: no swap rate)",
    )
    p.add_argument(
        "--groups-from",
        choices=["randomized", "tukey"],
        help="with --all-pairs: the test the letter groups follow (default randomized)",
    )


def check_args(args: argparse.Namespace) -> None:
    """The --all-pairs options, checked before anything is read: one line, exit 2."""
    given = [name for name in OPTIONS if getattr(args, name, None) is not None]
    if not getattr(args, "all_pairs", False):
        if given:
            raise InputError("is an --all-pairs option: add --all-pairs", field=f"--{given[0].replace('_', '-')}")
        return
    for name in ONE_PAIR:
        if getattr(args, name, None) is not None:
            raise InputError(
                "sizes one pair against the baseline; --all-pairs tests every pair (leave one out)",
                field=f"--{name.replace('_', '-')}",
            )
    if args.simulate:
        raise InputError("resamples one pair; --all-pairs has its own randomized test (--draws)", field="--simulate")
    if not args.folder:
        raise InputError("--all-pairs needs a results folder (DIR)", field="--all-pairs")
    if args.draws is not None and args.draws < 1:
        raise InputError(f"must be at least 1 draw, got {args.draws}", field="--draws")
    if args.swap_draws is not None and args.swap_draws < 0:
        raise InputError(f"must be >= 0 draws, got {args.swap_draws}", field="--swap-draws")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"must be an integer >= 0, got {args.seed}", field="--seed")
    if args.sizes is not None:
        parse_sizes(args.sizes)


def run(args: argparse.Namespace, sections: list[tuple[str | None, Any]], alpha_of: Any) -> int:
    """Every section (a folder, or one per dataset of a suite), as text or JSON."""
    options = PairsOptions(
        folder=args.folder,
        metrics=[m.strip() for m in (args.metrics or "").split(",") if m.strip()] or None,
        alpha=args.alpha,
        draws=args.draws,
        seed=args.seed,
        sizes=parse_sizes(args.sizes) if args.sizes is not None else None,
        swap_draws=args.swap_draws,
        groups_from=args.groups_from,
        format=args.format,
    )
    sys.stdout.write(all_pairs_report(sections, options, alpha_of))
    return 0
