"""The table formats beyond a run's files: the terminal's text, and a suite's table.

:func:`harness.results.render.render_table` is the one place a format is chosen. A suite's results
(:class:`harness.suite.SuiteResults`, a layer above, so never imported here) render through the
same function with the same formats: a column per dataset (:mod:`harness.results.suite_table`).
"""

from __future__ import annotations

import io
from typing import Any


def is_suite(results: Any) -> bool:
    """A suite's results have datasets and a mean rank where a run's have query ids."""
    return hasattr(results, "datasets") and hasattr(results, "rank")


def render_suite(suite: Any, fmt: str) -> str:
    """The suite table as ``markdown``, ``csv``, ``html`` or ``latex``."""
    from harness.results import suite_table

    renderers = {
        "markdown": suite_table.to_markdown,
        "csv": suite_table.to_csv,
        "html": suite_table.to_html,
        "latex": suite_table.to_latex,
    }
    return renderers[fmt](suite)


def terminal_text(results: Any, width: int | None = None) -> str:
    """What ``harness report DIR`` prints, as plain text: laid out for ``width`` columns (default:
    the width it uses when its output is not a terminal, :func:`~harness.results.terminal.make_console`)."""
    from harness.results.terminal import make_console

    buf = io.StringIO()
    console = make_console(buf)
    if width is not None:
        console.width = width
    if is_suite(results):
        from harness.results.suite_table import print_suite

        print_suite(results, console)
    else:
        from harness.results.terminal import print_results

        print_results(results, console)
    return buf.getvalue()
