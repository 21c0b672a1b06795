"""``harness check`` as one call, one pipeline: the options it was given, the report it prints, and
the files it writes (``--summary``, ``--junit``, ``--history``, the verdicts' section of the current
folder's ``report.html``), also when the input is bad.

The command line parses its flags into :class:`CheckOptions` and calls :func:`run` (through
:func:`harness.suite.check.run_check`). :func:`run` goes one way, each step once: guard the outputs,
read and check every option and the tolerances (:func:`harness.gate.tolerances.settings`), load both
sides, compute the whole report (:func:`harness.gate.verdict.report`; a suite's per dataset,
:mod:`harness.gate.suites`), apply the one ``--require-power`` rule (a blind or unsizable check is
refused, for a folder and a suite alike), render every output (:func:`harness.gate.render.render`),
write them, append the history night.
"""

from __future__ import annotations

import json
import logging
from typing import TextIO

from harness.errors import InputError
from harness.gate import ci, history, junit, outputs, suites
from harness.gate import load as load_gate
from harness.gate.render import error_markdown, render
from harness.gate.tolerances import CheckOptions as CheckOptions  # the flags: defined beside their checks
from harness.gate.tolerances import settings
from harness.gate.verdict import CheckReport, report
from harness.results import Results
from harness.results.suite import is_suite

log = logging.getLogger("harness")


def run(o: CheckOptions, stdout: TextIO) -> int:
    """``harness check``: two suite folders checked per dataset, anything else as two results folders
    (or ``load.json`` files); outputs guarded before anything is read or written (none may land on an
    input or a user's file). The report (table or JSON) to ``stdout``, the files written; the exit
    code (0 pass, 1 fail). Bad input: the error files (and, for folders as JSON, the error) first,
    then the :class:`InputError`."""
    outputs.guard({"--summary": o.summary, "--junit": o.junit, "--history": o.history, "--comment": o.comment},
                  [o.baseline, o.current, o.tolerances])  # fmt: skip
    suite = is_suite(o.baseline) or is_suite(o.current)
    load_only = not suite and (load_gate.load_only(o.baseline) or load_gate.load_only(o.current))
    checked: CheckReport | None = None  # one dataset's report (a history night); a suite has none
    page = None  # the report.html and the section the verdicts went into
    try:
        if suite and o.history:
            raise InputError(
                "--history takes one dataset's check; for a suite, check DIR/<dataset> folders", field="--history"
            )
        if o.annotations and o.format == "json":
            raise InputError(
                "prints workflow commands on stdout, which --format json keeps one JSON document: use one or the other",
                field="--annotations",
            )
        s = settings(o, quality=not load_only)
        if suite:  # per dataset (docs/suites.md)
            sc = suites.check_suites(o.baseline, o.current, s, allow_incomplete=o.allow_incomplete)
            reports = list(sc.reports.values())
        elif load_only:  # load.json files alone
            checked = load_gate.check_load(
                load_gate.read_load(o.baseline, "baseline"),
                load_gate.read_load(o.current, "current"),
                retrievers=o.retrievers,
                baseline_label=o.baseline,
                current_label=o.current,
                latency_tolerance=s.latency_tolerance,
                qps_tolerance=s.qps_tolerance,
            )
            reports = [checked]
        else:  # two results folders, each read once
            baseline = Results.open(o.baseline, allow_incomplete=o.allow_incomplete, what="baseline")
            current = Results.open(o.current, allow_incomplete=o.allow_incomplete, what="current")
            checked = report(baseline, current, s, baseline_label=o.baseline, current_label=o.current)
            checked = load_gate.add_load(
                checked, o.baseline, o.current, latency_tolerance=s.latency_tolerance, qps_tolerance=s.qps_tolerance
            )
            reports = [checked]
        blind = [line for r in reports for line in r.blind]
        unsized = [line for r in reports for line in r.unsized]
        if s.require_power is not None and (blind or unsized):
            raise InputError(_underpowered(blind, unsized), field=f"--require-power {s.require_power:g}")
    except InputError as e:
        write_error(o, str(e))
        if o.format == "json" and not suite:
            stdout.write(json.dumps({"exit": 2, "error": str(e)}, indent=2) + "\n")
        raise
    if checked is not None and not load_only:
        page = _page_section(o, checked, (baseline, current))
    if checked is None:
        shown = suites.render(sc, o.format)
    else:
        shown = render(checked, o.format, f"{page[0]}#{page[1]}" if page else None)
    stdout.write(shown.stdout)
    if page and o.format != "json":  # stdout is one JSON document there
        stdout.write(f"page: {page[0]} (#{page[1]})\n")
    result = sc if checked is None else checked
    if o.annotations:
        stdout.write(ci.annotations(result))
    comment = ci.comment(result) if o.comment else ""
    outputs.write_all(
        {"--summary": (o.summary, shown.summary), "--junit": (o.junit, shown.junit), "--comment": (o.comment, comment)}
    )
    if o.history and checked is not None:
        line = history.append(o.history, history.night(checked))
        stdout.write(f"history: night {line} appended to {o.history}\n")
    return result.exit_code


def _underpowered(blind: list[str], unsized: list[str]) -> str:
    """``--require-power``: a check that is blind (the drop it detects at that power is above the
    tolerance), or that no variance can size, is refused (exit 2) rather than passed: why."""
    if blind:
        more = f" (and {len(blind) - 1} more blind check(s))" if len(blind) > 1 else ""
        return f"{blind[0]}{more}"
    n = len(unsized)
    return (
        f"no variance to size {n} check{'s' * (n != 1)} with ({', '.join(unsized[:3])}"
        f"{', ...' if n > 3 else ''}): every per-query difference is the same and the baseline's "
        "retrievers do not differ either, so no detectable drop can be computed; give a baseline with "
        "retrievers that differ"
    )


def write_error(o: CheckOptions, message: str) -> None:
    """Bad input still leaves a summary, a JUnit error and a history night saying what went wrong."""
    try:
        outputs.write(o.summary, error_markdown(message), "--summary")
        outputs.write(o.junit, junit.error_junit(message), "--junit")
        outputs.write(o.comment, ci.failed_comment(message), "--comment")
        if o.history:
            history.append(o.history, history.error_night(message, baseline=o.baseline, current=o.current))
    except InputError:
        pass  # the original error is the one to report


def _page_section(o: CheckOptions, checked: CheckReport, sides: tuple[Results, Results]) -> tuple[str, str] | None:
    """The verdicts, with links to the queries behind each regression, in the current folder's
    report.html (harness.results.page.check): the page and its section, or None where there is none."""
    from harness.results.page.check import SECTION_ID, section, write_section

    if not checked.rows:
        return None
    baseline, current = sides
    try:
        written = write_section(current, section(checked, baseline, current, baseline_label=o.baseline))
    except (InputError, OSError) as e:  # a saved baseline file, a read-only folder: the verdict stands
        log.warning("report.html not updated: %s", e)
        return None
    return None if written is None else (str(written), SECTION_ID)
