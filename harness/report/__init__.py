"""Rendering results: the comparison table in every format, plots, and the per-query drill-down.

:func:`write_reports` writes everything that belongs in a results folder; ``harness run`` calls it
through ``Results.save`` and ``harness report DIR --write`` calls it again to re-render a folder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from harness.io import atomic
from harness.report.table import ComparisonTable, build_table, comparison_frame, to_markdown

if TYPE_CHECKING:
    from harness.results import Results

__all__ = [
    "TABLE_FILES",
    "ComparisonTable",
    "build_table",
    "comparison_frame",
    "render_table",
    "to_markdown",
    "write_reports",
]

log = logging.getLogger("harness")

TABLE_FILES = ("table.md", "table.csv", "table.html", "table.tex")


def render_table(results: Results, fmt: str = "markdown") -> str:
    """The comparison table as text: ``markdown`` (as ``table.md``), ``csv``, ``html`` or ``latex``."""
    from harness.errors import InputError
    from harness.report.csv_table import to_csv
    from harness.report.html_table import to_html
    from harness.report.latex_table import to_latex

    renderers = {"markdown": to_markdown, "csv": to_csv, "html": to_html, "latex": to_latex}
    if fmt not in renderers:
        raise InputError(f"unknown table format {fmt!r}; choose {', '.join(renderers)}", field="fmt")
    return renderers[fmt](build_table(results))


def write_reports(results: Results, folder: Path, *, plots: bool = True) -> list[Path]:
    """Tables (md, csv, html, tex), plots and ``report.html`` of ``results`` into ``folder``; returns
    the files.

    A plot that cannot be drawn is logged and skipped: the tables, which carry the numbers, are
    always written.
    """
    from harness.report.csv_table import to_csv
    from harness.report.html_table import to_html
    from harness.report.latex_table import to_latex

    folder = Path(folder)
    table = build_table(results)
    images: list[Path] = []
    if plots:
        try:
            from harness.report.plots import write_plots

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
    try:  # report.html: the page a reviewer opens (harness.report.page)
        from harness.report.page.render import write_report_page

        page = write_report_page(results, folder, images, diff_plots=plots)
    except Exception as e:  # the tables carry the numbers: a page that fails must not cost the run them
        log.warning("report.html not written: %s: %s", type(e).__name__, e)
    return written + images + page
