"""Metric intervals that carry an automatic judge's error: prediction-powered inference over queries.

People grade a uniform random sample of queries (``harness judge sample``) fully; a judge grades
every query. Per query and metric, ``Y`` is the metric under the human judgments and ``Y-hat`` the
metric under the judge's. The labelled queries give ``(Y, Y-hat)`` pairs, every other query the
judge grades gives ``Y-hat`` alone, and :func:`harness.stats.ppi.ppi_mean_ci` turns them into an
interval on the mean that the judge's bias cannot shrink below the truth. The classical interval on
the labelled queries alone is reported beside it, so the gain (or its absence) is visible.

A query counts as labelled when the human judgments grade every pair the judge grades for it: a
half-graded query would mix the two graders inside one Y. With ``labelled`` (the sample file
``judge sample`` wrote) only the sampled queries can be labelled, so queries that happen to be
complete for another reason (nothing was pooled for them) do not slip into the sample and break
its randomness.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness import defaults
from harness.errors import InputError
from harness.judging.per_query import against_baseline
from harness.judging.per_query import per_query as _per_query
from harness.model import Qrels
from harness.run import Run
from harness.stats.levels import check_level
from harness.stats.ppi import classical_mean_ci, ppi_mean_ci

log = logging.getLogger("harness")


@dataclass(frozen=True)
class Split:
    """Which queries are labelled (fully graded by people) and which are the judge's alone."""

    labelled: list[str]
    unlabelled: list[str]
    incomplete: list[str]  # sampled (or human-judged) queries with pairs people did not grade (unlabelled)


def split(human: Qrels, judge: Qrels, labelled: Collection[str] | None = None) -> Split:
    """Labelled: queries HUMAN judges that grade every pair JUDGE grades for them (and, with
    ``labelled``, are in that sample). Unlabelled: every other query JUDGE judges."""
    lab, inc = [], []
    for q in sorted(judge):
        if labelled is not None and q not in labelled:
            continue
        h = human.get(q)
        if h is None:
            if labelled is not None:
                inc.append(q)
            continue
        (lab if all(d in h for d in judge[q]) else inc).append(q)
    taken = set(lab)  # a half-graded query is still the judge's: unlabelled
    return Split(lab, [q for q in sorted(judge) if q not in taken], inc)


def _interval(y: np.ndarray, yhat: np.ndarray, yu: np.ndarray, alpha: float) -> dict[str, Any]:
    p, lam = ppi_mean_ci(y, yhat, yu, alpha)
    c = classical_mean_ci(y, alpha)
    return {
        "ppi": {"mean": p.mean, "low": p.low, "high": p.high},
        "classical": {"mean": c.mean, "low": c.low, "high": c.high, "n": int(y.size)},
        "n_labelled": int(y.size),
        "n_unlabelled": int(yu.size),
        "lam": None if np.isnan(lam) else lam,
    }


def ppi_report(
    runs: Mapping[str, Run],
    human: Qrels,
    judge: Qrels,
    metrics: Sequence[str],
    *,
    labelled: Collection[str] | None = None,
    alpha: float = defaults.ALPHA,
    baseline: str | None = None,
    nuggets: tuple[Any, Any] | None = None,
) -> dict[str, Any]:
    """``{"runs": {run: {metric: interval}}, "differences": {"B - A": {metric: interval}}, ...}``.

    Each interval is ``{ppi: {mean, low, high}, classical: {mean, low, high, n}, n_labelled,
    n_unlabelled, lam}``. Differences are per query (run minus ``baseline``, default the first run),
    so the same queries' judge errors cancel where they can. ``nuggets``: the people's and the
    judge's nugget judgments (:class:`harness.nuggets.NuggetJudgments`), for nugget metrics: then
    ``human`` and ``judge`` are the passages each assessed (:func:`assessed`).
    """
    check_level(alpha, "--alpha")
    s = split(human, judge, labelled)
    if s.incomplete:
        log.warning(
            "%d quer%s left out of the labelled set: people did not grade every pair the judge graded (%s)",
            len(s.incomplete), "y" if len(s.incomplete) == 1 else "ies", ", ".join(s.incomplete[:5]),
        )  # fmt: skip
    if len(s.labelled) < 2:
        raise InputError(
            f"{len(s.labelled)} labelled quer{'y' if len(s.labelled) == 1 else 'ies'}: PPI needs people to grade "
            "every pooled pair of at least 2 queries (`harness judge sample` draws them)",
            field="--qrels",
        )
    if not s.unlabelled:
        raise InputError(
            "the judge grades no query beyond the labelled ones: nothing for PPI to add", field="--auto-qrels"
        )
    people, machine = nuggets if nuggets is not None else (None, None)
    y = _per_query(runs, human, s.labelled, metrics, people)
    yhat = _per_query(runs, judge, s.labelled, metrics, machine)
    yu = _per_query(runs, judge, s.unlabelled, metrics, machine)
    out: dict[str, Any] = {
        "alpha": alpha,
        "n_labelled": len(s.labelled),
        "n_unlabelled": len(s.unlabelled),
        "n_incomplete": len(s.incomplete),
        "runs": {r: {m: _interval(y[r][m], yhat[r][m], yu[r][m], alpha) for m in metrics} for r in runs},
        "differences": {},
    }
    for r, base in against_baseline(runs, baseline):
        out["differences"][f"{r} - {base}"] = {
            m: _interval(y[r][m] - y[base][m], yhat[r][m] - yhat[base][m], yu[r][m] - yu[base][m], alpha)
            for m in metrics
        }
    return out


def ppi_from_files(
    runs: Mapping[str, Run],
    metrics: Sequence[str],
    *,
    qrels: str | None,
    auto_qrels: str,
    labelled: str | None = None,
    alpha: float = defaults.ALPHA,
    judged_only: bool = False,
    baseline: str | None = None,
) -> dict[str, Any]:
    """:func:`ppi_report` from the files ``--qrels`` (people's), ``--auto-qrels`` (a judge's) and
    ``--labelled`` (a ``judge sample`` file) name, refusing what the intervals cannot be computed on."""
    from harness.io.trec import read_qrels
    from harness.judging.sample import sampled_queries

    if not qrels:
        raise InputError("--auto-qrels needs --qrels: people's judgments of the labelled queries", field="--qrels")
    if judged_only:
        raise InputError("prediction-powered intervals are computed on full rankings", field="--judged-only")
    if labelled:  # drawn with unequal probabilities: the active estimator (harness.judging.active)
        from harness.judging.active import active_report, read_design

        design = read_design(labelled)
        if design is not None:
            human, judge = read_qrels(qrels), read_qrels(auto_qrels)
            return active_report(runs, human, judge, metrics, design, alpha=alpha, baseline=baseline)
    chosen = set(sampled_queries(labelled)) if labelled else None
    human, judge = read_qrels(qrels), read_qrels(auto_qrels)
    return ppi_report(runs, human, judge, metrics, labelled=chosen, alpha=alpha, baseline=baseline)


def assessed(nuggets: Any) -> Qrels:
    """The passages a nugget assignments file assessed, as judgments (:meth:`NuggetJudgments.qrels`
    less the queries nobody assessed): a query is labelled when the people assessed every passage
    the judge assessed for it, as for grades."""
    return {q: j for q, j in nuggets.qrels().items() if j}


def ppi_from_nugget_files(
    runs: Mapping[str, Run],
    metrics: Sequence[str],
    *,
    nuggets: str | None,
    assignments: str | None,
    auto_assignments: str,
    labelled: str | None = None,
    alpha: float = defaults.ALPHA,
    baseline: str | None = None,
) -> dict[str, Any]:
    """:func:`ppi_report` for nugget metrics: ``--assignments`` (people's, on a sample of queries) and
    ``--auto-assignments`` (a judge's, on every query), both of ``--nuggets``."""
    from harness.judging.sample import sampled_queries
    from harness.metrics.names import parse_metrics
    from harness.nuggets import NuggetJudgments

    if not nuggets or not assignments:
        raise InputError(
            "--auto-assignments needs --nuggets and --assignments (people's, of the labelled queries)",
            field="--assignments",
        )
    other = [m.name for m in parse_metrics(metrics) if not m.needs_nuggets]
    if other:
        raise InputError(f"{', '.join(other)}: with --auto-assignments ask nugget metrics only", field="--metrics")
    chosen = set(sampled_queries(labelled)) if labelled else None
    people, machine = NuggetJudgments.load(nuggets, assignments), NuggetJudgments.load(nuggets, auto_assignments)
    return ppi_report(
        runs, assessed(people), assessed(machine), metrics, labelled=chosen, alpha=alpha, baseline=baseline,
        nuggets=(people, machine),
    )  # fmt: skip


def render(report: Mapping[str, Any]) -> str:
    """A plain table: the PPI interval beside the classical one on the labelled queries."""
    conf = round(100 * (1 - report["alpha"]))
    rows = []
    for group in ("runs", "differences"):
        for name, per in report[group].items():
            for m, iv in per.items():
                p, c = iv["ppi"], iv["classical"]
                ratio = f"{(p['high'] - p['low']) / (c['high'] - c['low']):.2f}" if c["high"] > c["low"] else "–"
                rows.append((name, m, _iv(p), _iv(c), ratio))
    # each column as wide as its widest cell and two spaces: a negative interval ("-0.0185 [-0.0272,
    # -0.0099]", 26 characters), a long retriever name or a nugget metric must not run into the next
    w = [max([floor, *(len(r[i]) + 2 for r in rows)]) for i, floor in enumerate((28, 14, 26, 26, 8))]
    lines = [
        f"{report['n_labelled']} queries graded by people (labelled), {report['n_unlabelled']} by the judge alone; "
        f"{conf}% intervals",
        f"{'':<{w[0]}}{'metric':<{w[1]}}{'PPI':>{w[2]}}{'people only':>{w[3]}}{'width':>{w[4]}}",
    ]
    lines += [f"{a:<{w[0]}}{b:<{w[1]}}{c:>{w[2]}}{d:>{w[3]}}{e:>{w[4]}}" for a, b, c, d, e in rows]
    lines.append(
        "width: the PPI interval's width over the people-only interval's (below 1: the judge helps; –: the "
        "people-only interval has no width)"
    )
    if report.get("estimator") == "active":
        from harness.judging.active import render_notes

        return "\n".join(lines) + "\n" + render_notes(report)
    return "\n".join(lines) + "\n"


def _iv(x: Mapping[str, float]) -> str:
    return f"{x['mean']:.4f} [{x['low']:.4f}, {x['high']:.4f}]"
