"""``harness evaluate``'s report: each run's means (and, asked, every query's values) with the
counts behind them, as a terminal table, markdown, CSV or JSON. No statistics: that is
``harness compare``'s table (:mod:`harness.results.render`)."""

from __future__ import annotations

import csv
import io
import json

from harness.printable import printable
from harness.results.data import Results


def evaluate_table(results: Results, fmt: str, per_query: bool) -> str:
    """The report in ``fmt`` (``table``, ``markdown``, ``csv`` or ``json``)."""
    if fmt == "json":
        payload: dict = {"runs": {}}
        for name, means in results.summary.items():
            entry: dict = {"metrics": means}
            if per_query:
                entry["per_query"] = results.query_scores(name)
            entry["counts"] = results.counts[name]
            payload["runs"][name] = entry
        return json.dumps(payload, indent=1) + "\n"
    metric_names = results.metrics
    rows: list[list[str]] = []
    for name, means in results.summary.items():
        rows.append([name, "all", *(repr(means[m]) if fmt == "csv" else f"{means[m]:.4f}" for m in metric_names)])
        if per_query:
            for q, vals in results.query_scores(name).items():
                rows.append([name, q, *(repr(vals[m]) if fmt == "csv" else f"{vals[m]:.4f}" for m in metric_names)])
    header = ["run", "query", *metric_names]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return buf.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(map(_md, header)) + " |", "|" + "---|" * 2 + "---:|" * len(metric_names)]
        lines += ["| " + " | ".join(map(_md, r)) + " |" for r in rows]
        return "\n".join(lines) + "\n" + _counts_note(results)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # run names and query ids are the user's text: shown as written (a "[b]" is no markup, a control
    # character its escape), not read as rich markup
    table = Table(title="harness evaluate")
    for h in header:
        table.add_column(Text(printable(h)))
    for r in rows:
        table.add_row(*(Text(printable(c)) for c in r))
    buf = io.StringIO()
    Console(file=buf, width=200).print(table)
    return buf.getvalue() + _counts_note(results)


def _md(cell: str) -> str:
    """A markdown cell: control characters escaped, ``|`` not a column break."""
    return printable(cell).replace("|", "\\|")


def _counts_note(results: Results) -> str:
    notes = []
    for name, c in results.counts.items():
        parts = [f"{c['queries']} judged queries"]
        for key, label in [
            ("missing_from_run", "missing from the run (scored 0)"),
            ("not_in_qrels", "ranked but not judged (ignored)"),
            ("no_relevant", "with no relevant document (scored 0)"),
            ("duplicates_dropped", "duplicate docs dropped"),
        ]:
            if c.get(key):
                parts.append(f"{c[key]} {label}")
        notes.append(f"{printable(name)}: " + ", ".join(parts))
    return "\n".join(notes) + "\n"
