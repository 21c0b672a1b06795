"""The comparison table on the terminal (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from harness.report.table import _fmt, comparison_frame

if TYPE_CHECKING:
    from harness.results import Results


def print_results(results: Results, console: Console | None = None) -> None:
    console = console or Console()
    frame = comparison_frame(results)
    cols = [c for c in frame.columns if c != "error"]
    ds = results.manifest.get("dataset", {})
    table = Table(title=f"{ds.get('name', '')} ({ds.get('split', '')}, {ds.get('queries', '?')} queries)")
    table.add_column("retriever")
    for c in cols:
        table.add_column(c, justify="right")
    for name, row in frame.iterrows():
        if name in results.failures:
            table.add_row(name, f"[red]FAILED[/red] {results.failures[name]}", *[""] * (len(cols) - 1))
        else:
            table.add_row(name, *(_fmt(row[c], c) for c in cols))
    console.print(table)
