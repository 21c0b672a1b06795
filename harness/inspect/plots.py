"""The inspection's pictures (PNG, matplotlib's Agg canvas; no pyplot, so no global state):

- ``<label>-grades.png``: judgments per grade (a set judged all 1 is binary, whatever its metric
  says about grades);
- ``<label>-per-query-<metric>.png``: per retriever, how its per-query scores spread between 0 and
  1: piles at 0 and 1 are the queries that cannot separate retrievers.

Written atomically, each under a new name in a folder the command checked before any work.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.io import png

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from harness.inspect.findings import Inspection
    from harness.results import Results


def _figure(width: float, height: float) -> Figure:
    return png.figure(width, height, dpi=100, margins=(0.8, 0.25, 0.6, 0.5))


def safe_name(label: str) -> str:
    """A label as part of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("._") or "dataset"


def grades_plot(found: Inspection, path: Path) -> Path:
    fig = _figure(5.0, 3.2)
    ax = fig.add_subplot()
    grades = list(found.grades)
    ax.bar(grades, [found.grades[g] for g in grades], color="#4c72b0")
    ax.set_xlabel("grade")
    ax.set_ylabel("judgments")
    ax.set_title(f"{found.dataset['name']}: judgments per grade")
    return png.write_png(fig, path)


def per_query_plot(results: Results, metric: str, path: Path) -> Path:
    """One histogram row per retriever of its per-query ``metric`` (20 bins over [0, 1])."""
    names = [r for r in results.per_query if metric in results.per_query[r]]
    fig = _figure(6.0, 0.9 + 1.1 * len(names))
    bins = np.linspace(0, 1, 21)
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        values = results.scores(name)[metric]
        ax.hist(np.clip(values[np.isfinite(values)], 0, 1), bins=bins, color="#4c72b0")
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[-1].set_xlabel(f"per-query {metric}")
    fig.suptitle(f"per-query {metric} (queries per bin)", fontsize=9)
    return png.write_png(fig, path)


def write_plots(found: Inspection, label: str, results: Results | None, folder: Path) -> list[Path]:
    """Every plot of one inspection into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    base = safe_name(label)
    written = [grades_plot(found, folder / f"{base}-grades.png")]
    if results is not None:
        for metric in found.headroom or {}:
            written.append(per_query_plot(results, metric, folder / f"{base}-per-query-{safe_name(metric)}.png"))
    return written
