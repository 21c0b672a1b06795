"""The regression gate behind ``harness check``: tolerances, the verdict, its renderings, the history.

- :mod:`~harness.gate.command`: ``harness check`` as one pipeline (:func:`~harness.gate.command.run`);
- :mod:`~harness.gate.tolerances`: allowed drops per retriever x metric, their YAML file, and every flag
  of ``harness check`` checked in one call (:func:`~harness.gate.tolerances.settings`);
- :mod:`~harness.gate.verdict`: :func:`check`, the pure rule, and the :class:`CheckReport` it returns;
- :mod:`~harness.gate.suites`: two suites checked per dataset, one verdict naming the datasets;
- :mod:`~harness.gate.render` (text, markdown) and :mod:`~harness.gate.junit` (JUnit XML, written only there);
- :mod:`~harness.gate.comment` (the pull request comment) and :mod:`~harness.gate.annotations` (GitHub
  workflow commands), for a folder and a suite through :mod:`~harness.gate.ci`;
- :mod:`~harness.gate.outputs`: where a check may write (never over an input or a user's file);
- :mod:`~harness.gate.history` (one JSON line per night) and :mod:`~harness.gate.trend` (its plots and page).
"""

from harness.gate.tolerances import DEFAULT_ALPHA, DEFAULT_TOLERANCE, Tolerances
from harness.gate.verdict import FAILING, TESTS, CheckReport, CheckRow, DatasetCheck, check

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_TOLERANCE",
    "FAILING",
    "TESTS",
    "CheckReport",
    "CheckRow",
    "DatasetCheck",
    "Tolerances",
    "check",
]
