"""Plots of a results folder (PNG, matplotlib's Agg renderer; no pyplot, so no global state):

- ``metric_at_k.png``: nDCG@k and recall@k for k = 1..depth per retriever, computed from the saved
  runs by the metrics core (the same numbers ``harness evaluate`` would give for each k);
- ``quality_latency.png``: the first metric (with its 95% CI) against p50 latency, log x.

Files are written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.io import png
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.metrics.names import Metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from harness.results import Results
    from harness.run import Run

CURVE_KINDS = ("ndcg", "recall")
CURVES_FILE = "metric_at_k.png"
SCATTER_FILE = "quality_latency.png"


def metric_at_k(
    runs: Mapping[str, Run], qrels: Mapping[str, Mapping[str, int]], depth: int, kinds=CURVE_KINDS
) -> dict[str, dict[str, np.ndarray]]:
    """``{retriever: {kind: means for k = 1..depth}}``, from the metrics core."""
    cq = CompiledQrels(qrels)
    metrics = [Metric(kind, k) for kind in kinds for k in range(1, depth + 1)]
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, run in runs.items():
        means = evaluate_run(cq, run, metrics).means()
        out[name] = {kind: np.array([means[f"{kind}@{k}"] for k in range(1, depth + 1)]) for kind in kinds}
    return out


def _figure(width: float, height: float) -> Figure:
    # fixed margins (png.figure): on the log axes, constrained layout took ~40% of the time of
    # writing a plot, on every `harness run`
    fig = png.figure(width, height, dpi=110, margins=(0.75, 0.2, 0.55, 0.45))
    fig.subplots_adjust(wspace=0.25)
    return fig


def plot_metric_at_k(curves: Mapping[str, Mapping[str, np.ndarray]], path: Path, title: str = "") -> Path:
    return png.write_png(metric_at_k_figure(curves, title), path)


def metric_at_k_figure(curves: Mapping[str, Mapping[str, np.ndarray]], title: str = "") -> Figure:
    """One panel per curve kind; each y axis spans its curves (padded), not 0-1: curves that all lie in
    0.75-0.9 squeezed into the top fifth of a 0-1 axis hide the differences the plot is for."""
    kinds = list(next(iter(curves.values())))
    fig = _figure(5.2 * len(kinds), 4.2)
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    labels = {"ndcg": "nDCG@k", "recall": "recall@k"}
    for ax, kind in zip(axes, kinds):
        for i, (name, c) in enumerate(curves.items()):
            ks = np.arange(1, len(c[kind]) + 1)
            ax.plot(ks, c[kind], label=name, linewidth=1.6, linestyle=("-", "--", "-.", ":")[(i // 10) % 4])
        ax.set_xlabel("k")
        ax.set_ylabel(labels.get(kind, f"{kind}@k"))
        ax.set_xscale("log")
        ax.set_ylim(*value_limits(np.concatenate([np.asarray(c[kind], dtype=float) for c in curves.values()])))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def value_limits(values: np.ndarray, *, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """y limits that frame ``values`` with 8% of their range (at least 0.02) either side, kept within
    ``[low, high]`` plus a hair so a curve at 1.0 is not drawn on the frame."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return low, high + 0.02
    lo, hi = float(v.min()), float(v.max())
    pad = max(0.08 * (hi - lo), 0.02)
    return max(low, lo - pad), min(high + 0.02, hi + pad)


def plot_quality_latency(results: Results, path: Path, title: str = "") -> Path | None:
    """First metric vs p50 latency; None when no retriever has a latency (run files from elsewhere)."""
    fig = quality_latency_figure(results, title)
    return None if fig is None else png.write_png(fig, path)


def quality_latency_figure(results: Results, title: str = "") -> Figure | None:
    metric = results.metrics[0] if results.metrics else None
    points = []
    for name, means in results.summary.items():
        lat = (results.efficiency.get(name) or {}).get("latency_ms_p50")
        if metric is None or lat is None or lat <= 0:
            continue
        ci = results.intervals.get(name, {}).get(metric)
        points.append((name, float(lat), means[metric], ci))
    if not points:
        return None
    fig = _figure(6.4, 4.6)
    ax = fig.subplots()
    for name, x, y, ci in points:
        yerr = None if not ci else [[max(0.0, y - ci[0])], [max(0.0, ci[1] - y)]]
        ax.errorbar([x], [y], yerr=yerr, fmt="o", capsize=3, label=name)
    plain_log_x(ax, [x for _, x, _, _ in points])
    ax.set_xlabel("p50 latency per query (ms, log scale)")
    ax.set_ylabel(f"{metric} (mean, 95% CI)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def plain_log_x(ax: Any, values: Sequence[float]) -> None:
    """A log x axis over ``values`` labelled in plain numbers at 1-2-5 steps (``0.05``, ``0.1``, ``20``).

    Matplotlib labels a log axis that spans less than a decade with minor ticks such as
    ``6x10^-2``: correct, and unreadable next to "ms". The limits are padded (x1.6 either side) and,
    if that holds fewer than two 1-2-5 steps, widened to the steps around the values, so a single
    point still sits between labelled ticks.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    v = np.asarray([x for x in values if x > 0], dtype=float)
    lo, hi = float(v.min()) / 1.6, float(v.max()) * 1.6
    decades = range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 2)
    steps = [m * 10.0**e for e in decades for m in (1, 2, 5)]
    if sum(lo <= t <= hi for t in steps) < 2:
        lo = max([t for t in steps if t <= lo], default=lo)
        hi = min([t for t in steps if t >= hi], default=hi)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(FixedLocator([t for t in steps if lo <= t <= hi]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: fmt_plain(x)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def fmt_plain(x: float) -> str:
    """``0.05``, ``0.1``, ``2``, ``500``, ``2000``: a tick label with no exponent."""
    return f"{x:.10f}".rstrip("0").rstrip(".") if x < 1 else f"{x:,.0f}"


def write_plots(results: Results, folder: Path) -> list[Path]:
    """Every plot the attached runs (and efficiency figures) allow; returns the files written."""
    from harness.results.manifest import Manifest

    written: list[Path] = []
    m = Manifest.of(results)
    title = m.dataset.data.get("name") or ""
    runs, qrels = results.runs, results._qrels
    if runs and qrels:
        depth = int(m.config.get("depth") or max(r.depth for r in runs.values()))
        depth = max(1, min(depth, max(r.depth for r in runs.values())))
        written.append(plot_metric_at_k(metric_at_k(runs, qrels, depth), folder / CURVES_FILE, title))
    scatter = plot_quality_latency(results, folder / SCATTER_FILE, title)
    if scatter is not None:
        written.append(scatter)
    return written
