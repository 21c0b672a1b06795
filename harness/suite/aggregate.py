"""``suite.json``: a suite's per-dataset results brought together.

- ``summary[retriever][dataset][metric]``: each dataset's mean, as in its own ``results.json``;
- ``mean[retriever][metric]``: the arithmetic mean over the datasets (``null`` for a retriever
  missing from, or failed on, any dataset: a mean over fewer datasets is not comparable);
- ``rank[retriever][metric]``: the mean rank over datasets (1 = best on every dataset; ties share
  their average rank), the Borda-style aggregate MTEB reports beside the mean: it is not swayed by
  one dataset whose scores spread more than the others';
- ``significance[dataset][retriever][metric]``: each dataset's test against the baseline, from
  its folder (per-query randomization test, Holm-corrected, as in the one-dataset table);
- ``across_datasets[retriever][metric]``: a paired test over the datasets: the exact sign-flip test
  on the per-dataset differences of means to the baseline (:mod:`harness.stats.exact`), with its
  ``n``; ``too_few`` when ``n`` is below the number of datasets with which it could ever reject
  (6 at alpha 0.05), so a "not significant" there says nothing about the retrievers.

Nothing here runs a retriever or renders: the numbers come from the per-dataset results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from harness.results import Results
from harness.results.suite import Across, SuiteResults
from harness.stats.exact import min_p, min_pairs, sign_flip_p


def aggregate(
    results: Mapping[str, Results],
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    complete: bool = True,
    folder: Path | None = None,
) -> SuiteResults:
    """The suite of per-dataset ``results`` (in the suite's dataset order)."""
    datasets = list(results)
    retrievers: list[str] = []
    metrics: list[str] = []
    for res in results.values():
        retrievers += [r for r in [*res.summary, *res.failures] if r not in retrievers]
        metrics += [m for m in res.metrics if m not in metrics]
    summary = {r: {d: dict(results[d].summary[r]) for d in datasets if r in results[d].summary} for r in retrievers}
    mean: dict[str, dict[str, float | None]] = {}
    for r in retrievers:
        mean[r] = {}
        for m in metrics:
            values = [summary[r].get(d, {}).get(m) for d in datasets]
            mean[r][m] = math.fsum(values) / len(values) if values and None not in values else None  # type: ignore[arg-type]
    rank = _mean_ranks(summary, retrievers, datasets, metrics)
    significance = {
        d: {r: {m: c.model_dump() for m, c in by_m.items()} for r, by_m in results[d].significance.items()}
        for d in datasets
        if results[d].significance
    }
    across: dict[str, dict[str, Across]] = {}
    notes: list[str] = []
    need = min_pairs(alpha)
    if baseline is not None and baseline in summary:
        for r in retrievers:
            if r == baseline:
                continue
            across[r] = {}
            for m in metrics:
                pairs = [
                    (summary[r][d][m], summary[baseline][d][m])
                    for d in datasets
                    if m in summary[r].get(d, {}) and m in summary[baseline].get(d, {})
                ]
                across[r][m] = _across(pairs, alpha, need)
        if len(datasets) < need:
            notes.append(
                f"too few datasets for a test across datasets: {len(datasets)} (the sign-flip test can reject at "
                f"alpha {alpha:g} only with {need} or more; its smallest p with {len(datasets)} is "
                f"{min_p(len(datasets)):.4g})"
            )
    failures = {d: dict(results[d].failures) for d in datasets if results[d].failures}
    for d, failed in failures.items():
        for r in failed:
            notes.append(f"{r} failed on {d}: no mean over the datasets, no mean rank")
    return SuiteResults.of(
        results,
        folder,
        complete=complete,
        datasets=datasets,
        retrievers=retrievers,
        metrics=metrics,
        baseline=baseline,
        alpha=alpha,
        summary=summary,
        mean=mean,
        rank=rank,
        significance=significance,
        across_datasets=across,
        min_datasets=need,
        queries={d: len(results[d].query_ids) for d in datasets},
        failures=failures,
        notes=notes,
    )


def _across(pairs: list[tuple[float, float]], alpha: float, need: int) -> Across:
    n = len(pairs)
    if n == 0:
        return Across(n=0, too_few=True)
    diffs = [a - b for a, b in pairs]
    p = sign_flip_p(diffs)
    return Across(
        n=n,
        delta=math.fsum(diffs) / n,
        p_value=p,
        significant=p < alpha,
        too_few=n < need,
        min_p=min_p(n),
        wins=sum(x > 1e-12 for x in diffs),
        ties=sum(abs(x) <= 1e-12 for x in diffs),
        losses=sum(x < -1e-12 for x in diffs),
    )


def _mean_ranks(
    summary: Mapping[str, Mapping[str, Mapping[str, float]]],
    retrievers: list[str],
    datasets: list[str],
    metrics: list[str],
) -> dict[str, dict[str, float | None]]:
    """Per metric, each retriever's rank on each dataset (1 = best, ties averaged), averaged over
    the datasets; ``None`` for a retriever without a score on every dataset."""
    ranks: dict[str, dict[str, list[float]]] = {r: {m: [] for m in metrics} for r in retrievers}
    for d in datasets:
        for m in metrics:
            scored = [(r, summary[r][d][m]) for r in retrievers if m in summary[r].get(d, {})]
            for r, v in scored:
                better = sum(1 for _, x in scored if x > v)
                equal = sum(1 for _, x in scored if x == v)
                ranks[r][m].append(better + (equal + 1) / 2)
    return {
        r: {m: (math.fsum(v) / len(v) if len(v) == len(datasets) and v else None) for m, v in by_m.items()}
        for r, by_m in ranks.items()
    }
