"""The table formats beyond a run's files: the terminal's text, and a suite's table.

:func:`harness.results.render.render_table` is the one place a format is chosen. A suite's results
(:class:`harness.results.SuiteResults`) render with the same formats through
:meth:`~harness.results.SuiteResults.table`: a column per dataset (:mod:`harness.results.suite_table`).
"""

from __future__ import annotations

import io
from typing import Any


def render_suite(suite: Any, fmt: str, *, width: int | None = None) -> str:
    """The suite table as ``markdown``, ``csv``, ``html``, ``latex`` or ``terminal``."""
    from harness.results import suite_table

    if fmt == "terminal":
        return terminal_text(suite, width, suite_table.print_suite)

    renderers = {
        "markdown": suite_table.to_markdown,
        "csv": suite_table.to_csv,
        "html": suite_table.to_html,
        "latex": suite_table.to_latex,
    }
    return renderers[fmt](suite)


def terminal_text(results: Any, width: int | None = None, printer: Any = None) -> str:
    """What ``harness report DIR`` prints, as plain text: laid out for ``width`` columns (default:
    the width it uses when its output is not a terminal, :func:`~harness.results.terminal.make_console`)."""
    from harness.results.terminal import make_console

    buf = io.StringIO()
    console = make_console(buf)
    if width is not None:
        console.width = width
    if printer is None:
        from harness.results.terminal import print_results as printer
    printer(results, console)
    return buf.getvalue()
