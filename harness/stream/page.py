"""``report.html`` of a stream folder: per retriever, engine against exact over the checkpoints (the first
metric) and time to retrievable, drawn as inline SVG (no script, no download), with what the gap means;
then a table of every checkpoint's probes, writes and latency. The header names the dataset and the date.

The charts have y ticks and a labelled x axis, and the engine (solid, filled dots) is told apart from the
exact index (dashed, hollow squares, drawn under it) even where the two coincide.
"""

from __future__ import annotations

import html
from typing import Any

from harness.stream.render import COMPOSED_NOTE, composed_type
from harness.stream.results import Checkpoint, StreamResults

W, H, PAD, LEFT = 560, 240, 36, 64
TICKS = 5


def _x(i: int, n: int) -> float:
    return LEFT + i * (W - LEFT - PAD) / max(1, n - 1)


def _y(v: float, lo: float, hi: float) -> float:
    return H - PAD - (v - lo) / ((hi - lo) or 1.0) * (H - 2 * PAD)


def _points(values: list[float | None], lo: float, hi: float) -> list[tuple[float, float, float]]:
    return [(_x(i, len(values)), _y(v, lo, hi), v) for i, v in enumerate(values) if v is not None]


def _marker(x: float, y: float, v: float, colour: str, hollow: bool) -> str:
    title = f"<title>{v:.4f}</title>"
    if hollow:
        return (f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="white" stroke="{colour}" '
                f'stroke-width="1.5">{title}</rect>')  # fmt: skip
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">{title}</circle>'


def _line(values: list[float | None], lo: float, hi: float, colour: str, dash: str, hollow: bool) -> str:
    pts = _points(values, lo, hi)
    if not pts:
        return ""
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
    width = 5 if hollow else 2  # wider and under the engine: a red edge shows where the two coincide
    dots = "".join(_marker(x, y, v, colour, hollow) for x, y, v in pts)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="{width}" {dash} points="{path}"/>{dots}'


def _axes(lo: float, hi: float, n: int, unit: str) -> str:
    """Y ticks with their values and gridlines, x ticks at each checkpoint, and both axes' names."""
    out = []
    for t in range(TICKS):
        v = lo + (hi - lo) * t / (TICKS - 1)
        y = _y(v, lo, hi)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - PAD}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{v:.3g}</text>')
    for i in range(n):
        x = _x(i, n)
        out.append(f'<line x1="{x:.1f}" y1="{H - PAD}" x2="{x:.1f}" y2="{H - PAD + 4}" stroke="#444"/>')
        out.append(f'<text x="{x:.1f}" y="{H - PAD + 16}" font-size="11" text-anchor="middle">{i}</text>')
    out.append(f'<line x1="{LEFT}" y1="{PAD}" x2="{LEFT}" y2="{H - PAD}" stroke="#444"/>')
    out.append(f'<line x1="{LEFT}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#444"/>')
    mid = (LEFT + W - PAD) / 2
    out.append(f'<text x="{mid:.1f}" y="{H - 4}" font-size="11" text-anchor="middle">checkpoint</text>')
    out.append(f'<text x="12" y="{H / 2:.1f}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {H / 2:.1f})">{html.escape(unit)}</text>')  # fmt: skip
    return "".join(out)


Series = tuple[str, list[float | None], str, str, bool]


def _key(name: str, colour: str, dash: str, hollow: bool) -> str:
    sample = (f'<svg width="34" height="12"><line x1="2" y1="6" x2="32" y2="6" stroke="{colour}" '
              f'stroke-width="{3 if hollow else 2}" {dash}/>{_marker(17, 6, 0.0, colour, hollow)}</svg>')  # fmt: skip
    return f"{sample} {html.escape(name)}"


def _chart(title: str, unit: str, series: list[Series], n: int) -> str:
    got = [v for _, vals, _, _, _ in series for v in vals if v is not None]
    lo, hi = (min(got), max(got)) if got else (0.0, 1.0)
    pad = 0.05 * ((hi - lo) or abs(hi) or 1.0)
    lo, hi = lo - pad, hi + pad
    # the exact index first, so the engine's line is drawn over it and both show where they coincide
    lines = "".join(_line(vals, lo, hi, colour, dash, hollow) for _, vals, colour, dash, hollow in reversed(series))
    keys = " &nbsp; ".join(_key(name, colour, dash, hollow) for name, _, colour, dash, hollow in series)
    return (
        f"<figure><figcaption><b>{html.escape(title)}</b> &nbsp; {keys}</figcaption>"
        f'<svg width="{W}" height="{H}" role="img" aria-label="{html.escape(title)}">'
        f"{_axes(lo, hi, n, unit)}{lines}</svg></figure>"
    )


def _num(v: Any, fmt: str) -> str:
    return "–" if v is None else format(v, fmt)


def _table(cps: list[Checkpoint], metric: str) -> str:
    head = ["checkpoint", "visible", metric, "exact", "ghost hits", "stale hits", "blinks", "short",
            "writes/s", "encode s", "cache", "latency p50 ms", "p99 ms"]  # fmt: skip
    rows = []
    for c in cps:
        gh, st, lat = c.ghost_hits, c.stale_hits, c.latency_ms
        cells = [
            str(c.checkpoint), f"{c.visible:,}", _num(c.metrics.get(metric), ".4f"),
            _num(c.exact.get(metric), ".4f"), f"{gh.hits}/{gh.probes}", f"{st.hits}/{st.probes}",
            str(c.blinks), str(c.short_results), _num(c.write_rate, ",.0f"),
            _num(c.encode_s, ".2f"), c.cache or "–", _num(lat.p50, ".1f"),
            _num(lat.p99, ".1f"),
        ]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells) + "</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table class='cps'><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _about(doc: StreamResults) -> str:
    ds = doc.dataset
    what = f"{ds.get('name', '?')} ({ds.get('split', '?')}, {ds.get('documents', 0):,} documents, " \
           f"{doc.queries:,} queries)"  # fmt: skip
    when = doc.created
    return f"dataset {what}" + (f"; streamed {when}" if when else "") + f"; harness {doc.version}"


def to_html(doc: StreamResults) -> str:
    metric = doc.metric
    parts = []
    for name, rec in doc.retrievers.items():
        cps = rec.checkpoints
        eng = [c.metrics.get(metric) for c in cps]
        ex = [c.exact.get(metric) for c in cps]
        p50 = [c.retrievable_s.p50 for c in cps]
        p99 = [c.retrievable_s.p99 for c in cps]
        parts.append(f"<h2>{html.escape(name)} ({html.escape(composed_type(rec))})</h2>")
        if rec.team_copy:  # a connected vector database: the figures are its copy's, the team's store was only read
            parts.append(f"<p>{html.escape(rec.team_copy)}</p>")
        if rec.error:
            parts.append(f"<p><b>Failed</b>: {html.escape(rec.error)}</p>")
        parts.append(_chart(metric, metric, [
            ("engine", eng, "#1f77b4", "", False),
            ("exact index over the same visible documents", ex, "#d62728", 'stroke-dasharray="6,4"', True),
        ], len(cps)))  # fmt: skip
        if any(v is not None for v in p50):
            parts.append(_chart("seconds to retrievable", "seconds", [
                ("p50", p50, "#2ca02c", "", False), ("p99", p99, "#9467bd", 'stroke-dasharray="6,4"', True),
            ], len(cps)))  # fmt: skip
        parts.append(_table(cps, metric))
    note = (
        f"The dashed line with hollow squares is an exact index built fresh over the documents visible at each "
        f"checkpoint: the gap between it and the engine (solid, filled dots) is the index's own loss "
        f"(approximate search, deleted rows still served, old versions); what both lack against a run over the "
        f"whole corpus is the corpus's, the documents not inserted yet. {metric} is over the queries with a "
        f"visible relevant document. Ghost and stale hits are probes (hits/probes); writes/s includes encoding "
        f"(encode s), cold: embeddings computed, warm: read from the cache."
    )
    if any((r.config or {}).get("of") for r in doc.retrievers.values()):
        note += f" Below, {COMPOSED_NOTE}."
    state = "" if doc.complete else "<p><b>Incomplete</b>: the stream was interrupted.</p>"
    style = ("body{font-family:sans-serif} table.cps{border-collapse:collapse;font-size:12px;margin:8px 0 24px}"
             "table.cps td,table.cps th{border:1px solid #ddd;padding:2px 6px;text-align:right}")  # fmt: skip
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>harness stream</title>"
        f"<style>{style}</style></head><body><h1>Quality while the index changes</h1>"
        f"<p>{html.escape(_about(doc))}</p>{state}"
        f"<p>{html.escape(note)}</p>{''.join(parts)}</body></html>\n"
    )
