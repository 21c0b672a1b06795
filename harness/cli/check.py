"""``harness check``: compare a results folder with a stored baseline; exit 1 on a regression.

Exit codes: 0 no regression, 1 a regression (or a missing/failed retriever, a changed dataset),
2 bad input (one line, ``error: ...``). The table always goes to stdout; ``--summary`` and
``--junit`` write files for CI, atomically, also when the check fails or the input is bad.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.check import DEFAULT_ALPHA, DEFAULT_TOLERANCE, TESTS, CheckReport, Tolerances, check
from harness.errors import InputError
from harness.results import Results


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="compare results with a stored baseline; exit 1 on a significant drop beyond tolerance",
        description="Per retriever x metric, a regression is a drop of more than the tolerance that is "
        "also significant (paired test on per-query scores). Exit 0: no regression; 1: regression, missing "
        "or failed retriever, changed dataset; 2: bad input.",
    )
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
    p.add_argument("--permutations", type=int, default=10000, help="sign flips of the randomization test")
    p.add_argument("--metrics", action="append", help="metrics to check, comma-separated (default: all in baseline)")
    p.add_argument("--retrievers", action="append", help="retrievers to check, comma-separated (default: all)")
    p.add_argument("--allow-dataset-change", action="store_true", help="compare on the common queries instead")
    p.add_argument("--summary", metavar="FILE.md", help="write a markdown summary (for $GITHUB_STEP_SUMMARY)")
    p.add_argument("--junit", metavar="FILE.xml", help="write JUnit XML: one test case per retriever x metric")
    p.set_defaults(func=run)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


def load_results(path: str, what: str) -> Results:
    """:meth:`Results.load` with unreadable files as :class:`InputError` too (one line, exit 2)."""
    try:
        return Results.load(path)
    except InputError as e:  # "error: baseline FILE:LINE: what is wrong"
        where = f"{what} {e.path}" if e.path else what
        raise InputError(e.message, path=where, line=e.line, field=e.field) from None
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=f"{what} {path}") from None


def build_report(args: argparse.Namespace) -> CheckReport:
    tol = Tolerances.load(args.tolerances) if args.tolerances else Tolerances()
    if args.tolerance is not None:
        if args.tolerance < 0:
            raise InputError("--tolerance must be >= 0")
        tol = tol.model_copy(update={"default": args.tolerance})
    if args.permutations < 1:
        raise InputError("--permutations must be >= 1")
    baseline = load_results(args.baseline, "baseline")
    current = load_results(args.current, "current")
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
    )


def run(args: argparse.Namespace) -> int:
    try:
        report = build_report(args)
    except InputError as e:
        _write_error(args, str(e))
        raise
    sys.stdout.write(report.to_text())
    _write(args.summary, report.to_markdown(), "--summary")
    _write(args.junit, report.to_junit(), "--junit")
    return report.exit_code


def _write(path: str | None, text: str, flag: str) -> None:
    if not path:
        return
    from harness.io.atomic import write_text

    try:
        write_text(Path(path).expanduser(), text)
    except OSError as e:
        raise InputError(f"{flag}: cannot write ({e.strerror or e})", path=path) from None


def _write_error(args: argparse.Namespace, message: str) -> None:
    """Bad input still leaves a summary and a JUnit error, so a CI page says what went wrong."""
    import xml.etree.ElementTree as ET

    try:
        _write(args.summary, f"## ❌ harness check: ERROR\n\n`error: {message}`\n", "--summary")
        if args.junit:
            root = ET.Element("testsuites", {"name": "harness check", "tests": "1", "errors": "1", "failures": "0"})
            suite = ET.SubElement(root, "testsuite", {"name": "harness check", "tests": "1", "errors": "1"})
            case = ET.SubElement(suite, "testcase", {"classname": "harness.check", "name": "input"})
            ET.SubElement(case, "error", {"type": "InputError", "message": message}).text = message
            ET.indent(root)
            xml = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
            _write(args.junit, xml, "--junit")
    except InputError:
        pass  # the original error is the one to report
