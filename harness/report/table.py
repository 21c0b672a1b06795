"""The comparison table: rows = retrievers, columns = metrics and efficiency."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from harness.results import Results

EFFICIENCY_COLUMNS = {
    "index_seconds": "index s",
    "latency_ms_p50": "p50 ms",
    "latency_ms_p95": "p95 ms",
    "qps": "qps",
}


def comparison_frame(results: Results) -> pd.DataFrame:
    """One row per retriever: metric means, then efficiency."""
    rows = []
    for name in results.summary:
        row = dict(results.summary[name])
        eff = results.efficiency.get(name, {})
        for key, label in EFFICIENCY_COLUMNS.items():
            row[label] = eff.get(key)
        rows.append(pd.Series(row, name=name))
    for name, error in results.failures.items():
        rows.append(pd.Series({"error": error}, name=name))
    return pd.DataFrame(rows)


def _fmt(value: object, column: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    if isinstance(value, float):
        if column in EFFICIENCY_COLUMNS.values():
            return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
        return f"{value:.4f}"
    return str(value)


def to_markdown(results: Results) -> str:
    frame = comparison_frame(results)
    cols = [c for c in frame.columns if c != "error"]
    head = "| retriever | " + " | ".join(cols) + " |"
    sep = "|---|" + "|".join("---:" for _ in cols) + "|"
    lines = [head, sep]
    for name, row in frame.iterrows():
        if name in results.failures:
            lines.append(f"| {name} | FAILED: {results.failures[name]} " + "|" * len(cols))
            continue
        lines.append(f"| {name} | " + " | ".join(_fmt(row[c], c) for c in cols) + " |")
    return "\n".join(lines) + "\n"
