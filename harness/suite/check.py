"""``harness check``'s one call: :func:`run_check`, two suite folders checked per dataset, anything
else as two results folders; the pipeline is :func:`harness.gate.command.run`, the suite check
:mod:`harness.gate.suites` (both below the suites' floor: they read suite folders, never run one).
"""

from __future__ import annotations

from typing import TextIO

from harness.gate.command import CheckOptions, run
from harness.gate.suites import SuiteCheck as SuiteCheck  # where it lived: re-exported
from harness.gate.suites import check_suites as check_suites


def run_check(o: CheckOptions, stdout: TextIO) -> int:
    """``harness check`` (:func:`harness.gate.command.run`): the exit code."""
    return run(o, stdout)
