"""The suite table: rows retrievers; per metric, one column per dataset, the mean, the mean rank.

One table per metric (a suite's columns are datasets, so metrics side by side would not fit any
screen). On the terminal every table is laid out for the console's width as the one-dataset table
is (:mod:`harness.results.terminal`): nothing is cut; long dataset and retriever names wrap onto
more lines, and a table still too wide is split by columns into parts that each repeat the
retriever column, so at 80 columns every name and every figure shows.

Markers: ``▲``/``▼`` beside a dataset's mean: significantly better/worse than the baseline on that
dataset (its per-query test, as in its own table); beside the mean over datasets: significant in
the exact sign-flip test across datasets (only possible with enough datasets, see the notes).
"""

from __future__ import annotations

import csv
import io
import textwrap
from collections.abc import Callable
from html import escape
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from harness.results.latex_table import tex_escape
from harness.results.table import BETTER, DECIMALS, WORSE, fmt_metric
from harness.results.terminal import BEST, Column, make_console, render_tables

#: a :class:`~harness.results.SuiteResults` (not imported: it renders itself through this module, by
#: :meth:`~harness.results.SuiteResults.table`, with the format names of a run's table)
SuiteResults = Any

#: widest a dataset header / retriever name line gets before it wraps (terminal only)
HEADER_CHARS = 12
NAME_CHARS = 24


# ---------------------------------------------------------------------- what every format shows
def sig_marker(suite: SuiteResults, retriever: str, metric: str, dataset: str | None) -> str:
    """``▲``/``▼`` for a significant difference to the baseline on ``dataset`` (None: across datasets)."""
    if dataset is None:
        a = (suite.across_datasets.get(retriever) or {}).get(metric)
        if a is None or not a.significant or a.delta is None:
            return ""
        return BETTER if a.delta > 0 else WORSE if a.delta < 0 else ""
    c = ((suite.significance.get(dataset) or {}).get(retriever) or {}).get(metric)
    if not c or not c.get("significant"):
        return ""
    d = c.get("delta") or 0.0
    return BETTER if d > 0 else WORSE if d < 0 else ""


def counted(n: int, noun: str) -> str:
    """``1 retriever``, ``3 retrievers``: a suite of one dataset or one retriever reads right."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def suite_title(suite: Any) -> str:
    """``Suite: 1 retriever x 3 datasets``."""
    return f"Suite: {counted(len(suite.retrievers), 'retriever')} x {counted(len(suite.datasets), 'dataset')}"


def cells(suite: SuiteResults, metric: str) -> list[dict[str, Any]]:
    """Per retriever: ``values`` per dataset, ``mean``, ``rank``, and which are best in their column."""
    rows = []
    for r in suite.retrievers:
        rows.append(
            {
                "retriever": r,
                "values": {d: (suite.summary.get(r, {}).get(d) or {}).get(metric) for d in suite.datasets},
                "mean": (suite.mean.get(r) or {}).get(metric),
                "rank": (suite.rank.get(r) or {}).get(metric),
            }
        )

    def best(values: list[float | None], high: bool) -> float | None:
        present = [round(v, DECIMALS) for v in values if v is not None]
        return (max(present) if high else min(present)) if present else None

    tops = {d: best([row["values"][d] for row in rows], True) for d in suite.datasets}
    top_mean = best([row["mean"] for row in rows], True)
    top_rank = best([row["rank"] for row in rows], False)
    for row in rows:
        row["best"] = {d: v is not None and round(v, DECIMALS) == tops[d] for d, v in row["values"].items()}
        row["best_mean"] = row["mean"] is not None and round(row["mean"], DECIMALS) == top_mean
        row["best_rank"] = row["rank"] is not None and round(row["rank"], DECIMALS) == top_rank
    return rows


def fmt_rank(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def legend(suite: SuiteResults) -> list[str]:
    n = len(suite.datasets)
    out = [] if suite.complete else ["INCOMPLETE: not every dataset finished (harness run --resume continues it)"]
    out += [
        "datasets: " + ", ".join(f"{d} ({suite.queries.get(d, 0)} queries)" for d in suite.datasets),
        f"mean: arithmetic mean over the {n} datasets; "
        "mean rank: 1 = best on every dataset (ties share the average rank)",
    ]
    if suite.baseline:
        out.append(
            f"{BETTER}/{WORSE}: significantly better/worse than the baseline ({suite.baseline}): beside a dataset, "
            f"its per-query randomization test (Holm); beside the mean, the exact sign-flip test over the datasets "
            f"(p < {suite.alpha:g})"
        )
    else:
        out.append("no baseline: no significance tests")
    return out + list(suite.notes)


def _failed(suite: SuiteResults, retriever: str, dataset: str) -> bool:
    return retriever in (suite.failures.get(dataset) or {})


# ---------------------------------------------------------------------- terminal
class _Column(Column):
    """A :class:`Column` whose header may wrap onto several lines (long dataset names)."""

    @property
    def width(self) -> int:
        lines = [*self.header.split("\n"), *(line for c in self.cells for line in c.plain.split("\n"))]
        return max(cell_len(x) for x in lines)


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)) or text


def terminal_tables(suite: SuiteResults, width: int) -> list[Any]:
    """The rich tables (one per metric, split by columns where ``width`` asks)."""
    out = []
    for m in suite.metrics:
        rows = cells(suite, m)
        names = [
            Text(_wrap(r["retriever"], NAME_CHARS), style="bold" if r["retriever"] == suite.baseline else "")
            for r in rows
        ]
        keys = [_Column("retriever", names, justify="left")]
        ds_cols = []
        for d in suite.datasets:
            col = []
            for r in rows:
                if _failed(suite, r["retriever"], d):
                    col.append(Text("FAILED", style="red"))
                    continue
                t = Text(fmt_metric(r["values"][d]), style=BEST if r["best"][d] else "")
                mark = sig_marker(suite, r["retriever"], m, d)
                if mark:
                    t.append(mark, style="green" if mark == BETTER else "red")
                col.append(t)
            ds_cols.append(_Column(_wrap(d, HEADER_CHARS), col))
        mean_cells = []
        for r in rows:
            t = Text(fmt_metric(r["mean"]), style=BEST if r["best_mean"] else "")
            mark = sig_marker(suite, r["retriever"], m, None)
            if mark:
                t.append(mark, style="green" if mark == BETTER else "red")
            mean_cells.append(t)
        agg = [
            _Column("mean", mean_cells),
            _Column("mean\nrank", [Text(fmt_rank(r["rank"]), style=BEST if r["best_rank"] else "") for r in rows]),
        ]
        title = f"{m}: {counted(len(suite.datasets), 'dataset')}"
        out += render_tables(title, keys, [ds_cols + agg], width)
    return out


def print_suite(suite: SuiteResults, console: Console | None = None) -> None:
    """The suite tables and their legend, laid out for the console's width."""
    console = console or make_console()
    for t in terminal_tables(suite, console.width):
        console.print(t)
    for line in legend(suite):
        console.print(Text(line, style="dim"))


# ---------------------------------------------------------------------- files
def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _text_row(
    suite: SuiteResults,
    r: dict[str, Any],
    m: str,
    name: Callable[[str], str],
    mark: Callable[[str], str],
    bold: Callable[[str], str],
) -> list[str]:
    """One retriever's cells for a text table (markdown, LaTeX): the formats differ only in how they
    escape the name, spell a significance marker and embolden the best value, so one loop serves both."""
    row = [name(r["retriever"])]
    for d in suite.datasets:
        if _failed(suite, r["retriever"], d):
            row.append("FAILED")
            continue
        v = fmt_metric(r["values"][d]) + mark(sig_marker(suite, r["retriever"], m, d))
        row.append(bold(v) if r["best"][d] else v)
    mean = fmt_metric(r["mean"]) + mark(sig_marker(suite, r["retriever"], m, None))
    row.append(bold(mean) if r["best_mean"] else mean)
    row.append(bold(fmt_rank(r["rank"])) if r["best_rank"] else fmt_rank(r["rank"]))
    return row


def to_markdown(suite: SuiteResults) -> str:
    lines = [f"# {suite_title(suite)}", ""]
    for m in suite.metrics:
        lines += [
            f"## {_md(m)}",
            "",
            "| retriever | " + " | ".join(_md(d) for d in suite.datasets) + " | mean | mean rank |",
        ]
        lines.append("|---|" + "---:|" * (len(suite.datasets) + 2))
        for r in cells(suite, m):
            row = _text_row(suite, r, m, _md, str, lambda v: f"**{v}**")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines += [f"- {_md(x)}" for x in legend(suite)]
    return "\n".join(lines) + "\n"


def to_csv(suite: SuiteResults) -> str:
    """One row per retriever x metric: each dataset's mean, the mean over datasets, the mean rank,
    at full precision (markers as separate columns: ``<dataset> sig``, ``mean sig``)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["retriever", "metric", *suite.datasets, "mean", "mean_rank", *(f"{d} sig" for d in suite.datasets), "mean sig"]
    )

    def num(v: float | None) -> str:
        return "" if v is None else repr(float(v))

    def sig(mark: str) -> str:
        return "+1" if mark == BETTER else "-1" if mark == WORSE else "0"

    for m in suite.metrics:
        for r in cells(suite, m):
            w.writerow(
                [
                    r["retriever"],
                    m,
                    *(num(r["values"][d]) for d in suite.datasets),
                    num(r["mean"]),
                    num(r["rank"]),
                    *(sig(sig_marker(suite, r["retriever"], m, d)) for d in suite.datasets),
                    sig(sig_marker(suite, r["retriever"], m, None)),
                ]
            )
    return buf.getvalue()


def to_html(suite: SuiteResults) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"><title>suite</title>',
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{padding:.2em .6em;border-bottom:1px solid #ddd}td{text-align:right}td.name{text-align:left}"
        ".best{font-weight:bold}.up{color:green}.down{color:#b00}</style></head><body>",
        f"<h1>Suite: {len(suite.retrievers)} retrievers x {len(suite.datasets)} datasets</h1>",
        html_tables(suite),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def html_tables(suite: SuiteResults) -> str:
    """One HTML table per metric and the legend: ``table.html``'s body, and the suite's report.html."""
    parts: list[str] = []

    def cell(text: str, mark: str, best: bool) -> str:
        cls = ' class="best"' if best else ""
        m = f'<span class="{"up" if mark == BETTER else "down"}">{mark}</span>' if mark else ""
        return f"<td{cls}>{escape(text)}{m}</td>"

    for m in suite.metrics:
        parts.append(f"<h2>{escape(m)}</h2><table><thead><tr><th>retriever</th>")
        parts += [f"<th>{escape(d)}</th>" for d in suite.datasets]
        parts.append("<th>mean</th><th>mean rank</th></tr></thead><tbody>")
        for r in cells(suite, m):
            parts.append(f'<tr><td class="name">{escape(r["retriever"])}</td>')
            for d in suite.datasets:
                if _failed(suite, r["retriever"], d):
                    parts.append('<td class="down">FAILED</td>')
                else:
                    parts.append(
                        cell(fmt_metric(r["values"][d]), sig_marker(suite, r["retriever"], m, d), r["best"][d])
                    )
            parts.append(cell(fmt_metric(r["mean"]), sig_marker(suite, r["retriever"], m, None), r["best_mean"]))
            parts.append(cell(fmt_rank(r["rank"]), "", r["best_rank"]) + "</tr>")
        parts.append("</tbody></table>")
    parts += ["<ul>", *(f"<li>{escape(x)}</li>" for x in legend(suite)), "</ul>"]
    return "\n".join(parts)


def to_latex(suite: SuiteResults) -> str:
    """One ``tabular`` (booktabs) per metric; ``$\\blacktriangle$``/``$\\blacktriangledown$`` need amssymb."""
    marks = {BETTER: r"$^{\blacktriangle}$", WORSE: r"$^{\blacktriangledown}$", "": ""}
    out = []
    for m in suite.metrics:
        out += [
            f"% {tex_escape(m)}",
            r"\begin{tabular}{l" + "r" * (len(suite.datasets) + 2) + "}",
            r"\toprule",
            " & ".join(["retriever", *(tex_escape(d) for d in suite.datasets), "mean", "mean rank"]) + r" \\",
            r"\midrule",
        ]
        for r in cells(suite, m):
            row = _text_row(suite, r, m, tex_escape, marks.__getitem__, lambda v: rf"\textbf{{{v}}}")
            out.append(" & ".join(row) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", ""]
    out += [f"% {tex_escape(x)}" for x in legend(suite)]
    return "\n".join(out) + "\n"
