"""Per-query metric values under a set of judgments, and the differences the intervals are
computed on: what prediction-powered (:mod:`~harness.judging.ppi`) and active
(:mod:`~harness.judging.active`) intervals share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.model import Qrels
from harness.run import Run


def per_query(
    runs: Mapping[str, Run], qrels: Qrels, queries: Sequence[str], metrics: Sequence[str], nuggets: Any = None
):
    """``{run: {metric: array over queries}}`` (a run missing a query scores 0 there, as always);
    ``nuggets``: the nugget judgments the nugget metrics are scored on."""
    from harness.engine.score import score

    sub = {q: qrels[q] for q in queries}
    res = score(runs, sub, list(metrics), statistics=False, nuggets=None if nuggets is None else nuggets.input_for)
    pos = {q: i for i, q in enumerate(res.query_ids)}
    idx = np.array([pos[q] for q in queries], dtype=np.int64)
    return {r: {m: res.scores(r)[m][idx] for m in metrics} for r in runs}


def against_baseline(runs: Mapping[str, Run], baseline: str | None) -> list[tuple[str, str]]:
    """``(run, baseline)`` for every run but the baseline (default the first run), whose difference
    the intervals are computed on; one line naming ``--baseline`` for a run that is not there."""
    names = list(runs)
    base = baseline if baseline is not None else (names[0] if names else None)
    if base is not None and base not in runs:
        raise InputError(f"{base!r} is not one of the runs ({', '.join(names)})", field="--baseline")
    return [(r, base) for r in names if base is not None and r != base]
