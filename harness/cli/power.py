"""``harness power``: how many queries are enough (docs/power.md).

``harness power DIR`` (a results folder or a suite folder): per retriever x metric against the
baseline, the set size, the sd of the per-query differences, the minimum detectable effect at power
0.8 and the queries a difference needs. ``harness power --sd S --delta D`` is the planning calculator
for a golden set not built yet. Every figure is the two-sided paired t-test's, by the noncentral t
(:mod:`harness.stats.power`); ``--simulate N`` adds a resampling estimate beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from harness import defaults
from harness.cli import power_pairs
from harness.cli.command import add_allow_incomplete, add_command
from harness.errors import InputError
from harness.metrics.names import folder_spelling
from harness.stats import planning
from harness.stats import power as pw
from harness.stats.levels import check_level
from harness.stats.planning import PlanRow

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
    power_pairs.add_arguments(p)
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def _check_args(args: argparse.Namespace) -> None:
    """Every option checked before anything is read: one line, exit 2."""
    if not (0 < args.power < 1):
        raise InputError(f"must be a number in (0, 1), got {args.power:g}", field="--power")
    if args.alpha is not None:
        check_level(args.alpha, "--alpha")
    if args.alpha is not None and args.power <= args.alpha:
        raise InputError(f"must be above alpha ({args.alpha:g}), got {args.power:g}", field="--power")
    if args.delta is not None and not (math.isfinite(args.delta) and args.delta > 0):
        raise InputError(f"must be a positive difference, got {args.delta:g}", field="--delta")
    if args.queries is not None and args.queries < 2:
        raise InputError(f"must be at least 2 queries, got {args.queries}", field="--queries")
    if args.simulate < 0:
        raise InputError(f"must be >= 0 sets, got {args.simulate}", field="--simulate")
    for name in ("sd", "sd_scores"):
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"must be a positive number, got {v:g}", field=f"--{name.replace('_', '-')}")
    planning_flags = args.sd is not None or args.sd_scores is not None
    if args.folder and planning_flags:
        raise InputError("give a results folder or --sd/--sd-scores, not both", field="--sd")
    if args.sd is not None and args.sd_scores is not None:
        raise InputError("give --sd or --sd-scores, not both", field="--sd-scores")
    if not args.folder and not planning_flags:
        raise InputError("give a results folder (DIR), or --sd S with --delta D or --queries N to plan one")
    if planning_flags and args.delta is None and args.queries is None:
        raise InputError("planning needs --delta D (queries needed) or --queries N (the mde at N)", field="--delta")
    if planning_flags and args.simulate:
        raise InputError("--simulate resamples real differences: it needs a results folder", field="--simulate")


def run(args: argparse.Namespace) -> int:
    power_pairs.check_args(args)  # --all-pairs and its options (docs/power.md, "All pairs")
    _check_args(args)
    if not args.folder:
        return _plan_only(args)
    from harness.suite import is_suite

    if is_suite(args.folder):
        from harness.suite import SuiteResults

        suite = SuiteResults.load(args.folder)
        sections = [(d, suite.results(d)) for d in suite.datasets]
    else:
        from harness.results import Results

        sections = [(None, Results.open(args.folder, allow_incomplete=args.allow_incomplete, what="results"))]
    if args.all_pairs:
        return power_pairs.run(args, sections, _alpha)
    wanted = [m.strip() for m in (args.metrics or "").split(",") if m.strip()] or None
    out: list[tuple[str | None, float, str | None, list[PlanRow]]] = []
    for name, results in sections:
        alpha = args.alpha if args.alpha is not None else _alpha(results)
        if args.power <= alpha:
            raise InputError(f"must be above alpha ({alpha:g}), got {args.power:g}", field="--power")
        out.append((name, alpha, *_rows(results, wanted, alpha, args)))
    if args.format == "json":
        payload = {
            "power": args.power,
            "test": "two-sided paired t-test (noncentral t); " + pw.LABEL,
            "datasets" if len(out) > 1 or out[0][0] else "results": _json_sections(out),
        }
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
        return 0
    for name, alpha, note, rows in out:
        sys.stdout.write(_text(name, alpha, note, rows, args))
    return 0


def _alpha(results: Any) -> float:
    from harness.results.manifest import Manifest

    return Manifest.of(results).alpha


def _rows(results: Any, wanted: list[str] | None, alpha: float, args: argparse.Namespace):
    names = [r for r in results.summary if r in results.per_query]
    if not names:
        raise InputError("holds no per-query scores: nothing to size", path=results.folder or args.folder)
    have = list(dict.fromkeys(m for r in names for m in results.per_query[r]))
    metrics = have if wanted is None else folder_spelling(wanted, have, "no per-query scores for metric(s)")
    reference = results.baseline if results.baseline in names else names[0]
    values = {r: {m: results.scores(r)[m] for m in metrics if m in results.per_query[r]} for r in names}
    metrics = [m for m in metrics if all(m in values[r] for r in names)]
    note = None
    if len(names) == 1:
        note = (
            f"one retriever ({reference}): no differences to measure; the figures use sqrt(2) x the sd of its "
            "per-query scores, the conservative estimate for two uncorrelated systems"
        )
    elif results.baseline not in names:
        note = f"no baseline in the config: compared with the first retriever, {reference}"
    rows = planning.plan(
        values,
        reference,
        metrics,
        alpha=alpha,
        target=args.power,
        delta=args.delta,
        queries=args.queries,
        simulate=args.simulate,
    )
    return note, rows


def _plan_only(args: argparse.Namespace) -> int:
    alpha = args.alpha if args.alpha is not None else defaults.ALPHA
    sd = args.sd if args.sd is not None else math.sqrt(2.0) * args.sd_scores
    try:
        figures = planning.planning(sd, alpha=alpha, target=args.power, delta=args.delta, queries=args.queries)
    except ValueError as e:  # a difference too small against the sd for any practical set size
        raise InputError(f"{args.delta:g} with sd {sd:.4g}: {e}", field="--delta") from None
    figures["sd_source"] = "--sd" if args.sd is not None else f"sqrt(2) x --sd-scores {args.sd_scores:g}"
    if args.format == "json":
        sys.stdout.write(json.dumps(figures, indent=2) + "\n")
        return 0
    head = (
        f"two-sided paired t-test, alpha {alpha:g}, power {args.power:g}, sd of per-query differences {sd:.4g} "
        f"({figures['sd_source']})"
    )
    lines = [head]
    if args.delta is not None:
        lines.append(
            f"queries needed to detect a mean difference of {args.delta:g}: {figures['queries_needed']:,} "
            f"(n = {figures['n_exact']:.2f}, rounded up)"
        )
    if args.queries is not None:
        lines.append(f"with {args.queries:,} queries the smallest detectable difference is {figures['mde']:.4f}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _json_sections(out: list[tuple[str | None, float, str | None, list[PlanRow]]]) -> Any:
    def one(alpha: float, note: str | None, rows: list[PlanRow]) -> dict[str, Any]:
        return {"alpha": alpha, "note": note, "rows": [r.to_json() for r in rows]}

    if len(out) == 1 and out[0][0] is None:
        return one(*out[0][1:])
    return {name: one(alpha, note, rows) for name, alpha, note, rows in out}


def _f(x: float | None, fmt: str = ".4f") -> str:
    return "—" if x is None else format(x, fmt)


def _text(name: str | None, alpha: float, note: str | None, rows: list[PlanRow], args: argparse.Namespace) -> str:
    at = f"mde@{args.queries}" if args.queries is not None else "mde"
    want = f"n for {args.delta:g}" if args.delta is not None else "n for Δ"
    header = ["retriever", "vs", "metric", "n", "Δ", "sd_diff", at, want]
    if args.simulate:
        header.append("sim. power")
    body = []
    for r in rows:
        cells = [r.retriever, r.baseline or "—", r.metric, str(r.n), _f(r.delta, "+.4f"), _f(r.sd_diff), _f(r.mde)]
        cells.append("—" if r.queries_needed is None else f"{r.queries_needed:,}")
        if args.simulate:
            cells.append(_f(r.simulated_power, ".3f"))
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(header, *body)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [
        f"harness power: {Path(args.folder) / name if name else args.folder}",
        f"two-sided paired t-test at alpha {alpha:g}, power {args.power:g} ({pw.LABEL}); "
        f"{at}: smallest true difference detected; {want}: queries needed"
        + ("" if args.delta is not None else " to detect the observed difference"),
    ]
    if note:
        out.append(f"note: {note}")
    out += ["", line(header), line(["-" * w for w in widths]), *map(line, body)]
    out += [f"note: {r.retriever} {r.metric}: {r.reason}" for r in rows if r.reason]
    if args.simulate:
        out.append(
            f"sim. power: share of {args.simulate:,} resampled sets (differences centred and shifted to the mde) the "
            "paired t-test rejects; normal theory is off where it is far from the power asked for"
        )
    return "\n".join(out) + "\n\n"
