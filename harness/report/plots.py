"""Plots of a results folder (PNG, matplotlib's Agg renderer; no pyplot, so no global state):

- ``metric_at_k.png``: nDCG@k and recall@k for k = 1..depth per retriever, computed from the saved
  runs by the metrics core (the same numbers ``harness evaluate`` would give for each k);
- ``quality_latency.png``: the first metric (with its 95% CI) against p50 latency, log x.

Files are written atomically.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.io import atomic
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
    from matplotlib.figure import Figure

    # fixed margins, not layout="constrained": the constrained solver measures every tick label of
    # the log axes several times, ~40% of the time of writing a plot, on every `harness run`
    fig = Figure(figsize=(width, height), dpi=110)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.2 / width, bottom=0.55 / height, top=1 - 0.45 / height)
    fig.subplots_adjust(wspace=0.25)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return atomic.write_bytes(path, buf.getvalue())


def plot_metric_at_k(curves: Mapping[str, Mapping[str, np.ndarray]], path: Path, title: str = "") -> Path:
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
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_quality_latency(results: Results, path: Path, title: str = "") -> Path | None:
    """First metric vs p50 latency; None when no retriever has a latency (run files from elsewhere)."""
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
    ax.set_xscale("log")
    ax.set_xlabel("p50 latency per query (ms, log scale)")
    ax.set_ylabel(f"{metric} (mean, 95% CI)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return _save(fig, path)


def write_plots(results: Results, folder: Path) -> list[Path]:
    """Every plot the attached runs (and efficiency figures) allow; returns the files written."""
    written: list[Path] = []
    title = (results.manifest.get("dataset") or {}).get("name") or ""
    runs, qrels = results.runs, results._qrels
    if runs and qrels:
        depth = int((results.manifest.get("config") or {}).get("depth") or max(r.depth for r in runs.values()))
        depth = max(1, min(depth, max(r.depth for r in runs.values())))
        written.append(plot_metric_at_k(metric_at_k(runs, qrels, depth), folder / CURVES_FILE, title))
    scatter = plot_quality_latency(results, folder / SCATTER_FILE, title)
    if scatter is not None:
        written.append(scatter)
    return written
