"""A result's texts: the dataset its manifest names, loaded again for the query and document text
that reports show beside ids (the drill-down of ``harness report --worst``, the page's explorer).

Apart from the drill-down because the page needs these and nothing else of it (the drill-down
reads the results folder's runs, and the folder writes the page: a cycle otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.model import GoldenDataset
    from harness.results import Results

#: characters of a document's text shown in the drill-down
SNIPPET = 120


def manifest_dataset(results: Results) -> tuple[GoldenDataset | None, str | None]:
    """The dataset the manifest names (``demo`` or its BEIR folder), loaded, and a note when that is
    not possible (then None) or the dataset changed since the run (:meth:`DatasetRef.where
    <harness.results.manifest.DatasetRef.where>`, the one rule for where a result's dataset is)."""
    from harness.results.manifest import dataset_texts

    return dataset_texts(results)


def snippet(text: str | None, n: int = SNIPPET) -> str | None:
    """``text`` on one line, cut to ``n`` characters (``…`` marks the cut)."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"
