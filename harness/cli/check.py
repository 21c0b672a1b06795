"""``harness check``: compare a results folder with a stored baseline; exit 1 on a regression.

Exit codes: 0 no regression, 1 a regression (or a missing/failed retriever, a changed dataset),
2 bad input (one line, ``error: ...``). The table always goes to stdout; ``--summary`` and
``--junit`` write files for CI, atomically, also when the check fails or the input is bad, and
``--history`` appends the night to a JSON-lines file (``harness history`` plots it); ``--comment``
writes the pull request comment ``harness ci comment`` posts and ``--annotations`` prints GitHub
workflow commands (docs/nightly.md).

Outputs are checked before anything is written (:mod:`harness.gate.outputs`): none may be an input
or inside a results folder's ``results.json``/``runs/``, and an existing file is replaced only when
``harness check`` wrote it.
"""

from __future__ import annotations

import argparse
import sys

from harness import defaults
from harness.cli.command import add_allow_incomplete, add_command
from harness.gate import DEFAULT_ALPHA, DEFAULT_TOLERANCE, TESTS
from harness.gate import load as load_gate

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
    p.add_argument(
        "--comment",
        metavar="FILE.md",
        help="write the pull request comment (verdict, regressions, blind checks; under 65,536 bytes) for "
        "`harness ci comment` (docs/nightly.md)",
    )
    p.add_argument(
        "--annotations",
        action="store_true",
        help="print GitHub workflow commands: ::error per regression, ::warning per blind check",
    )
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [x.strip() for v in values for x in v.split(",") if x.strip()]


def run(args: argparse.Namespace) -> int:
    from harness.gate.tolerances import CheckOptions
    from harness.suite.check import run_check

    flags = {k: v for k, v in vars(args).items() if k in CheckOptions.model_fields}
    options = CheckOptions(**{**flags, "metrics": _split(args.metrics), "retrievers": _split(args.retrievers)})
    return run_check(options, sys.stdout)
