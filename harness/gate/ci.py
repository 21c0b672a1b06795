"""What ``harness check`` leaves for CI besides its table: the pull request comment
(``--comment``, :mod:`harness.gate.comment`) and the workflow-command annotations (``--annotations``,
:mod:`harness.gate.annotations`), for one results folder's report and for a suite's alike."""

from __future__ import annotations

import os
from collections.abc import Mapping

from harness.gate.annotations import annotations as _annotations
from harness.gate.comment import Part, error_comment, run_link, to_comment
from harness.gate.suites import SuiteCheck
from harness.gate.verdict import CheckReport


def parts(checked: CheckReport | SuiteCheck) -> tuple[list[Part], list[str]]:
    """The reports a check made, each with its dataset (None for two results folders), and a suite's
    own problems (datasets missing from the current suite)."""
    if isinstance(checked, SuiteCheck):
        return [Part(d, r) for d, r in checked.reports.items()], list(checked.problems)
    return [Part(None, checked)], []


def comment(checked: CheckReport | SuiteCheck, env: Mapping[str, str] | None = None) -> str:
    """``--comment``: the Markdown, linking the run's page where a GitHub runner says which it is."""
    ps, problems = parts(checked)
    return to_comment(ps, problems, link=run_link(os.environ if env is None else env))


def failed_comment(message: str, env: Mapping[str, str] | None = None) -> str:
    """``--comment`` of a check that could not run (exit 2)."""
    return error_comment(message, link=run_link(os.environ if env is None else env))


def annotations(checked: CheckReport | SuiteCheck) -> str:
    """``--annotations``: the workflow commands, ``""`` when there is nothing to say."""
    ps, problems = parts(checked)
    return _annotations(((p.dataset, p.report) for p in ps), problems)
