"""The part of ``report.html`` that reads without JavaScript: the comparison table (means, CIs,
markers), the costs, the legend, the tests behind the markers with the power sentence where the
results carry it, the plots inline, failures, and the manifest folded.

Every value comes from :func:`harness.results.table.build_table`, as in every other rendering of the
table; only the layout differs (two tables, quality and cost, so the page fits a laptop screen).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.results.html_table import metric_cell
from harness.results.page.embed import text
from harness.results.table import (
    DETAIL_HEADER,
    EFFICIENCY_COLUMNS,
    ComparisonTable,
    detail_rows,
    fmt_cost,
    fmt_delta,
    fmt_p,
    lead_cells,
    lead_header,
)
from harness.stats.allpairs import n_for_target

if TYPE_CHECKING:
    from harness.results import Results

#: plots of two panels, given two columns of the page where it is wide enough
WIDE = ("metric_at_k.png",)
#: the power fields a significance entry may carry (minimum detectable effect at 80% power;
#: :mod:`harness.stats.compare` writes them, results written before it do not)
POWER_FIELDS = ("sd_diff", "mde", "n_for_observed")


def _tooltip(test: dict[str, Any] | None) -> str:
    if not test:
        return ""
    ci = ""
    if test.get("ci_low") is not None and test.get("ci_high") is not None:
        ci = f" [{test['ci_low']:.4f}, {test['ci_high']:.4f}]"
    return (
        f"Δ {fmt_delta(test.get('delta'))}{ci}; p rand {fmt_p(test.get('p_value'))}, p t {fmt_p(test.get('p_t'))}, "
        f"p Holm {fmt_p(test.get('p_holm'))}; W/T/L {test.get('wins', 0)}/{test.get('ties', 0)}/{test.get('losses', 0)}"
    )


def _row_head(row: Any, table: ComparisonTable) -> str:
    cells = lead_cells(row, table)
    first = f'<th scope="row">{text(cells[0])}</th>'
    return first + "".join(f"<td class=l>{text(c)}</td>" for c in cells[1:])


def quality_table(table: ComparisonTable) -> str:
    """Means with their CI under them and the ▲/▼ markers; a failed row spans its error."""
    head = "".join(f"<th scope=col>{text(c)}</th>" for c in lead_header(table))
    head += "".join(f"<th scope=col>{text(m)}</th>" for m in table.metrics)
    out = ['<div class="scroll"><table id="summary" class="num">', f"<thead><tr>{head}</tr></thead><tbody>"]
    for row in table.rows:
        if row.error is not None:
            out.append(
                f'<tr class="failed">{_row_head(row, table)}<td class=l colspan="{max(len(table.metrics), 1)}">'
                f"FAILED: {text(row.error)}</td></tr>"
            )
            continue
        cells = [metric_cell(c, _tooltip(c.test), text) for c in row.metrics.values()]
        cls = ' class="baseline"' if row.baseline else ""
        out.append(f"<tr{cls}>{_row_head(row, table)}{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def cost_table(table: ComparisonTable) -> str:
    """Encode, build, cache, latency and throughput per retriever; empty when nothing was timed."""
    if not table.efficiency:
        return ""
    head = "".join(f"<th scope=col>{text(c)}</th>" for c in lead_header(table))
    head += "".join(f"<th scope=col>{text(EFFICIENCY_COLUMNS[k][0])}</th>" for k in table.efficiency)
    out = ['<h3>Cost</h3><div class="scroll"><table id="cost" class="num">', f"<thead><tr>{head}</tr></thead><tbody>"]
    for row in table.ok_rows:
        cells = "".join(
            f"<td{' class=best' if c.best else ''}>{text(fmt_cost(k, c))}</td>" for k, c in row.efficiency.items()
        )
        out.append(f"<tr>{_row_head(row, table)}{cells}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _fmt_power(t: dict[str, Any] | None, key: str) -> str:
    v = (t or {}).get(key)
    if v is None:
        return "–"
    return f"{v:,.0f}" if key == "n_for_observed" else f"{v:.4f}"


def _power_cell(t: dict[str, Any] | None, key: str) -> str:
    """One power figure; where it is null, a dash whose tooltip says why (zero variance, n < 2)."""
    why = (t or {}).get("power_reason")
    title = f' title="{text(why)}"' if why and (t or {}).get(key) is None else ""
    return f"<td{title}>{text(_fmt_power(t, key))}</td>"


def tests_table(results: Results, table: ComparisonTable) -> str:
    """The tests behind the markers (as ``table.md``'s), with the power columns where present."""
    rows = detail_rows(table)
    if not rows:
        return ""
    tests = [(r, m, c.test) for r in table.ok_rows for m, c in r.metrics.items() if c.test]
    power = any((t or {}).get(f) is not None for _, _, t in tests for f in POWER_FIELDS)
    header = [*DETAIL_HEADER, *(["MDE (80% power)", "queries for Δ"] if power else [])]
    out = [
        f"<h3>Against the baseline ({text(table.baseline)})</h3>",
        '<div class="scroll"><table id="tests" class="num">',
        "<thead><tr>"
        + "".join(f"<th scope=col{' class=l' if k == 1 else ''}>{text(h)}</th>" for k, h in enumerate(header))
        + "</tr></thead><tbody>",
    ]
    for cells, (_, _, t) in zip(rows, tests):
        tds = "".join(f"<td>{text(c)}</td>" for c in cells[2:])
        if power:
            tds += _power_cell(t, "mde") + _power_cell(t, "n_for_observed")
        out.append(f"<tr><th scope=row>{text(cells[0])}</th><td class=l>{text(cells[1])}</td>{tds}</tr>")
    out.append("</tbody></table></div>")
    # what the set can detect, in words (harness.stats.power.sentence; the legend carries it too)
    out += [f'<p class="power">{text(line)}</p>' for line in table.power_lines()]
    return "\n".join(out)


def image(data: bytes, alt: str, caption: str = "", *, wide: bool = False) -> str:
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    cap = f"<figcaption>{text(caption)}</figcaption>" if caption else ""
    cls = ' class="wide"' if wide else ""
    return f'<figure{cls}><img src="{src}" alt="{text(alt)}">{cap}</figure>'


def plots(files: Iterable[Path], captions: dict[str, str]) -> str:
    """The PNGs written beside the page, embedded (``img-src data:``: the page names no other file)."""
    figs = []
    for p in files:
        try:
            data = Path(p).read_bytes()
        except OSError:
            continue
        name = Path(p).name
        figs.append(image(data, name, captions.get(name, ""), wide=name in WIDE))
    return f'<div class="plots">{"".join(figs)}</div>' if figs else ""


def manifest(results: Results) -> str:
    """The manifest (dataset fingerprint, versions, config) folded: there when a reviewer asks."""
    from harness.results.manifest import Manifest

    m = Manifest.of(results)
    ds = m.dataset.data
    facts = [
        ("dataset", ds.get("name")),
        ("split", ds.get("split")),
        ("fingerprint", ds.get("fingerprint")),
        ("harness", m.versions.get("retrieval-harness")),
        ("commit", m.git.get("commit")),
        ("created", m.created),
    ]
    dl = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in facts if v)
    body = json.dumps(results.manifest, indent=1, ensure_ascii=False, default=str)
    return (
        '<details id="manifest"><summary>Manifest: dataset fingerprint, versions, config</summary>'
        f"<dl>{dl}</dl><pre>{text(body)}</pre></details>"
    )


def legend(table: ComparisonTable) -> str:
    """The legend's lines, but the power sentences: the page puts those under the tests."""
    power = set(table.power_lines())
    return '<div class="legend">' + "".join(f"<p>{text(x)}</p>" for x in table.legend() if x not in power) + "</div>"


def failures(table: ComparisonTable) -> str:
    failed = [r for r in table.rows if r.error is not None]
    if not failed:
        return ""
    items = "".join(f"<li><b>{text(r.name)}</b>: <code>{text(r.error)}</code></li>" for r in failed)
    return f'<ul class="failures">{items}</ul>'


def notes(lines: Sequence[str]) -> str:
    return "".join(f'<p class="note">note: {text(n)}</p>' for n in lines)


#: the swap-rate chart's box (SVG user units) and its margins: left, right, top, bottom
SWAP_W, SWAP_H = 480, 240
SWAP_M = (52, 12, 12, 36)


def swap_chart(metric: str, points: Sequence[Any], draws: int) -> str:
    """The swap rate against the set size as an inline SVG (no script, no style attribute: the page's
    policy allows neither), with the 5% line; empty without points. Each point's ``<title>`` is its
    figure; a table under it carries the same numbers for a reader without the chart. A size whose
    rate is undefined (every draw tied on the first set) has no point; the caption says from which
    size the rate stays under 5% (``n_for_5pct`` of ``harness power --all-pairs``)."""
    if not points:
        return ""
    left, right, top, bottom = SWAP_M
    n_max = max(p.n for p in points)
    drawn = [p for p in points if p.rate is not None]
    y_max = max(0.1, math.ceil(max((p.rate for p in drawn), default=0.0) * 10) / 10)
    w, h = SWAP_W - left - right, SWAP_H - top - bottom

    def xy(n: float, rate: float) -> tuple[float, float]:
        return left + w * n / n_max, top + h * (1 - rate / y_max)

    out = [f'<svg viewBox="0 0 {SWAP_W} {SWAP_H}" role="img" aria-label="swap rate against set size">']
    for k in range(0, round(y_max * 10) + 1):  # horizontal grid every 0.1
        _, y = xy(0, k / 10)
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d8dee4"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{k / 10:.1f}</text>')
    _, y5 = xy(0, 0.05)
    out.append(
        f'<line class="target" x1="{left}" x2="{left + w}" y1="{y5:.1f}" y2="{y5:.1f}" stroke="#cf222e" '
        'stroke-dasharray="4 3"/>'
    )
    coords = [xy(p.n, p.rate) for p in drawn]
    out.append(
        '<polyline fill="none" stroke="#0969da" stroke-width="2" points="'
        + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        + '"/>'
    )
    for p, (x, y) in zip(drawn, coords):
        out.append(
            f'<circle class="pt" data-n="{p.n}" data-rate="{p.rate:.4f}" cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
            f'fill="#0969da"><title>n = {p.n}: swap rate {p.rate:.3f}</title></circle>'
        )
    for p in points:
        x, _ = xy(p.n, 0)
        out.append(f'<text x="{x:.1f}" y="{top + h + 16}" text-anchor="middle">{p.n}</text>')
    out.append(f'<text x="{left + w / 2:.1f}" y="{SWAP_H - 4}" text-anchor="middle">queries per set (n)</text>')
    mid = top + h / 2
    out.append(f'<text x="12" y="{mid:.1f}" text-anchor="middle" transform="rotate(-90 12 {mid:.1f})">swap rate</text>')
    out.append("</svg>")
    rows = "".join(
        f"<tr><th scope=row>{p.n}</th><td>{'—' if p.rate is None else f'{p.rate:.3f}'}</td>"
        f"<td>{p.first_tie_share:.3f}</td></tr>"
        for p in points
    )
    n5 = n_for_target(points)
    under = (
        f"Under 5% from n = {n5} on, at every larger n. " if n5 is not None
        else f"Not under 5% at n = {points[-1].n}, the largest n: too few queries to order these retrievers reliably. "
    )  # fmt: skip
    caption = (
        f"Swap rate on {metric}: the share of retriever pairs that two disjoint sets of n queries order oppositely "
        f"({draws:,} draws per n; Voorhees and Buckley, SIGIR 2002), over the pairs whose means differ on the first "
        f"set (a tie on the second counts half a swap). Dashed: 5%. {under}"
        "harness power DIR --all-pairs gives it per bin of the difference."
    )
    return (
        f'<section id="swap"><h3>Would another set order them the same way?</h3><figure>{"".join(out)}'
        f"<figcaption>{text(caption)}</figcaption></figure>"
        '<details><summary>The numbers</summary><table class="num"><thead><tr><th scope=col>n</th>'
        "<th scope=col>swap rate</th><th scope=col>tied on the first set</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details></section>"
    )
