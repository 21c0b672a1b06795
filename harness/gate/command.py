"""``harness check`` of two results folders, as one call: the options it was given, the report it
prints, and the files it writes (``--summary``, ``--junit``, ``--history``, the verdicts' section
of the current folder's ``report.html``), also when the input is bad.

The command line parses its flags into :class:`CheckOptions` and calls :func:`check_folders`
(through :func:`harness.suite.check.run_check`, which sends two suite folders to the suite check);
every rule lives here: the tolerances and their checks, the one ``--require-power`` rule (a blind
or unsizable check is refused, for a folder and a suite alike), what an error leaves behind.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict

from harness import defaults
from harness.errors import InputError
from harness.gate import history, junit, outputs
from harness.gate import load as load_gate
from harness.gate.render import error_markdown, to_json, to_markdown, to_text
from harness.gate.tolerances import DEFAULT_ALPHA, Tolerances, check_alpha, check_tolerance
from harness.gate.verdict import CheckReport, check
from harness.results import Results

log = logging.getLogger("harness")


class CheckOptions(BaseModel):
    """Every flag of ``harness check`` (``None``: not given)."""

    model_config = ConfigDict(frozen=True)

    baseline: str
    current: str
    tolerance: float | None = None
    tolerances: str | None = None
    alpha: float | None = None
    test: str = "randomization"
    permutations: int = defaults.PERMUTATIONS
    metrics: list[str] | None = None
    retrievers: list[str] | None = None
    latency_tolerance: float = load_gate.DEFAULT_LATENCY_TOLERANCE
    qps_tolerance: float = load_gate.DEFAULT_QPS_TOLERANCE
    allow_dataset_change: bool = False
    non_inferiority: float | None = None
    ni_alpha: float = DEFAULT_ALPHA
    require_power: float | None = None
    format: str = "text"
    summary: str | None = None
    junit: str | None = None
    history: str | None = None
    allow_incomplete: bool = False


def tolerances(o: CheckOptions) -> Tolerances:
    """The :class:`Tolerances` the flags give (a tolerances file, ``--tolerance``), with ``--alpha`` and
    ``--permutations`` checked: one reading for a results folder and for a suite."""
    tol = Tolerances.load(o.tolerances) if o.tolerances else Tolerances()
    if o.tolerance is not None:
        tol = tol.model_copy(update={"default": check_tolerance(o.tolerance, "--tolerance")})
    if o.alpha is not None:
        check_alpha(o.alpha, "--alpha")
    if o.permutations < 1:
        raise InputError("--permutations must be >= 1")
    return tol


def power_options(o: CheckOptions, tol: Tolerances | None = None) -> dict[str, Any]:
    """``--non-inferiority``, ``--ni-alpha`` and ``--require-power``, checked before anything is read,
    as keyword arguments of :func:`harness.gate.check`; ``--require-power`` must exceed the alpha."""
    margin = o.non_inferiority
    if margin is not None:
        margin = check_tolerance(margin, "--non-inferiority")
    ni_alpha = check_alpha(o.ni_alpha, "--ni-alpha")
    power = o.require_power
    if power is not None:
        check_alpha(power, "--require-power")
        alpha = o.alpha if o.alpha is not None else getattr(tol, "alpha", None)
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        if not power > alpha:
            raise InputError(f"must be above the check's alpha ({alpha:g}), got {power:g}", field="--require-power")
    return {"non_inferiority": margin, "ni_alpha": ni_alpha, "power": power if power is not None else 0.8}


def check_options(o: CheckOptions) -> dict[str, Any]:
    """The keyword arguments of :func:`harness.gate.check` the flags give (the labels aside)."""
    tol = tolerances(o)
    return {
        "tolerances": tol,
        "alpha": o.alpha,
        "metrics": o.metrics,
        "retrievers": o.retrievers,
        "allow_dataset_change": o.allow_dataset_change,
        "test": o.test,
        "permutations": o.permutations,
        **power_options(o, tol),
    }


def require_power(o: CheckOptions, blind: list[str], unsized: list[str]) -> None:
    """``--require-power``: a check that is blind (the drop it detects at that power is above the
    tolerance), or that no variance can size, is refused (exit 2) rather than passed."""
    if o.require_power is None:
        return
    field = f"--require-power {o.require_power:g}"
    if blind:
        more = f" (and {len(blind) - 1} more blind check(s))" if len(blind) > 1 else ""
        raise InputError(f"{blind[0]}{more}", field=field)
    if unsized:
        n = len(unsized)
        raise InputError(
            f"no variance to size {n} check{'s' * (n != 1)} with ({', '.join(unsized[:3])}"
            f"{', ...' if n > 3 else ''}): every per-query difference is the same and the baseline's "
            "retrievers do not differ either, so no detectable drop can be computed; give a baseline with "
            "retrievers that differ",
            field=field,
        )


def write_error(o: CheckOptions, message: str) -> None:
    """Bad input still leaves a summary, a JUnit error and a history night saying what went wrong."""
    try:
        outputs.write(o.summary, error_markdown(message), "--summary")
        outputs.write(o.junit, junit.error_junit(message), "--junit")
        if o.history:
            history.append(o.history, history.error_night(message, baseline=o.baseline, current=o.current))
    except InputError:
        pass  # the original error is the one to report


def build_report(o: CheckOptions) -> CheckReport:
    """The verdicts of two results folders (or two ``load.json`` files, or both)."""
    load_tol = {"latency_tolerance": o.latency_tolerance, "qps_tolerance": o.qps_tolerance}
    if load_gate.load_only(o.baseline) or load_gate.load_only(o.current):  # load.json files alone
        return load_gate.check_load(
            load_gate.read_load(o.baseline, "baseline"),
            load_gate.read_load(o.current, "current"),
            retrievers=o.retrievers,
            baseline_label=o.baseline,
            current_label=o.current,
            **load_tol,
        )
    options = check_options(o)
    baseline = Results.open(o.baseline, allow_incomplete=o.allow_incomplete, what="baseline")
    current = Results.open(o.current, allow_incomplete=o.allow_incomplete, what="current")
    report = check(baseline, current, baseline_label=o.baseline, current_label=o.current, **options)
    return load_gate.add_load(report, o.baseline, o.current, **load_tol)


def check_folders(o: CheckOptions, stdout: TextIO) -> int:
    """Check two results folders: the report (table or JSON) to ``stdout``, the files written; the
    exit code (0 pass, 1 fail). Bad input: the error files (and, as JSON, the error) first, then
    the :class:`InputError`."""
    try:
        power_options(o)
        report = build_report(o)
        require_power(o, report.blind, report.unsized)
    except InputError as e:
        write_error(o, str(e))
        if o.format == "json":
            stdout.write(json.dumps({"exit": 2, "error": str(e)}, indent=2) + "\n")
        raise
    if o.format == "json":
        stdout.write(json.dumps(to_json(report), indent=2, allow_nan=False) + "\n")
    else:
        stdout.write(to_text(report))
    page = _page_section(o, report, stdout)
    outputs.write(o.summary, to_markdown(report, page), "--summary")
    outputs.write(o.junit, junit.to_junit(report), "--junit")
    if o.history:
        line = history.append(o.history, history.night(report))
        stdout.write(f"history: night {line} appended to {o.history}\n")
    return report.exit_code


def _page_section(o: CheckOptions, report: CheckReport, stdout: TextIO) -> str | None:
    """The verdicts, with links to the queries behind each regression, in the current folder's
    report.html (harness.results.page.check); the page's path, or None where there is no such folder."""
    from harness.results.page.check import SECTION_ID, section, write_section

    if load_gate.load_only(o.baseline) or load_gate.load_only(o.current) or not report.rows:
        return None
    try:
        baseline = Results.open(o.baseline, allow_incomplete=True, what="baseline")
        current = Results.open(o.current, allow_incomplete=True, what="current")
        page = write_section(current, section(report, baseline, current, baseline_label=o.baseline))
    except (InputError, OSError) as e:  # a saved baseline file, a read-only folder: the verdict stands
        log.warning("report.html not updated: %s", e)
        return None
    if page is None:
        return None
    if o.format != "json":  # stdout is one JSON document there
        stdout.write(f"page: {page} (#{SECTION_ID})\n")
    return f"{page}#{SECTION_ID}"
