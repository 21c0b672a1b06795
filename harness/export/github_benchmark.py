"""github-action-benchmark's ``customBiggerIsBetter`` JSON: one entry per retriever x metric.

The action keeps every entry's ``value`` per commit and draws it on a page, alerting when a value
falls; it reads a JSON list of ``{"name", "unit", "value", "range"?, "extra"?}``. ``name`` is
``"retriever metric"`` (``"[dataset] retriever metric"`` inside a suite), ``value`` the mean exactly
as ``results.json`` holds it (unrounded), ``range`` the bootstrap confidence interval where the
folder has one, ``extra`` what the value rests on (dataset, split, queries, commit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.export.source import Source


def entries(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Every retriever x metric of every dataset, in the folder's order."""
    out: list[dict[str, Any]] = []
    for s in sources:
        where = f"[{s.dataset}] " if s.dataset else ""
        ds = s.manifest.dataset
        commit = str(s.manifest.git.get("commit") or "")[:12]
        extra = f"dataset {s.dataset_name} ({ds.split}, {len(s.results.query_ids):,} queries)"
        extra += f"; commit {commit}" if commit else ""
        for retriever, scores in s.results.summary.items():
            for metric, value in scores.items():
                entry: dict[str, Any] = {"name": f"{where}{retriever} {metric}", "unit": metric, "value": value}
                ci = (s.results.intervals.get(retriever) or {}).get(metric)
                if ci and len(ci) == 2:
                    entry["range"] = f"{ci[0]!r} to {ci[1]!r} (bootstrap CI)"
                entry["extra"] = extra
                out.append(entry)
    return out


def looks_like_ours(data: Any) -> bool:
    """A JSON list of github-action-benchmark entries (what this export writes): safe to replace."""
    return isinstance(data, list) and all(isinstance(e, dict) and {"name", "unit", "value"} <= set(e) for e in data)
