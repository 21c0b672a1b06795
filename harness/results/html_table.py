"""``table.html``: a self-contained page with the table, the tests behind its markers, and the plots.

Each marked mean has a tooltip with its test (delta, p-values, wins/ties/losses), so a reader can
check a marker without opening ``results.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path

from harness.results.table import (
    DETAIL_HEADER,
    Cell,
    ComparisonTable,
    detail_rows,
    fmt_ci,
    fmt_cost,
    fmt_delta,
    fmt_metric,
    fmt_p,
    header,
    lead_cells,
    lead_header,
)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: .3em .7em; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { border-bottom: 2px solid #444; }
.ci { display: block; color: #777; font-size: 80%; }
.best { font-weight: bold; }
.up { color: #1a7f37; } .down { color: #cf222e; }
.grp { color: #0550ae; font-size: 85%; }
.failed td { color: #cf222e; }
.legend { color: #555; font-size: 90%; }
img { max-width: 48%; margin-right: 1%; }
"""


def _tooltip(test: dict | None) -> str:
    if not test:
        return ""
    return (
        f"Δ {fmt_delta(test.get('delta'))} [{test.get('ci_low', 0):.4f}, {test.get('ci_high', 0):.4f}]; "
        f"p rand {fmt_p(test.get('p_value'))}, p t {fmt_p(test.get('p_t'))}, p Holm {fmt_p(test.get('p_holm'))}; "
        f"W/T/L {test.get('wins', 0)}/{test.get('ties', 0)}/{test.get('losses', 0)}"
    )


def metric_cell(c: Cell, tip: str, esc: Callable[[str], str]) -> str:
    """One mean as an HTML cell: bold when best, its ▲/▼ marker, its letter groups, its CI under it, ``tip`` (the test
    behind the marker) as its tooltip. ``table.html`` and ``report.html`` show a mean the same way;
    ``esc`` escapes text as the page it goes into does."""
    best = ' class="best"' if c.best else ""
    mark = f'<span class="{"up" if c.sig > 0 else "down"}">{c.marker}</span>' if c.marker else ""
    ci = f'<span class="ci">{esc(fmt_ci(c.ci))}</span>' if c.ci else ""
    grp = f' <span class="grp">{esc(c.letters)}</span>' if c.letters else ""
    title = f' title="{esc(tip)}"' if tip else ""
    return f"<td{title}><span{best}>{fmt_metric(c.value)}</span>{mark}{grp}{ci}</td>"


def to_html(table: ComparisonTable, plots: list[str] | None = None) -> str:
    cols = header(table)
    out = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{escape(table.title)}</title><style>{STYLE}</style></head><body>",
        f"<h2>{escape(table.title)}</h2>",
        "<table>",
        "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in cols) + "</tr>",
    ]
    for row in table.rows:
        if row.error is not None:
            names = "".join(f"<td>{escape(c)}</td>" for c in lead_cells(row, table))
            out.append(
                f'<tr class="failed">{names}'
                f'<td colspan="{len(cols) - len(lead_header(table))}" style="text-align:left">'
                f"FAILED: {escape(row.error)}</td></tr>"
            )
            continue
        b, nb = ("<b>", "</b>") if row.baseline else ("", "")
        cells = [f"<td>{b}{escape(c)}{nb}</td>" for c in lead_cells(row, table)]
        cells += [metric_cell(c, _tooltip(c.test), escape) for c in row.metrics.values()]
        for k, c in row.efficiency.items():
            cls = ' class="best"' if c.best else ""
            cells.append(f"<td{cls}>{escape(fmt_cost(k, c))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    out.append('<div class="legend">' + "<br>".join(escape(x) for x in table.legend()) + "</div>")
    detail = detail_rows(table)
    if detail:
        out.append(f"<h3>Against the baseline ({escape(str(table.baseline))})</h3><table>")
        out.append("<tr>" + "".join(f"<th>{escape(c)}</th>" for c in DETAIL_HEADER) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in detail]
        out.append("</table>")
    for p in plots or []:
        name = Path(p).name
        out.append(f'<img src="{escape(name)}" alt="{escape(name)}">')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
