"""Metric intervals from an active sample: queries people graded, drawn with unequal probabilities.

``harness judge sample --active`` (:mod:`~harness.judging.active_sample`) draws each query ``q`` of
the pool independently with its own probability ``pi_q``, larger where the judge is unsure, and
records every ``pi_q`` in ``SAMPLE.sample.json``. A drawn query that people graded in full is
labelled (``xi_q = 1``). Per query and metric, ``Y_q`` is the metric under people's judgments and
``Y-hat_q`` under the judge's; :func:`harness.stats.active.active_mean_ci` turns them into the
interval of Zrnic and Candes (2024) for each run's mean and each difference against the baseline,
``lam`` power-tuned and reported. The JSON keeps the shape of :func:`harness.judging.ppi.ppi_report`
(``ppi``, ``classical``, ``lam``, ``n_labelled``) and says ``"estimator": "active"``; ``classical``
is the same estimator with ``lam = 0`` (people's grades alone, inverse-probability weighted).

A drawn query people did not finish is not labelled: its ``xi`` is 0, yet it was drawn, so the
design the interval assumes is not the one that happened. It is named, and every interval says
``"valid": false``: grade it in full (or draw again) for a valid interval.

A sample whose ``pi`` are all equal (a uniform design) is left to :mod:`~harness.judging.ppi`: the
output is then today's, byte for byte.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import defaults
from harness.errors import InputError
from harness.model import Qrels
from harness.run import Run
from harness.stats.active import MIN_PI, active_mean_ci
from harness.stats.levels import check_level

log = logging.getLogger("harness")


@dataclass(frozen=True)
class Design:
    """An active sample's record: each pool query's inclusion probability and the queries drawn
    (those of earlier ``--after`` batches included: their ``pi`` is 1 in this record)."""

    pi: dict[str, float]
    drawn: frozenset[str]
    path: Path


def read_design(path: str | os.PathLike[str]) -> Design | None:
    """The design of the sample at ``path``: None for a uniform one (no ``pi`` in its record, or
    every ``pi`` equal), which today's prediction-powered intervals handle."""
    from harness.judging.sample import read_record, sidecar

    rec = sidecar(path)
    data = read_record(path)
    if not isinstance(data, dict) or "pi" not in data:
        return None
    pi = data["pi"]
    if not isinstance(pi, dict) or not pi:
        raise InputError("'pi' must map every pool query to its inclusion probability", path=rec, field="pi")
    out: dict[str, float] = {}
    for q, v in pi.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not MIN_PI <= v <= 1:
            raise InputError(f"query {q!r}: {v!r} is not a probability in [{MIN_PI:g}, 1]", path=rec, field="pi")
        out[str(q)] = float(v)
    drawn = [*data.get("complete", []), *data.get("before", []), *data.get("queries", [])]
    missing = [q for q in drawn if q not in out]
    if missing:
        raise InputError(f"drawn query {missing[0]!r} has no inclusion probability", path=rec, field="queries")
    if len(set(out.values())) == 1:
        return None
    return Design(out, frozenset(str(q) for q in drawn), rec)


def _interval(y: np.ndarray, yhat: np.ndarray, pi: np.ndarray, xi: np.ndarray, alpha: float, valid: bool) -> dict:
    a, lam = active_mean_ci(y, yhat, pi, xi, alpha)
    c, _ = active_mean_ci(y, yhat, pi, xi, alpha, lam=0.0)
    n_lab = int(xi.sum())
    return {
        "ppi": {"mean": a.mean, "low": a.low, "high": a.high},
        "classical": {"mean": c.mean, "low": c.low, "high": c.high, "n": n_lab},
        "n_labelled": n_lab,
        "n_unlabelled": int(xi.size - n_lab),
        "lam": lam,
        "estimator": "active",
        "valid": valid,
    }


def active_report(
    runs: Mapping[str, Run],
    human: Qrels,
    judge: Qrels,
    metrics: Sequence[str],
    design: Design,
    *,
    alpha: float = defaults.ALPHA,
    baseline: str | None = None,
) -> dict[str, Any]:
    """``{"estimator": "active", "runs": {run: {metric: interval}}, "differences": {...}, ...}`` over
    every query the judge graded (the population), each with its ``pi`` from ``design``."""
    from harness.judging.per_query import against_baseline
    from harness.judging.per_query import per_query as _per_query

    check_level(alpha, "--alpha")
    queries = sorted(judge)
    if len(queries) < 2:
        raise InputError("the judge grades fewer than 2 queries: no interval", field="--auto-qrels")
    no_pi = [q for q in queries if q not in design.pi]
    if no_pi:
        raise InputError(
            f"the judge grades query {no_pi[0]!r} ({len(no_pi)} in all) that the sample gives no inclusion "
            "probability: draw the sample from the pool the judge graded",
            path=design.path,
            field="pi",
        )
    labelled, incomplete = [], []
    for q in queries:
        if q not in design.drawn:
            continue
        h = human.get(q)
        (labelled if h is not None and all(d in h for d in judge[q]) else incomplete).append(q)
    if incomplete:
        log.warning(
            "%d drawn quer%s not graded in full by people (%s): the interval is no longer valid; grade them in full",
            len(incomplete), "y" if len(incomplete) == 1 else "ies", ", ".join(incomplete[:5]),
        )  # fmt: skip
    if not labelled:
        raise InputError(
            "no drawn query is graded in full by people: nothing to correct the judge with", field="--qrels"
        )
    valid = not incomplete
    pi = np.array([design.pi[q] for q in queries])
    lab = set(labelled)
    xi = np.array([1.0 if q in lab else 0.0 for q in queries])
    yhat = _per_query(runs, judge, queries, metrics)
    y_lab = _per_query(runs, human, labelled, metrics)
    pos = np.array([i for i, q in enumerate(queries) if q in lab], dtype=np.int64)

    def full(r: str, m: str) -> np.ndarray:
        out = np.zeros(len(queries))
        out[pos] = y_lab[r][m]
        return out

    y = {r: {m: full(r, m) for m in metrics} for r in runs}
    out: dict[str, Any] = {
        "alpha": alpha,
        "estimator": "active",
        "n_labelled": len(labelled),
        "n_unlabelled": len(queries) - len(labelled),
        "n_incomplete": len(incomplete),
        "incomplete": incomplete,
        "valid": valid,
        "runs": {r: {m: _interval(y[r][m], yhat[r][m], pi, xi, alpha, valid) for m in metrics} for r in runs},
        "differences": {},
    }
    for r, base in against_baseline(runs, baseline):
        out["differences"][f"{r} - {base}"] = {
            m: _interval(y[r][m] - y[base][m], yhat[r][m] - yhat[base][m], pi, xi, alpha, valid) for m in metrics
        }
    return out


def render_notes(report: Mapping[str, Any]) -> str:
    """The lines an active report adds under the table: the estimator, each ``lam``, validity."""
    lams = [
        f"{name} {m}: {iv['lam']:.3f}"
        for group in ("runs", "differences")
        for name, per in report[group].items()
        for m, iv in per.items()
    ]
    lines = [
        "estimator: active (Zrnic & Candes 2024): queries drawn with unequal probabilities pi, each label weighted "
        "1/pi; 'people only' is the same with lam = 0",
        "lam (power-tuned): " + "; ".join(lams),
    ]
    if not report["valid"]:
        inc = report["incomplete"]
        lines.append(
            f"NOT VALID: {len(inc)} drawn quer{'y' if len(inc) == 1 else 'ies'} not graded in full by people "
            f"({', '.join(inc[:5])}{', ...' if len(inc) > 5 else ''}); grade them in full for a valid interval"
        )
    return "\n".join(lines) + "\n"
