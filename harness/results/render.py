"""Rendering results: the comparison table in every format, plots, and the per-query drill-down.

:func:`write_renderings` writes everything that belongs in a results folder; the results folder
calls it as it completes (``harness run``, ``Results.save``) and ``harness report DIR --write`` calls
it again to re-render a folder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from harness.io import atomic
from harness.results.table import ComparisonTable, build_table, comparison_frame, to_markdown

if TYPE_CHECKING:
    from harness.results import Results

__all__ = [
    "FORMATS",
    "TABLE_FILES",
    "ComparisonTable",
    "build_table",
    "comparison_frame",
    "render_table",
    "to_markdown",
    "write_renderings",
]

log = logging.getLogger("harness")

TABLE_FILES = ("table.md", "table.csv", "table.html", "table.tex")
#: what :func:`render_table` renders (``terminal``: what ``harness report DIR`` prints)
FORMATS = ("markdown", "csv", "html", "latex", "terminal")


def render_table(results: Results, fmt: str = "markdown", *, width: int | None = None) -> str:
    """The comparison table as text: ``markdown`` (as ``table.md``), ``csv``, ``html``, ``latex``, or
    ``terminal`` (``width`` columns; default: what ``harness report DIR`` prints into a pipe). A
    suite's results render with the same formats (:meth:`harness.results.SuiteResults.table`)."""
    from harness.errors import InputError
    from harness.results.csv_table import to_csv
    from harness.results.formats import terminal_text
    from harness.results.html_table import to_html
    from harness.results.latex_table import to_latex

    renderers = {"markdown": to_markdown, "csv": to_csv, "html": to_html, "latex": to_latex}
    if fmt not in FORMATS:
        raise InputError(f"unknown table format {fmt!r}; choose {', '.join(FORMATS)}", field="fmt")
    if fmt == "terminal":
        return terminal_text(results, width)
    return renderers[fmt](build_table(results))


def write_renderings(results: Results, folder: Path, *, plots: bool = True) -> list[Path]:
    """Tables (md, csv, html, tex), plots and ``report.html`` of ``results`` into ``folder``; returns
    the files.

    A plot that cannot be drawn is logged and skipped: the tables, which carry the numbers, are
    always written.
    """
    from harness.results.csv_table import to_csv
    from harness.results.html_table import to_html
    from harness.results.latex_table import to_latex

    folder = Path(folder)
    table = build_table(results)
    images: list[Path] = []
    if plots:
        try:
            from harness.results.plots import write_plots

            images = write_plots(results, folder)
        except Exception as e:  # a broken matplotlib must not cost the run its tables
            log.warning("plots not written: %s: %s", type(e).__name__, e)
    written = [
        atomic.write_text(folder / "table.md", to_markdown(table)),
        atomic.write_text(folder / "table.csv", to_csv(table)),
        atomic.write_text(folder / "table.html", to_html(table, [p.name for p in images])),
        atomic.write_text(folder / "table.tex", to_latex(table)),
    ]
    page: list[Path] = []
    try:  # report.html: the page a reviewer opens (harness.results.page)
        from harness.results.page.render import write_report_page

        page = write_report_page(results, folder, images, diff_plots=plots)
    except Exception as e:  # the tables carry the numbers: a page that fails must not cost the run them
        log.warning("report.html not written: %s: %s", type(e).__name__, e)
    return written + images + page
