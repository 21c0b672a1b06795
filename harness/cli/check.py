"""``harness check``: compare a results folder with a stored baseline; exit 1 on a regression.

Exit codes: 0 no regression, 1 a regression (or a missing/failed retriever, a changed dataset),
2 bad input (one line, ``error: ...``). The table always goes to stdout; ``--summary`` and
``--junit`` write files for CI, atomically, also when the check fails or the input is bad, and
``--history`` appends the night to a JSON-lines file (``harness history`` plots it).

Outputs are checked before anything is written (:mod:`harness.gate.outputs`): none may be an input
or inside a results folder's ``results.json``/``runs/``, and an existing file is replaced only when
``harness check`` wrote it.
"""

from __future__ import annotations

import argparse
import json
import sys

from harness import defaults
from harness.cli.command import add_allow_incomplete, add_command, gate_power_options, gate_tolerances
from harness.errors import InputError
from harness.gate import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    TESTS,
    CheckReport,
    check,
    history,
    junit,
    outputs,
)
from harness.gate import load as load_gate
from harness.gate.render import error_markdown, to_json, to_markdown, to_text
from harness.results import Results

#: ``harness check --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """compare results with a stored baseline; exit 1 on a significant drop beyond tolerance

Per retriever x metric, a regression is a drop of more than the tolerance that is
also significant (paired test on per-query scores). Exit 0: no regression; 1: regression, missing
or failed retriever, changed dataset; 2: bad input."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "check", ABOUT)
    p.add_argument("--baseline", required=True, help="baseline results.json, results folder or saved baseline file")
    p.add_argument("--current", required=True, help="current results.json or results folder")
    p.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help=f"allowed absolute drop for every metric (default {DEFAULT_TOLERANCE}; overrides the file's default)",
    )
    p.add_argument("--tolerances", metavar="FILE.yaml", help="per-metric / per-retriever tolerances (see docs)")
    p.add_argument(
        "--alpha",
        type=float,
        default=None,
        help=f"significance level (default: the tolerances file's alpha, else {DEFAULT_ALPHA})",
    )
    p.add_argument("--test", choices=list(TESTS), default="randomization", help="paired test (default randomization)")
    p.add_argument(
        "--permutations", type=int, default=defaults.PERMUTATIONS, help="sign flips of the randomization test"
    )
    p.add_argument("--metrics", action="append", help="metrics to check, comma-separated (default: all in baseline)")
    p.add_argument("--retrievers", action="append", help="retrievers to check, comma-separated (default: all)")
    p.add_argument(
        "--latency-tolerance",
        type=float,
        default=load_gate.DEFAULT_LATENCY_TOLERANCE,
        help="load.json: allowed relative rise of p95 per level (default %(default)s = +50%%)",
    )
    p.add_argument(
        "--qps-tolerance",
        type=float,
        default=load_gate.DEFAULT_QPS_TOLERANCE,
        help="load.json: allowed relative fall of QPS per level (default %(default)s = -30%%)",
    )
    p.add_argument("--allow-dataset-change", action="store_true", help="compare on the common queries instead")
    p.add_argument(
        "--non-inferiority",
        type=float,
        metavar="MARGIN",
        help="every checked metric must show it is no worse than -MARGIN: its one-sided lower confidence bound "
        "of the mean paired difference must be above -MARGIN (replaces the regression rule; docs/power.md)",
    )
    p.add_argument(
        "--ni-alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help="one-sided alpha of the non-inferiority bound (default %(default)s; 0.025 as clinical trials)",
    )
    p.add_argument(
        "--require-power",
        type=float,
        nargs="?",
        const=0.8,
        metavar="P",
        help="exit 2 when the check is blind: the drop it detects at power P (default 0.8) is larger than the "
        "tolerance",
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="stdout: the table or JSON")
    p.add_argument("--summary", metavar="FILE.md", help="write a markdown summary (for $GITHUB_STEP_SUMMARY)")
    p.add_argument("--junit", metavar="FILE.xml", help="write JUnit XML: one test case per retriever x metric")
    p.add_argument(
        "--history", metavar="FILE.jsonl", help="append this night (means, verdicts, commit) to a history file"
    )
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


def build_report(args: argparse.Namespace) -> CheckReport:
    load_tol = {"latency_tolerance": args.latency_tolerance, "qps_tolerance": args.qps_tolerance}
    if load_gate.load_only(args.baseline) or load_gate.load_only(args.current):  # load.json files alone
        return load_gate.check_load(
            load_gate.read_load(args.baseline, "baseline"),
            load_gate.read_load(args.current, "current"),
            retrievers=_split(args.retrievers),
            baseline_label=args.baseline,
            current_label=args.current,
            **load_tol,
        )
    return load_gate.add_load(_build_quality_report(args), args.baseline, args.current, **load_tol)


def _build_quality_report(args: argparse.Namespace) -> CheckReport:
    tol = gate_tolerances(args)
    power = gate_power_options(args, tol)
    baseline = Results.open(args.baseline, allow_incomplete=args.allow_incomplete, what="baseline")
    current = Results.open(args.current, allow_incomplete=args.allow_incomplete, what="current")
    return check(
        baseline,
        current,
        tolerances=tol,
        alpha=args.alpha,
        metrics=_split(args.metrics),
        retrievers=_split(args.retrievers),
        allow_dataset_change=args.allow_dataset_change,
        test=args.test,
        permutations=args.permutations,
        baseline_label=args.baseline,
        current_label=args.current,
        **power,
    )


def run(args: argparse.Namespace) -> int:
    # before anything is read or written: no output may land on an input or a user's file
    outputs.guard(
        {"--summary": args.summary, "--junit": args.junit, "--history": args.history},
        [args.baseline, args.current, args.tolerances],
    )
    from harness.suite import is_suite

    if is_suite(args.baseline) or is_suite(args.current):  # suites: one check per dataset (docs/suites.md)
        from harness.cli.suite import check_suite

        try:
            return check_suite(args)
        except InputError as e:
            _write_error(args, str(e))
            raise
    try:
        gate_power_options(args)
        report = build_report(args)
        if args.require_power is not None and report.blind:
            more = f" (and {len(report.blind) - 1} more blind check(s))" if len(report.blind) > 1 else ""
            raise InputError(f"{report.blind[0]}{more}", field=f"--require-power {args.require_power:g}")
        if args.require_power is not None and report.unsized:
            n = len(report.unsized)
            raise InputError(
                f"no variance to size {n} check{'s' * (n != 1)} with ({', '.join(report.unsized[:3])}"
                f"{', ...' if n > 3 else ''}): every per-query difference is the same and the baseline's "
                "retrievers do not differ either, so no detectable drop can be computed; give a baseline with "
                "retrievers that differ",
                field=f"--require-power {args.require_power:g}",
            )
    except InputError as e:
        _write_error(args, str(e))
        if args.format == "json":
            sys.stdout.write(json.dumps({"exit": 2, "error": str(e)}, indent=2) + "\n")
        raise
    if args.format == "json":
        sys.stdout.write(json.dumps(to_json(report), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(to_text(report))
    page = _write_page_section(args, report)
    outputs.write(args.summary, to_markdown(report, page), "--summary")
    outputs.write(args.junit, junit.to_junit(report), "--junit")
    if args.history:
        line = history.append(args.history, history.night(report))
        print(f"history: night {line} appended to {args.history}")
    return report.exit_code


def _write_page_section(args: argparse.Namespace, report: CheckReport) -> str | None:
    """The verdicts, with links to the queries behind each regression, in the current folder's
    report.html (harness.results.page.check); the page's path, or None where there is no such folder."""
    import logging

    from harness.results.page.check import SECTION_ID, section, write_section

    if load_gate.load_only(args.baseline) or load_gate.load_only(args.current) or not report.rows:
        return None
    try:
        baseline = Results.open(args.baseline, allow_incomplete=True, what="baseline")
        current = Results.open(args.current, allow_incomplete=True, what="current")
        page = write_section(current, section(report, baseline, current, baseline_label=args.baseline))
    except (InputError, OSError) as e:  # a saved baseline file, a read-only folder: the verdict stands
        logging.getLogger("harness").warning("report.html not updated: %s", e)
        return None
    if page is None:
        return None
    if args.format != "json":  # stdout is one JSON document there
        print(f"page: {page} (#{SECTION_ID})")
    return f"{page}#{SECTION_ID}"


def _write_error(args: argparse.Namespace, message: str) -> None:
    """Bad input still leaves a summary, a JUnit error and a history night saying what went wrong."""
    try:
        outputs.write(args.summary, error_markdown(message), "--summary")
        outputs.write(args.junit, junit.error_junit(message), "--junit")
        if args.history:
            history.append(args.history, history.error_night(message, baseline=args.baseline, current=args.current))
    except InputError:
        pass  # the original error is the one to report
