"""What a blind gate cannot see, said once: one table of the blind checks instead of a line each, and no
detectable drop larger than the metric can move.

``harness check`` on the demo printed 24 near-identical 210-character ``blind:`` lines (six facts), and on a
3-query set "drops under 3.147 are invisible" for nDCG, a metric between 0 and 1. The text and
markdown renderers (:mod:`harness.gate.render`) print :func:`text_block` / :func:`markdown_block`: a
sentence with what every row shares (power, alpha, what the columns mean), wrapped to the terminal, then
the table. A drop beyond the metric's declared range (:func:`harness.metrics.names.bounds_of`) is never
printed: such a check detects no drop at all, and says so.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

from harness.metrics.names import bounds_of

#: the cell of a check that detects no drop (the one it would need is beyond the metric's range, or it has
#: fewer than 2 common queries)
NONE = "none"


def detects_nothing(metric: str, mde: float | None) -> bool:
    """True when no drop of ``metric`` can be detected: no detectable drop was computed (fewer than 2 common
    queries), or the smallest detectable one is larger than the metric's whole range."""
    if mde is None:
        return True
    bounds = bounds_of(metric)
    return bounds is not None and mde > bounds[1] - bounds[0]


def mde_cell(metric: str, mde: float | None) -> str:
    """``0.0412``, ``none`` for a drop beyond the metric's range, ``""`` where no mde was computed."""
    if mde is None:
        return ""
    return NONE if detects_nothing(metric, mde) else f"{mde:.4f}"


def blind_rows(report: Any) -> list[Any]:
    return [r for r in report.rows if r.blind]


def _cells(r: Any) -> list[str]:
    detects = NONE if detects_nothing(r.metric, r.mde) else f"{r.mde:.4f}"
    source = "baseline" if r.sd_source == "baseline estimate" else "observed"
    sd = "" if r.sd_used is None or r.mde is None else f"{r.sd_used:.4f} ({source})"
    needs = f"{r.queries_needed:,}" if r.queries_needed else "–"
    return [r.retriever, r.metric, f"{r.queries:,}", f"{r.tolerance:g}", detects, sd, needs]


HEADER = ["retriever", "metric", "queries", "tolerance", "detects", "sd", "needs"]
#: the columns aligned right (numbers)
RIGHT = {2, 3, 4, 6}


def _sentence(report: Any, rows: Sequence[Any]) -> str:
    n = len(rows)
    checks = "check cannot see a drop as large as its" if n == 1 else "checks cannot see a drop as large as their"
    text = (
        f"blind: {n} {checks} tolerance ({report.power_target:.0%} power, alpha "
        f"{report.alpha:g}): detects = the smallest drop the check detects, sd = that of the per-query differences "
        "(observed, or the baseline's estimate where larger), needs = the queries the tolerance would need"
    )
    if any(_cells(r)[4] == NONE for r in rows):
        text += "; none: no drop can be detected (fewer than 2 common queries, or more queries than a drop within "
        text += "the metric's range needs)"
    return text


def text_block(report: Any, width: int | None = None) -> list[str]:
    """The sentence wrapped to ``width`` (the terminal's when None), then the table; [] when not blind."""
    rows = blind_rows(report)
    if not rows:
        return []
    width = width or shutil.get_terminal_size((100, 24)).columns
    body = [_cells(r) for r in rows]
    widths = [max(len(x) for x in col) for col in zip(HEADER, *body)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = textwrap.wrap(_sentence(report, rows), width=max(40, width), break_on_hyphens=False)
    out += [line(HEADER).rstrip(), line(["-" * w for w in widths]).rstrip(), *(line(b).rstrip() for b in body)]
    return out


def markdown_block(report: Any, escape: Any) -> list[str]:
    """The sentence, then a markdown table (cells through ``escape``); [] when not blind."""
    rows = blind_rows(report)
    if not rows:
        return []
    out = [f"- {escape(_sentence(report, rows))}", "", "| " + " | ".join(HEADER) + " |"]
    out.append("|" + "|".join("---:" if i in RIGHT else "---" for i in range(len(HEADER))) + "|")
    out += ["| " + " | ".join(escape(c) for c in _cells(r)) + " |" for r in rows]
    return [*out, ""]
