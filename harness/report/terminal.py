"""The comparison table on the terminal (rich).

On a terminal the console's width is used; when output is piped or captured (CI logs) there is no
width to respect, so the table is laid out (at least) 200 columns wide instead of rich's default 80,
which squashes columns. Each mean has its bootstrap CI on the line below it when the table fits; when it
does not, the CIs follow in a table of their own.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.report.table import (
    DETAIL_HEADER,
    ComparisonTable,
    build_table,
    detail_rows,
    fmt_ci,
    fmt_metric,
    fmt_number,
    header,
    row_label,
)

if TYPE_CHECKING:
    from harness.results import Results

FALLBACK_WIDTH = 200
BEST = "bold green"


def make_console(file=None) -> Console:
    """A console sized to the terminal; when not writing to one, at least :data:`FALLBACK_WIDTH`
    wide (``COLUMNS`` may widen it: environments often export ``COLUMNS=80`` for pipes too)."""
    stream = file or sys.stdout
    if hasattr(stream, "isatty") and stream.isatty():
        return Console(file=file)
    try:
        columns = int(os.environ.get("COLUMNS") or 0)
    except ValueError:
        columns = 0
    return Console(file=file, width=max(FALLBACK_WIDTH, columns))


def _needed_width(table: ComparisonTable, with_ci: bool) -> int:
    name = max((len(row_label(r)) for r in table.rows), default=9) + 3
    metric = max(len(fmt_ci((0.0, 0.0))) if with_ci else 7, *(len(m) for m in table.metrics)) + 4
    return name + metric * len(table.metrics) + 10 * len(table.efficiency) + 2


def _main_table(table: ComparisonTable, with_ci: bool) -> Table:
    t = Table(title=table.title, title_style="bold")
    for i, col in enumerate(header(table)):
        t.add_column(col, justify="left" if i == 0 else "right", no_wrap=i > 0)
    n_cols = len(header(table))
    for row in table.rows:
        if row.error is not None:
            t.add_row(
                Text(row_label(row), style="red"), Text(f"FAILED: {row.error}", style="red"), *[""] * (n_cols - 2)
            )
            continue
        cells: list[Text] = [Text(row_label(row), style="bold" if row.baseline else "")]
        for c in row.metrics.values():
            text = Text(fmt_metric(c.value), style=BEST if c.best else "")
            if c.marker:
                text.append(c.marker, style="green" if c.sig > 0 else "red")
            if with_ci and c.ci:
                text.append("\n" + fmt_ci(c.ci), style="dim")
            cells.append(text)
        for c in row.efficiency.values():
            cells.append(Text(fmt_number(c.value), style=BEST if c.best else ""))
        t.add_row(*cells)
    return t


def _ci_table(table: ComparisonTable) -> Table:
    t = Table(title="95% bootstrap confidence intervals of the means", title_style="bold")
    t.add_column("retriever")
    for m in table.metrics:
        t.add_column(m, justify="right", no_wrap=True)
    for row in table.ok_rows:
        t.add_row(row_label(row), *(fmt_ci(c.ci) or "–" for c in row.metrics.values()))
    return t


def _detail_table(table: ComparisonTable) -> Table | None:
    rows = detail_rows(table)
    if not rows:
        return None
    t = Table(title=f"Against the baseline ({table.baseline})", title_style="bold")
    for i, col in enumerate(DETAIL_HEADER):
        t.add_column(col, justify="left" if i < 2 else "right", no_wrap=i >= 2)
    for r in rows:
        t.add_row(*r)
    return t


def print_results(results: Results | ComparisonTable, console: Console | None = None, *, detail: bool = True) -> None:
    """The table (means, markers, CIs), the tests behind the markers (``detail``), and the legend."""
    console = console or make_console()
    table = results if isinstance(results, ComparisonTable) else build_table(results)
    with_ci = _needed_width(table, True) <= console.width
    console.print(_main_table(table, with_ci))
    if not with_ci and table.ok_rows:
        console.print(_ci_table(table))
    extra = _detail_table(table) if detail else None
    if extra is not None:
        console.print(extra)
    for line in table.legend():
        console.print(Text(line, style="dim"))
