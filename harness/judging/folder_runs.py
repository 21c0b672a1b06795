"""A results folder's stored runs and the metrics they can be scored on, as ``judge agree
--results`` and the prediction-powered intervals (``evaluate``/``report --auto-qrels``) read them:
one rule for both (no stored run is refused; metrics that need embeddings or contexts are left out,
grades alone cannot score them)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.model import Qrels
from harness.run import Run


def stored_runs(results: Any, where: str | os.PathLike[str] | None = None) -> dict[str, Run]:
    """The folder's ``runs/*.trec``; :class:`InputError` naming the folder when there is none."""
    from harness.results.store import read_runs

    runs = read_runs(results)
    if not runs:
        raise InputError("no stored runs (runs/*.trec)", path=where if where is not None else results.folder)
    return runs


def scorable(metrics: str | Sequence[str]) -> list[str]:
    """The metric names (a comma-separated list or names) grades alone can score."""
    from harness.metrics.names import parse_metrics

    return [m.name for m in parse_metrics(metrics) if not (m.needs_embeddings or m.needs_context or m.needs_nuggets)]


def agree_inputs(
    folder: str, metrics: str | None, no_folder_qrels: bool
) -> tuple[dict[str, Run], list[str], Qrels | None, str | None]:
    """``judge agree --results``: the folder's runs, the metrics (``metrics`` or the folder's), and
    the folder's own qrels.tsv (with its path) to lay both graders over, unless ``no_folder_qrels``."""
    from harness.io.trec import read_qrels
    from harness.results import Results

    res = Results.open(folder)
    runs = stored_runs(res, folder)
    folder_qrels = (res.folder or Path(folder)) / "qrels.tsv"
    if no_folder_qrels or not folder_qrels.is_file():
        return runs, scorable(metrics or res.metrics), None, None
    return runs, scorable(metrics or res.metrics), read_qrels(folder_qrels), str(folder_qrels)
