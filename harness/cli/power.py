"""``harness power``: how many queries are enough (docs/power.md). The flags parsed into
:class:`~harness.results.power.PowerOptions`; the report: :func:`harness.results.power.power`."""

from __future__ import annotations

import argparse
import sys

from harness import defaults
from harness.cli.command import add_allow_incomplete, add_command
from harness.results.pairs import DRAWS, SWAP_DRAWS
from harness.stats import power as pw

#: ``harness power --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """how many queries are enough: minimum detectable effect and queries needed

With a results folder (or a suite folder): per retriever x metric against the baseline, the sd of
the per-query differences, the smallest difference the set detects at 80% power, and the queries a
difference needs. Without one, --sd and --delta (or --queries) plan a golden set. --all-pairs: which
of the retrievers the set separates at all (Tukey HSD, randomized Tukey HSD, letter groups,
discriminative power, swap rate against the set size)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "power", ABOUT)
    p.add_argument("folder", nargs="?", metavar="DIR", help="results folder or suite folder")
    p.add_argument("--delta", type=float, help="the difference to detect (default: each comparison's observed one)")
    p.add_argument("--power", type=float, default=pw.POWER, help="power to reach (default %(default)s)")
    p.add_argument(
        "--alpha", type=float, help=f"two-sided level (default: the results' stats.alpha, else {defaults.ALPHA})"
    )
    p.add_argument("--queries", type=int, metavar="N", help="the mde at N queries instead of the set's size")
    p.add_argument("--metrics", metavar="M1,M2", help="only these metrics (default: all)")
    p.add_argument(
        "--simulate",
        type=int,
        default=0,
        metavar="N",
        help="also the resampling estimate of the power at the mde: N sets drawn from the real differences",
    )
    p.add_argument("--sd", type=float, help="planning: sd of the per-query differences between two systems")
    p.add_argument(
        "--sd-scores", type=float, metavar="S", help="planning: one system's per-query sd (uses sqrt(2) x S)"
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="stdout: a table or JSON")
    _add_pairs_arguments(p)
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def _add_pairs_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--all-pairs`` options (docs/power.md, "All pairs"; the report: :mod:`harness.results.pairs`)."""
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


def run(args: argparse.Namespace) -> int:
    from harness.results.power import PowerOptions, power

    metrics = [m.strip() for m in (args.metrics or "").split(",") if m.strip()] or None
    sys.stdout.write(power(PowerOptions(
        folder=args.folder, delta=args.delta, power=args.power, alpha=args.alpha, queries=args.queries,
        metrics=metrics, simulate=args.simulate, sd=args.sd, sd_scores=args.sd_scores, format=args.format,
        allow_incomplete=args.allow_incomplete, all_pairs=args.all_pairs, draws=args.draws, seed=args.seed,
        sizes=args.sizes, swap_draws=args.swap_draws, groups_from=args.groups_from,
    )).render())  # fmt: skip
    return 0
