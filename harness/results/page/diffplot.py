"""The per-query difference plot: one retriever against the baseline, every query's difference on a
metric, sorted, as bars coloured by win (green), tie (grey) and loss (red).

What a mean hides and this shows: whether "+0.02" is a few queries gained a lot, many gained a
little, or large gains and large losses that nearly cancel (papers draw it for that reason).
Written as ``perquery_<retriever>.png`` and embedded in ``report.html``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.io import png
from harness.results.folder import run_stem
from harness.results.plots import _figure

if TYPE_CHECKING:
    from harness.results import Results

WIN, TIE, LOSS = "#1a7f37", "#9a9a9a", "#cf222e"


def file_name(retriever: str) -> str:
    return f"perquery_{run_stem(retriever)}.png"


def sorted_deltas(results: Results, retriever: str, baseline: str, metric: str) -> np.ndarray:
    """Per-query ``retriever - baseline`` on ``metric``, NaN left out, sorted ascending."""
    d = results.scores(retriever)[metric] - results.scores(baseline)[metric]
    return np.sort(d[np.isfinite(d)])


def plot(results: Results, retriever: str, baseline: str, metric: str, path: Path) -> Path:
    d = sorted_deltas(results, retriever, baseline, metric)
    fig = _figure(7.0, 3.2)
    ax = fig.subplots()
    x = np.arange(len(d))
    # one filled step curve per colour, not one bar per query: a bar is an artist of its own, and
    # 25,000 of them take minutes to draw
    ax.fill_between(x, d, 0.0, where=d < 0, step="mid", color=LOSS, linewidth=0)
    ax.fill_between(x, d, 0.0, where=d > 0, step="mid", color=WIN, linewidth=0)
    ties = np.flatnonzero(d == 0)
    if ties.size:  # sorted, so the ties are one run: a grey band on the axis
        ax.hlines(0.0, ties[0] - 0.5, ties[-1] + 0.5, color=TIE, linewidth=4)
    ax.axhline(0.0, color="#444", linewidth=0.8)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    ax.set_title(
        f"{retriever} − {baseline}, {metric}: {wins} wins, {len(d) - wins - losses} ties, {losses} losses",
        fontsize="medium",
    )
    ax.set_xlabel("queries, sorted by difference")
    ax.set_ylabel(f"Δ {metric}")
    ax.set_xlim(-0.5, max(len(d) - 0.5, 0.5))
    ax.grid(True, axis="y", alpha=0.3)
    return png.write_png(fig, path)


def write_diff_plots(results: Results, folder: Path) -> list[Path]:
    """One plot per retriever other than the baseline, on the first metric; none without a baseline."""
    baseline = results.baseline
    if baseline not in results.per_query or not results.metrics:
        return []
    metric = results.metrics[0]
    return [
        plot(results, r, baseline, metric, Path(folder) / file_name(r))
        for r in results.per_query
        if r != baseline and r in results.summary and metric in results.per_query[r]
    ]
