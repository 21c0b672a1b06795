"""The part of ``report.html`` that reads without JavaScript: the comparison table (means, CIs,
markers), the costs, the legend, the tests behind the markers with the power sentence where the
results carry it, the plots inline, failures, and the manifest folded.

Every value comes from :func:`harness.report.table.build_table`, as in every other rendering of the
table; only the layout differs (two tables, quality and cost, so the page fits a laptop screen).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.report.page.embed import text
from harness.report.table import (
    DETAIL_HEADER,
    EFFICIENCY_COLUMNS,
    ComparisonTable,
    detail_rows,
    fmt_ci,
    fmt_cost,
    fmt_delta,
    fmt_metric,
    fmt_p,
    lead_cells,
    lead_header,
)

if TYPE_CHECKING:
    from harness.results import Results

#: plots of two panels, given two columns of the page where it is wide enough
WIDE = ("metric_at_k.png",)
#: the power fields a significance entry may carry (minimum detectable effect at 80% power)
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
        cells = []
        for c in row.metrics.values():
            mark = f'<span class="{"up" if c.sig > 0 else "down"}">{c.marker}</span>' if c.marker else ""
            ci = f'<span class="ci">{text(fmt_ci(c.ci))}</span>' if c.ci else ""
            tip = _tooltip(c.test)
            title = f' title="{text(tip)}"' if tip else ""
            best = ' class="best"' if c.best else ""
            cells.append(f"<td{title}><span{best}>{fmt_metric(c.value)}</span>{mark}{ci}</td>")
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


def power_sentence(results: Results, table: ComparisonTable) -> str | None:
    """ "With 300 queries this set detects ndcg@10 differences of 0.031 or more (80% power); dense's
    +0.012 would need 1,900 queries." for the table's first metric, where the results carry the
    minimum detectable effect; None where they do not."""
    if not table.metrics or table.baseline is None:
        return None
    metric = table.metrics[0]
    parts: list[str] = []
    mde: float | None = None
    for row in table.ok_rows:
        t = (row.metrics.get(metric) and row.metrics[metric].test) or None
        if not t or t.get("mde") is None:
            continue
        mde = t["mde"] if mde is None else mde
        need = t.get("n_for_observed")
        if need is not None and t.get("delta") is not None:
            parts.append(f"{row.name}'s {fmt_delta(t['delta'])} would need {need:,.0f} queries")
    if mde is None:
        return None
    n = len(results.query_ids)
    head = (
        f"With {n:,} queries this set detects {metric} differences of {mde:.3f} or more "
        "(80% power, one comparison, before Holm)"
    )
    return head + ("; " + "; ".join(parts) if parts else "") + "."


def tests_table(results: Results, table: ComparisonTable) -> str:
    """The tests behind the markers (as ``table.md``'s), with the power columns where present."""
    rows = detail_rows(table)
    if not rows:
        return ""
    tests = [(r, m, c.test) for r in table.ok_rows for m, c in r.metrics.items() if c.test]
    power = any(any(f in (t or {}) for f in POWER_FIELDS) for _, _, t in tests)
    header = [*DETAIL_HEADER, *(["MDE (80% power)", "queries for Δ"] if power else [])]
    out = [
        f"<h3>Against the baseline ({text(table.baseline)})</h3>",
        '<div class="scroll"><table id="tests" class="num">',
        "<thead><tr>"
        + "".join(f"<th scope=col{' class=l' if k == 1 else ''}>{text(h)}</th>" for k, h in enumerate(header))
        + "</tr></thead><tbody>",
    ]
    for cells, (_, _, t) in zip(rows, tests):
        extra = [_fmt_power(t, "mde"), _fmt_power(t, "n_for_observed")] if power else []
        tds = "".join(f"<td>{text(c)}</td>" for c in [*cells[2:], *extra])
        out.append(f"<tr><th scope=row>{text(cells[0])}</th><td class=l>{text(cells[1])}</td>{tds}</tr>")
    out.append("</tbody></table></div>")
    sentence = power_sentence(results, table)
    if sentence:
        out.append(f'<p class="power">{text(sentence)}</p>')
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
    ds = results.manifest.get("dataset") or {}
    facts = [
        ("dataset", ds.get("name")),
        ("split", ds.get("split")),
        ("fingerprint", ds.get("fingerprint")),
        ("harness", (results.manifest.get("versions") or {}).get("retrieval-harness")),
        ("commit", (results.manifest.get("git") or {}).get("commit")),
        ("created", results.manifest.get("created")),
    ]
    dl = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in facts if v)
    body = json.dumps(results.manifest, indent=1, ensure_ascii=False, default=str)
    return (
        '<details id="manifest"><summary>Manifest: dataset fingerprint, versions, config</summary>'
        f"<dl>{dl}</dl><pre>{text(body)}</pre></details>"
    )


def legend(table: ComparisonTable) -> str:
    return '<div class="legend">' + "".join(f"<p>{text(x)}</p>" for x in table.legend()) + "</div>"


def failures(table: ComparisonTable) -> str:
    failed = [r for r in table.rows if r.error is not None]
    if not failed:
        return ""
    items = "".join(f"<li><b>{text(r.name)}</b>: <code>{text(r.error)}</code></li>" for r in failed)
    return f'<ul class="failures">{items}</ul>'


def notes(lines: Sequence[str]) -> str:
    return "".join(f'<p class="note">note: {text(n)}</p>' for n in lines)
