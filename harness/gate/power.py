"""What the gate can see: the drop it detects at power 0.8, when it is blind, and non-inferiority.

The regression rule fails a drop only when it is larger than the tolerance *and* significant, so on a
small golden set it passes almost everything: a set that needs a drop of 0.05 to reach significance
cannot enforce a tolerance of 0.01. For every gated metric this module works out the drop the
check's own paired test detects with power 0.8 (:mod:`harness.stats.power`, two-sided at the check's
alpha) and, where that is larger than the tolerance, a *blind* line with the queries the tolerance
would need.

The variance must not vanish when tonight equals the baseline (identical runs have sd 0 and would
look infinitely sensitive), so the gate uses the larger of the observed sd of the per-query
differences and an estimate from the baseline folder alone (:func:`reference_sd`), and says which.

Non-inferiority turns the burden of proof around for the metrics it names: a metric passes only when
the one-sided lower confidence bound of the mean paired difference (current - baseline, Student t,
n - 1 df, one-sided ``ni_alpha``) is above ``-margin``. A small or noisy set then fails rather than
passes: the change must show it is no worse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.gate._scores import Scores
from harness.gate.blind import detects_nothing
from harness.gate.tolerances import metric_key
from harness.results import Manifest
from harness.stats.power import mde as min_effect
from harness.stats.power import queries_needed
from harness.stats.weighted import effective_n, is_uniform, t_lower_bound_w, weighted_sd

#: verdicts with no comparison behind them: nothing to say about power
_UNCOMPARED = frozenset({"failed", "missing", "new"})


def reference_sd(baseline: Scores, metric: str) -> tuple[float | None, str]:
    """The baseline folder's own estimate of the sd of per-query differences, and what it is.

    With several retrievers: the square root of the mean (n - 1) variance of the per-query
    differences between each retriever and the folder's baseline retriever (the config's
    ``baseline:``, else its first): how much two real systems differ query by query on this set.
    With one: sqrt(2) x the sd of its per-query scores, the conservative estimate of topic set size
    design (two uncorrelated runs). None where the baseline holds no per-query scores.
    """
    names = [r for r in baseline.summary if baseline.has_per_query(r) and metric in baseline.summary[r]]
    if not names:
        return None, "no per-query scores in the baseline"
    wanted = Manifest(baseline.manifest).baseline
    ref = wanted if wanted in names else names[0]
    qids = baseline.query_order(ref)
    others = [r for r in names if r != ref and set(baseline.query_order(r)) >= set(qids)]
    if len(qids) < 2:
        return None, f"the baseline has {len(qids)} query"
    ref_scores = baseline.matrix(ref, qids, [metric])[:, 0]
    if others:
        variances = [float(np.var(baseline.matrix(r, qids, [metric])[:, 0] - ref_scores, ddof=1)) for r in others]
        sd = math.sqrt(float(np.mean(variances)))
        return sd, (
            f"the baseline's {len(others)} retriever{'s' * (len(others) != 1)} against {ref}: "
            "sqrt of the mean variance of their per-query differences"
        )
    return math.sqrt(2.0) * float(np.std(ref_scores, ddof=1)), (
        f"sqrt(2) x the sd of {ref}'s per-query scores in the baseline (one retriever: two uncorrelated runs)"
    )


def margins_for(report_metrics: list[str], margin: float | None, per_metric: Mapping[str, float]) -> dict[str, float]:
    """The non-inferiority margin of each checked metric: ``--non-inferiority`` for every one, else the
    tolerances file's ``non_inferiority`` entries (metric names canonical)."""
    if margin is not None:
        return {metric_key(m): float(margin) for m in report_metrics}
    return {metric_key(m): float(v) for m, v in per_metric.items()}


def add_power(
    report: Any,
    baseline: Scores,
    current: Scores,
    *,
    metrics: list[str],
    margin: float | None,
    per_metric: Mapping[str, float],
    ni_alpha: float,
    target: float,
) -> None:
    """Fill every compared row's ``sd_diff``, ``sd_used``, ``mde`` (and ``bound`` under
    non-inferiority), decide the non-inferiority verdicts, and add the blind lines to ``report``
    (a :class:`~harness.gate.verdict.CheckReport`; :func:`~harness.gate.verdict.check` calls this, so
    the type is not imported here). The margins are :func:`margins_for` ``metrics``, ``margin`` and
    ``per_metric``."""
    margins = margins_for(metrics, margin, per_metric)
    report.power_target = target
    report.ni_alpha = ni_alpha
    report.non_inferiority = {m: v for m, v in margins.items()}
    estimates: dict[str, tuple[float | None, str]] = {}
    used: dict[str, int] = {"observed": 0, "baseline estimate": 0}
    for row in report.rows:
        if row.verdict in _UNCOMPARED:
            continue
        margin = margins.get(metric_key(row.metric))
        if margin is not None:
            row.rule = "non_inferiority"
            row.margin = margin
        if row.queries < 2:
            if margin is not None:
                _inferior(row, "non-inferiority needs per-query scores of at least 2 common queries")
            else:  # no drop is detectable at all: blind, whatever the tolerance
                row.blind = True
                report.blind.append(
                    f"blind: {row.retriever} {row.metric}: with {row.queries} common quer"
                    f"{'y' if row.queries == 1 else 'ies'} the paired test detects no drop at all (it needs at least 2)"
                )
            continue
        diffs, w = _diffs(row, baseline, current)
        observed = float(np.std(diffs, ddof=1)) if is_uniform(w) else weighted_sd(diffs, w)
        if row.metric not in estimates:
            estimates[row.metric] = reference_sd(baseline, row.metric)
        estimate, _ = estimates[row.metric]
        row.sd_diff = observed
        if estimate is not None and estimate > observed:
            row.sd_used, row.sd_source = estimate, "baseline estimate"
        else:
            row.sd_used, row.sd_source = observed, "observed"
        if margin is not None:
            row.bound = t_lower_bound_w(diffs, w, ni_alpha)
            if row.bound is not None and row.bound > -margin:
                row.verdict = "improved" if row.verdict == "improved" else "ok"
            else:
                _inferior(row, "")
        if not row.sd_used > 0:
            report.unsized.append(f"{row.retriever} {row.metric}")
            report.power_notes.append(
                f"{row.retriever} {row.metric}: every per-query difference is the same and the baseline gives no "
                "estimate: no variance to size the set with"
            )
            continue
        if not target > report.alpha:  # --alpha 0.9: no power above it to size with (said once, below)
            continue
        used[row.sd_source] += 1
        n = row.queries if is_uniform(w) else effective_n(w)  # weighted: Kish's effective queries
        row.mde = min_effect(row.sd_used, n, report.alpha, target)
        if margin is None and row.mde > row.tolerance:
            row.blind = True
            report.blind.append(blind_line(row, report.alpha, target))
    if not target > report.alpha:
        report.power_notes.append(
            f"power: no detectable drop computed: the power {target:g} is not above the check's alpha {report.alpha:g}"
        )
    if any(used.values()):
        by_why: dict[str, list[str]] = {}
        for m, (sd, why) in estimates.items():
            if sd is not None:
                by_why.setdefault(why, []).append(m)
        sources = "; ".join(f"{', '.join(ms)}: {why}" for why, ms in by_why.items())
        counts = ", ".join(f"{k} for {v}" for k, v in used.items() if v)
        report.power_notes.insert(
            0,
            f"power: sd of the per-query differences = the larger of the observed one and the baseline's estimate "
            f"({counts}); estimate from {sources or 'nothing (no per-query scores in the baseline)'}",
        )


def blind_line(row: Any, alpha: float, target: float) -> str:
    """``blind: bm25 ndcg@10: ...`` with the queries the tolerance needs (at the check's alpha)."""
    what = f"{row.retriever} {row.metric}"
    assert row.mde is not None and row.sd_used is not None
    if detects_nothing(row.metric, row.mde):  # a drop larger than the metric can move is never printed
        head = (
            f"blind: {what}: with {row.queries} queries no drop can be detected ({target:.0%} power, alpha "
            f"{alpha:g}, sd {row.sd_used:.4f}: the {row.sd_source}); its tolerance is {row.tolerance:g}"
        )
    else:
        head = (
            f"blind: {what}: with {row.queries} queries this check detects a drop of {row.mde:.4f} or more "
            f"({target:.0%} power, alpha {alpha:g}, sd {row.sd_used:.4f}: the {row.sd_source}), larger than its "
            f"tolerance {row.tolerance:g}"
        )
    if row.tolerance <= 0:
        return head + "; no set size detects a drop of 0"
    try:
        need = queries_needed(row.tolerance, row.sd_used, alpha, target)
    except ValueError:
        return head + "; no practical set size detects it"
    row.queries_needed = need
    return head + f"; {need:,} queries would detect it"


def _inferior(row: Any, note: str) -> None:
    row.verdict = "inferior"
    if note:
        row.note = note


def _diffs(row: Any, baseline: Scores, current: Scores) -> tuple[np.ndarray, np.ndarray | None]:
    """The per-query differences over the common queries, and their weights (None: unweighted)."""
    cq = set(current.query_order(row.retriever))
    common = [q for q in baseline.query_order(row.retriever) if q in cq]
    b = baseline.matrix(row.retriever, common, [row.metric])[:, 0]
    c = current.matrix(row.retriever, common, [row.metric])[:, 0]
    return c - b, current.weights_of(common, baseline)
