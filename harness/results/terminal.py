"""The comparison table on the terminal (rich), laid out to fit the console's width.

A table that does not fit is never squashed: rich would cut retriever names to ``…`` and means to
``0.6…``, which makes the table useless. Instead, at any width of 80 columns or more:

1. everything in one table, each mean with its bootstrap CI on the line below, when that fits;
2. otherwise the means alone, and the CIs in a second table (titled "95% bootstrap confidence
   intervals of the means");
3. any table still too wide is split by columns into parts of about equal width, each repeating
   the retriever column (quality and cost columns in separate parts).

A failed retriever keeps its row with a short ``FAILED`` marker; its error is listed under the
table (an error message is long and would otherwise set the width of a metric column).

On a terminal the console's width is used; when output is piped or captured (CI logs) there is no
width to respect, so the table is laid out (at least) 200 columns wide instead of rich's default 80.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.printable import printable
from harness.results.table import (
    DETAIL_HEADER,
    EFFICIENCY_COLUMNS,
    ComparisonTable,
    build_table,
    detail_rows,
    fmt_ci,
    fmt_cost,
    fmt_metric,
    row_label,
)

if TYPE_CHECKING:
    from harness.results import Results

FALLBACK_WIDTH = 200
BEST = "bold green"
CI_TITLE = "95% bootstrap confidence intervals of the means"


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


# ---------------------------------------------------------------------- layout
@dataclass
class Column:
    """One column of a terminal table: its header, alignment and one cell per row."""

    header: str
    cells: list[Text]
    justify: str = "right"
    style: str = ""

    def __post_init__(self) -> None:
        # data reaches cells (ids, texts, names): its control characters are shown, never sent
        self.header = printable(self.header)
        self.cells = [printable_cell(c) for c in self.cells]

    @property
    def width(self) -> int:
        """Cells needed so that neither the header nor any line of any cell is cut."""
        lines = [self.header, *(line for c in self.cells for line in c.plain.split("\n"))]
        return max(cell_len(x) for x in lines)


def printable_cell(cell: Text) -> Text:
    """``cell`` as a terminal shows it: control characters from data escaped (:mod:`harness.printable`;
    a newline stays a line break); a cell without one keeps its styles."""
    shown = printable(cell.plain, lines=True)
    return cell if shown == cell.plain else Text(shown, style=cell.style)


def table_width(columns: list[Column]) -> int:
    """Width of a rich table with the default box: one space of padding each side, one border
    between columns and one at each edge."""
    return sum(c.width + 3 for c in columns) + 1


def split_columns(keys: list[Column], columns: list[Column], width: int) -> list[list[Column]]:
    """The ``columns`` in order, in as few parts as fit ``width`` next to the ``keys`` (repeated in
    every part), balanced so that the parts have about the same width; a column too wide for any
    part gets a part of its own."""
    if not columns:
        return []
    room = width - table_width(keys)
    need = [c.width + 3 for c in columns]
    # fewest parts: fill greedily
    n_parts, used = 1, 0
    for w in need:
        if used and used + w > room:
            n_parts, used = n_parts + 1, 0
        used += w
    # same number of parts, the widest as narrow as possible (contiguous linear partition)
    n = len(columns)
    prefix = [0]
    for w in need:
        prefix.append(prefix[-1] + w)
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(n_parts + 1)]
    cut = [[0] * (n + 1) for _ in range(n_parts + 1)]
    best[0][0] = 0
    for k in range(1, n_parts + 1):
        for j in range(1, n + 1):
            for i in range(k - 1, j):
                cost = max(best[k - 1][i], prefix[j] - prefix[i])
                if cost < best[k][j]:
                    best[k][j], cut[k][j] = cost, i
    parts, j = [], n
    for k in range(n_parts, 0, -1):
        i = cut[k][j]
        parts.append(columns[i:j])
        j = i
    return [p for p in reversed(parts) if p]


def render_tables(title: str, keys: list[Column], groups: list[list[Column]], width: int) -> list[Table]:
    """``keys`` and the column ``groups`` as one table when it fits ``width``; otherwise each group
    split on its own (quality and cost never share a part) into tables titled ``title (i/n)``."""
    columns = [c for g in groups for c in g]
    if table_width([*keys, *columns]) <= width:
        parts = [columns]
    else:
        parts = [p for g in groups for p in split_columns(keys, g, width)]
    parts = parts or [[]]
    out = []
    for i, part in enumerate(parts, start=1):
        # a Text, not a str: rich would read "[none]" in "baseline (bm25[none])" as markup and drop it
        text = title if len(parts) == 1 else f"{title} ({i}/{len(parts)})"
        t = Table(title=Text(printable(text)), title_style="bold")
        for col in [*keys, *part]:
            # min_width and no_wrap: rich may not shrink a column (it would cut names and means)
            t.add_column(col.header, justify=col.justify, no_wrap=True, min_width=col.width, style=col.style)
        n_rows = len(keys[0].cells) if keys else 0
        for r in range(n_rows):
            t.add_row(*(col.cells[r] for col in [*keys, *part]))
        out.append(t)
    return out


# ---------------------------------------------------------------------- the tables
def _name_columns(table: ComparisonTable, rows) -> list[Column]:
    """``retriever`` (and ``chunking`` when the run had chunkings): the columns every part repeats."""
    names, chunks = [], []
    for row in rows:
        style = "red" if row.error is not None else "bold" if row.baseline else ""
        names.append(Text(row_label(row, table), style=style))
        chunks.append(Text(row.chunking or "", style=style))
    cols = [Column("retriever", names, justify="left")]
    if table.chunked:
        cols.append(Column("chunking", chunks, justify="left"))
    return cols


def _metric_columns(table: ComparisonTable, with_ci: bool) -> list[Column]:
    cols = []
    for i, m in enumerate(table.metrics):
        cells = []
        for row in table.rows:
            if row.error is not None:
                cells.append(Text("FAILED", style="red") if i == 0 else Text(""))
                continue
            c = row.metrics[m]
            text = Text(fmt_metric(c.value), style=BEST if c.best else "")
            if c.marker:
                text.append(c.marker, style="green" if c.sig > 0 else "red")
            if c.letters:
                text.append(f" {c.letters}", style="cyan")
            if with_ci and c.ci:
                text.append("\n" + fmt_ci(c.ci), style="dim")
            cells.append(text)
        cols.append(Column(m, cells))
    return cols


def _cost_columns(table: ComparisonTable) -> list[Column]:
    cols = []
    for k in table.efficiency:
        cells = []
        for row in table.rows:
            c = row.efficiency.get(k)
            if row.error is not None or c is None:
                cells.append(Text("FAILED", style="red") if row.error is not None and not table.metrics else Text(""))
                continue
            cells.append(Text(fmt_cost(k, c), style=BEST if c.best else ""))
        cols.append(Column(EFFICIENCY_COLUMNS[k][0], cells))
    return cols


def main_tables(table: ComparisonTable, width: int) -> tuple[list[Table], bool]:
    """The comparison table(s) fitting ``width``, and whether the CIs are in them."""
    names = _name_columns(table, table.rows)
    costs = _cost_columns(table)
    with_ci = _metric_columns(table, True)
    if table_width([*names, *with_ci, *costs]) <= width:
        return render_tables(table.title, names, [with_ci, costs], width), True
    means = _metric_columns(table, False)
    return render_tables(table.title, names, [means, costs], width), False


def ci_tables(table: ComparisonTable, width: int) -> list[Table]:
    """The CIs of the means, one column per metric (successful retrievers only)."""
    rows = table.ok_rows
    if not rows:
        return []
    names = _name_columns(table, rows)
    cols = [Column(m, [Text(fmt_ci(r.metrics[m].ci) or "–") for r in rows]) for m in table.metrics]
    return render_tables(CI_TITLE, names, [cols], width)


def detail_tables(table: ComparisonTable, width: int) -> list[Table]:
    """The tests behind the markers, split by columns when too wide (retriever and metric repeated)."""
    rows = detail_rows(table)
    if not rows:
        return []
    columns = [
        Column(head, [Text(r[i]) for r in rows], justify="left" if i < 2 else "right")
        for i, head in enumerate(DETAIL_HEADER)
    ]
    return render_tables(f"Against the baseline ({table.baseline})", columns[:2], [columns[2:]], width)


def failure_lines(table: ComparisonTable) -> list[Text]:
    """``FAILED name: error`` for each failed retriever (the table shows only the marker)."""
    return [
        Text.assemble(("FAILED ", "bold red"), (f"{printable(row.name)}: ", "red"), printable(row.error or ""))
        for row in table.rows
        if row.error is not None
    ]


def print_results(results: Results | ComparisonTable, console: Console | None = None, *, detail: bool = True) -> None:
    """The table (means, markers, CIs), failures, the tests behind the markers (``detail``), and the
    legend, laid out for ``console.width`` (see module doc)."""
    console = console or make_console()
    if not isinstance(results, ComparisonTable):  # a synthetic set says so above its numbers
        from harness.results.page.synthetic import line

        bias = line(results)
        if bias is not None:
            console.print(Text(bias))
    table = results if isinstance(results, ComparisonTable) else build_table(results)
    width = console.width
    tables, with_ci = main_tables(table, width)
    for t in tables:
        console.print(t)
    for line in failure_lines(table):
        console.print(line)
    if not with_ci:
        for t in ci_tables(table, width):
            console.print(t)
    if detail:
        for t in detail_tables(table, width):
            console.print(t)
    # bold is only visible where the console renders styles, not in a captured plain-text log
    for line in table.legend(bold=console.color_system is not None):
        console.print(Text(line, style="dim"))
