"""``report.html`` of a stream folder: per retriever, engine against exact over the checkpoints (the first
metric) and time to retrievable, drawn as inline SVG (no script, no download), with what the gap means."""

from __future__ import annotations

import html
from typing import Any

W, H, PAD = 520, 220, 40


def _points(values: list[float | None], lo: float, hi: float) -> list[tuple[float, float, float]]:
    n = max(1, len(values) - 1)
    span = (hi - lo) or 1.0
    return [
        (PAD + i * (W - 2 * PAD) / n, H - PAD - (v - lo) / span * (H - 2 * PAD), v)
        for i, v in enumerate(values)
        if v is not None
    ]


def _line(values: list[float | None], lo: float, hi: float, colour: str, dash: str = "") -> str:
    pts = _points(values, lo, hi)
    if not pts:
        return ""
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{v:.4f}</title></circle>'
                   for x, y, v in pts)  # fmt: skip
    return f'<polyline fill="none" stroke="{colour}" stroke-width="2" {dash} points="{path}"/>{dots}'


def _chart(title: str, series: list[tuple[str, list[float | None], str, str]], n: int) -> str:
    got = [v for _, vals, _, _ in series for v in vals if v is not None]
    lo, hi = (min(got), max(got)) if got else (0.0, 1.0)
    lo, hi = (lo - 0.05 * ((hi - lo) or 1), hi + 0.05 * ((hi - lo) or 1))
    lines = "".join(_line(vals, lo, hi, colour, dash) for _, vals, colour, dash in series)
    ticks = "".join(f'<text x="{x:.1f}" y="{H - PAD + 16}" font-size="11" text-anchor="middle">cp{i}</text>'
                    for i, (x, _, _) in enumerate(_points([0.0] * n, 0, 1)))  # fmt: skip
    legend = " · ".join(f'<span style="color:{c}">{html.escape(name)}</span>' for name, _, c, _ in series)
    return (
        f"<figure><figcaption>{html.escape(title)}: {legend} (y {lo:.3f} to {hi:.3f})</figcaption>"
        f'<svg width="{W}" height="{H}" role="img"><rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" '
        f'height="{H - 2 * PAD}" fill="none" stroke="#ccc"/>{lines}{ticks}</svg></figure>'
    )


def to_html(doc: dict[str, Any]) -> str:
    metric = (doc.get("metrics") or ["ndcg@10"])[0]
    parts = []
    for name, rec in doc.get("retrievers", {}).items():
        cps = rec.get("checkpoints", [])
        eng = [c["metrics"].get(metric) for c in cps]
        ex = [c["exact"].get(metric) for c in cps]
        p50 = [c["retrievable_s"]["p50"] for c in cps]
        p99 = [c["retrievable_s"]["p99"] for c in cps]
        parts.append(f"<h2>{html.escape(name)} ({html.escape(str(rec.get('type')))})</h2>")
        if rec.get("error"):
            parts.append(f"<p><b>Failed</b>: {html.escape(str(rec['error']))}</p>")
        parts.append(_chart(f"{metric}", [("engine", eng, "#1f77b4", ""),
                                          ("exact over the same visible documents", ex, "#d62728",
                                           'stroke-dasharray="5,4"')], len(cps)))  # fmt: skip
        if any(v is not None for v in p50):
            parts.append(_chart("seconds to retrievable", [("p50", p50, "#2ca02c", ""),
                                                          ("p99", p99, "#9467bd", 'stroke-dasharray="5,4"')],
                                len(cps)))  # fmt: skip
    note = (
        f"The dashed line is an exact index built fresh over the documents visible at each checkpoint: the "
        f"gap between it and the engine is the index's own loss (approximate search, deleted rows still "
        f"served, old versions); what both lack against a run over the whole corpus is the corpus's, the "
        f"documents not inserted yet. {metric} is over the queries with a visible relevant document."
    )
    state = "" if doc.get("complete") else "<p><b>Incomplete</b>: the stream was interrupted.</p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>harness stream</title></head>"
        f"<body style='font-family:sans-serif'><h1>Quality while the index changes</h1>{state}"
        f"<p>{html.escape(note)}</p>{''.join(parts)}</body></html>\n"
    )
