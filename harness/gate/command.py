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
from dataclasses import dataclass
from typing import TextIO

from harness.errors import InputError
from harness.gate import history, junit, outputs, suites
from harness.gate import load as load_gate
from harness.gate.render import Rendered, error_markdown, render
from harness.gate.tolerances import CheckOptions as CheckOptions  # the flags: defined beside their checks
from harness.gate.tolerances import Settings, settings
from harness.gate.verdict import CheckReport, report
from harness.results import Results
from harness.results.suite import is_suite

log = logging.getLogger("harness")


@dataclass
class _Checked:
    """What a check decided and rendered; ``report`` is the one-dataset report (a history night)."""

    exit_code: int
    shown: Rendered
    #: the report.html and its section the verdicts went into (None: no page)
    page: tuple[str, str] | None = None
    report: CheckReport | None = None


def run(o: CheckOptions, stdout: TextIO) -> int:
    """``harness check``: two suite folders checked per dataset, anything else as two results folders
    (or ``load.json`` files); outputs guarded before anything is read or written (none may land on an
    input or a user's file). The report (table or JSON) to ``stdout``, the files written; the exit
    code (0 pass, 1 fail). Bad input: the error files (and, for folders as JSON, the error) first,
    then the :class:`InputError`."""
    outputs.guard({"--summary": o.summary, "--junit": o.junit, "--history": o.history},
                  [o.baseline, o.current, o.tolerances])  # fmt: skip
    suite = is_suite(o.baseline) or is_suite(o.current)
    try:
        done = _suites(o) if suite else _folders(o)
    except InputError as e:
        write_error(o, str(e))
        if o.format == "json" and not suite:
            stdout.write(json.dumps({"exit": 2, "error": str(e)}, indent=2) + "\n")
        raise
    stdout.write(done.shown.stdout)
    if done.page and o.format != "json":  # stdout is one JSON document there
        stdout.write(f"page: {done.page[0]} (#{done.page[1]})\n")
    outputs.write_all({"--summary": (o.summary, done.shown.summary), "--junit": (o.junit, done.shown.junit)})
    if o.history and done.report is not None:
        line = history.append(o.history, history.night(done.report))
        stdout.write(f"history: night {line} appended to {o.history}\n")
    return done.exit_code


def _folders(o: CheckOptions) -> _Checked:
    """Two results folders (or two ``load.json`` files, or both), each read once."""
    load_only = load_gate.load_only(o.baseline) or load_gate.load_only(o.current)
    s = settings(o, quality=not load_only)
    page = None
    if load_only:  # load.json files alone
        checked = load_gate.check_load(
            load_gate.read_load(o.baseline, "baseline"),
            load_gate.read_load(o.current, "current"),
            retrievers=o.retrievers,
            baseline_label=o.baseline,
            current_label=o.current,
            latency_tolerance=s.latency_tolerance,
            qps_tolerance=s.qps_tolerance,
        )
        _require_power(s, checked.blind, checked.unsized)
    else:
        baseline = Results.open(o.baseline, allow_incomplete=o.allow_incomplete, what="baseline")
        current = Results.open(o.current, allow_incomplete=o.allow_incomplete, what="current")
        checked = report(baseline, current, s, baseline_label=o.baseline, current_label=o.current)
        checked = load_gate.add_load(
            checked, o.baseline, o.current, latency_tolerance=s.latency_tolerance, qps_tolerance=s.qps_tolerance
        )
        _require_power(s, checked.blind, checked.unsized)
        page = _page_section(o, checked, (baseline, current))
    shown = render(checked, o.format, f"{page[0]}#{page[1]}" if page else None)
    return _Checked(checked.exit_code, shown, page, checked)


def _suites(o: CheckOptions) -> _Checked:
    """Two suite folders, per dataset (docs/suites.md)."""
    if o.history:
        raise InputError(
            "--history takes one dataset's check; for a suite, check DIR/<dataset> folders", field="--history"
        )
    s = settings(o)
    sc = suites.check_suites(o.baseline, o.current, s, allow_incomplete=o.allow_incomplete)
    reports = sc.reports.values()
    _require_power(s, [line for r in reports for line in r.blind], [line for r in reports for line in r.unsized])
    return _Checked(sc.exit_code, suites.render(sc, o.format))


def _require_power(s: Settings, blind: list[str], unsized: list[str]) -> None:
    """``--require-power``: a check that is blind (the drop it detects at that power is above the
    tolerance), or that no variance can size, is refused (exit 2) rather than passed."""
    if s.require_power is None:
        return
    field = f"--require-power {s.require_power:g}"
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


def _page_section(o: CheckOptions, checked: CheckReport, sides: tuple[Results, Results]) -> tuple[str, str] | None:
    """The verdicts, with links to the queries behind each regression, in the current folder's
    report.html (harness.results.page.check); the page and its section, or None where there is none."""
    from harness.results.page.check import SECTION_ID, section, write_section

    if not checked.rows:
        return None
    baseline, current = sides
    try:
        page = write_section(current, section(checked, baseline, current, baseline_label=o.baseline))
    except (InputError, OSError) as e:  # a saved baseline file, a read-only folder: the verdict stands
        log.warning("report.html not updated: %s", e)
        return None
    return None if page is None else (str(page), SECTION_ID)
