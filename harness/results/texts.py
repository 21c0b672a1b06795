"""A result's texts: the dataset its manifest names, loaded again for the query and document text
that reports show beside ids (the drill-down of ``harness report --worst``, the page's explorer).

Apart from the drill-down because the page needs these and nothing else of it (the drill-down
reads the results folder's runs, and the folder writes the page: a cycle otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness import defaults
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.model import GoldenDataset
    from harness.results import Results

#: characters of a document's text shown in the drill-down
SNIPPET = 120


def manifest_dataset(results: Results) -> tuple[GoldenDataset | None, str | None]:
    """The dataset the manifest names (``demo`` or its BEIR folder), loaded, and a note when that is
    not possible (then None) or the dataset changed since the run."""
    from harness.datasets import DEMO, load_dataset

    ds = results.manifest.get("dataset") or {}
    source, name, split = ds.get("source"), ds.get("name"), ds.get("split") or defaults.SPLIT
    where = source if source and Path(source).is_dir() else DEMO if name == DEMO or source == DEMO else None
    if where is None:
        why = f"dataset folder {source} not found" if source else "results.json names no dataset folder"
        return None, f"query and document text unavailable ({why}); showing ids only"
    try:
        dataset = load_dataset(where, split, name=name)
    except (HarnessError, OSError) as e:
        return None, f"query and document text unavailable (loading {where} failed: {e}); showing ids only"
    note = None
    if ds.get("fingerprint") and dataset.fingerprint != ds["fingerprint"]:
        note = f"the dataset at {where} changed since this run (fingerprint differs): texts may not match"
    return dataset, note


def snippet(text: str | None, n: int = SNIPPET) -> str | None:
    """``text`` on one line, cut to ``n`` characters (``…`` marks the cut)."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"
