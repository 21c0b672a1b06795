"""Every retriever against the baseline, on every metric: the statistics behind a comparison table.

One call does the whole table, as ``ranx.compare`` does, so the multiple-testing correction sees
the whole family of comparisons. Holm runs on the randomization-test p-values over one of two
families (``correction``): ``all`` (every non-baseline retriever x every metric: the strictest, one
claim about the whole table) or ``metric`` (each metric's column on its own, as PyTerrier and ranx
report: a claim per metric, so a diversity column such as ``ild@10`` does not dilute nDCG's).
All randomization tests share one sign matrix
(:func:`~harness.stats.tests.randomization_tests`), and all bootstrap intervals share one resample
(:func:`~harness.stats.tests.bootstrap_cis`): the same resampled query sets serve every retriever
and every paired difference (common random numbers), drawn once for the whole table. The result is
a deterministic function of the per-query values and the seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness import defaults
from harness.stats.tests import holm, win_tie_loss
from harness.stats.weighted import (
    as_weights,
    bootstrap_cis_w,
    paired_mean,
    power_figures_w,
    randomization_tests_w,
    t_test_w,
)

#: significance[retriever][metric] keys, in the order tables print them.
FIELDS = ("delta", "ci_low", "ci_high", "p_value", "p_t", "p_holm", "significant", "wins", "ties", "losses")
#: power figures each comparison also carries (:mod:`harness.stats.power`): not printed as columns
POWER_FIELDS = ("sd_diff", "mde", "n_for_observed", "power_reason")


def compare(
    values: Mapping[str, Mapping[str, np.ndarray]],
    baseline: str | None = None,
    *,
    seed: int = defaults.SEED,
    bootstrap: int = defaults.BOOTSTRAP,
    permutations: int = defaults.PERMUTATIONS,
    alpha: float = defaults.ALPHA,
    confidence: float = 0.95,
    correction: str = "all",
    query_ids: Sequence[str] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, list[float]]]]:
    """Confidence intervals for every mean, and paired tests of every retriever against ``baseline``.

    ``values[retriever][metric]`` holds per-query scores, aligned across retrievers (same queries,
    same order). Returns ``(significance, intervals)``:

    - ``intervals[retriever][metric] = [ci_low, ci_high]``: percentile bootstrap CI of the mean;
    - ``significance[retriever][metric]`` for each retriever other than the baseline (empty when
      ``baseline`` is None): ``delta`` (mean difference to the baseline), ``ci_low``/``ci_high``
      (bootstrap CI of the mean paired difference), ``p_value`` (two-sided paired randomization
      test), ``p_t`` (paired t-test), ``p_holm`` (Holm-adjusted ``p_value`` over the family that
      ``correction`` names: ``all`` the whole table, ``metric`` the metric's column),
      ``significant`` (``p_holm < alpha``), ``wins``/``ties``/``losses`` (queries better, equal, worse),
      and the power figures of :func:`harness.stats.power.figures` at ``alpha``: ``sd_diff`` (sd of the
      per-query differences, n - 1), ``mde`` (the true difference the two-sided paired t-test detects
      with power 0.8 at this n: one comparison, before Holm), ``n_for_observed`` (queries needed to
      detect ``delta`` so), each None with ``power_reason`` where it cannot be computed.

    With ``query_ids`` (the queries the arrays are aligned to) the queries are put in sorted id
    order first, so the numbers do not depend on the order queries were listed in: re-scoring a
    results folder (``harness compare`` on its ``runs/``) reproduces them exactly.

    A NaN score (a metric undefined for a query) leaves that query out of that retriever's numbers
    for that metric only.

    ``weights`` (one per query, aligned like the values; traffic counts): every interval, delta,
    test and power figure is weighted (:mod:`harness.stats.weighted`: the formulas, Kish's
    effective sample size); equal weights give the unweighted figures bit for bit. ``wins``,
    ``ties`` and ``losses`` stay counts of queries.
    """
    arrays = {r: {m: np.asarray(v, dtype=np.float64) for m, v in ms.items()} for r, ms in values.items()}
    sizes = {v.shape for ms in arrays.values() for v in ms.values()}
    if len(sizes) > 1 or any(len(s) != 1 for s in sizes):
        raise ValueError(f"per-query values must be 1-d arrays over the same queries, got shapes {sorted(sizes)}")
    if query_ids is not None:
        if sizes and len(query_ids) != next(iter(sizes))[0]:
            raise ValueError(f"{len(query_ids)} query ids for {next(iter(sizes))[0]} per-query values")
        order = np.argsort(np.asarray(list(query_ids), dtype=object), kind="stable")
        arrays = {r: {m: v[order] for m, v in ms.items()} for r, ms in arrays.items()}
    w = as_weights(weights, next(iter(sizes))[0] if sizes else 0)
    if w is not None and query_ids is not None:
        w = w[order]
    boot = _Bootstrap(n=bootstrap, confidence=confidence, seed=seed)
    keys = [(r, m) for r, ms in arrays.items() for m in ms]
    for r, m in keys:
        v = arrays[r][m]
        boot.add(("interval", r, m), _finite(v), None if w is None else w[~np.isnan(v)])
    if baseline is None:
        cis = boot.run()
        return {}, _intervals(keys, cis)
    if baseline not in arrays:
        raise ValueError(f"baseline {baseline!r} has no scores (retrievers: {', '.join(arrays)})")
    base = arrays[baseline]
    pairs = [(r, m) for r, ms in arrays.items() if r != baseline for m in ms if m in base]
    if not pairs:
        return {}, _intervals(keys, boot.run())
    diffs = np.column_stack([arrays[r][m] - base[m] for r, m in pairs])
    # a NaN pair contributes a zero difference: a sign flip of zero changes nothing, so this is the
    # randomization test over the remaining queries
    p_rand = randomization_tests_w(np.nan_to_num(diffs, nan=0.0), w, n=permutations, seed=seed)
    p_holm = holm_by_family(p_rand, [m for _, m in pairs], correction)
    for j, (r, m) in enumerate(pairs):
        ok = ~np.isnan(diffs[:, j])
        boot.add(("delta", r, m), diffs[ok, j], None if w is None else w[ok])
    cis = boot.run()
    significance: dict[str, dict[str, dict[str, Any]]] = {}
    for j, (r, m) in enumerate(pairs):
        ok = ~np.isnan(diffs[:, j])
        a, b, d = arrays[r][m][ok], base[m][ok], diffs[ok, j]
        wj = None if w is None else w[ok]
        lo, hi = cis[("delta", r, m)]
        wins, ties, losses = win_tie_loss(a, b)
        significance.setdefault(r, {})[m] = {
            "delta": paired_mean(d, wj),
            "ci_low": lo,
            "ci_high": hi,
            "p_value": float(p_rand[j]),
            "p_t": t_test_w(a, b, wj),
            "p_holm": float(p_holm[j]),
            "significant": bool(p_holm[j] < alpha),
            "wins": wins,
            "ties": ties,
            "losses": losses,
            **power_figures_w(d, wj, alpha),
        }
    return significance, _intervals(keys, cis)


#: ``stats: {correction: ...}``: the families Holm's correction may run over.
CORRECTION_FAMILIES = ("all", "metric")


def holm_by_family(p_values: np.ndarray, metrics: Sequence[str], correction: str) -> np.ndarray:
    """Holm-adjusted p-values, each within its family: the whole list (``all``) or one metric's tests (``metric``).

    Holm controls the family-wise error rate of the family it is given; which family is a claim the
    table makes ("no false ▲ anywhere" vs "no false ▲ in this column"), so it is named in the legend.
    """
    if correction not in CORRECTION_FAMILIES:
        raise ValueError(f"correction must be one of {', '.join(CORRECTION_FAMILIES)}, got {correction!r}")
    p = np.asarray(p_values, dtype=np.float64)
    if correction == "all":
        return np.asarray(holm(p), dtype=np.float64)
    out = np.empty_like(p)
    for m in dict.fromkeys(metrics):
        idx = [j for j, name in enumerate(metrics) if name == m]
        out[idx] = holm(p[idx])
    return out


def family_size(n_retrievers: int, n_metrics: int, correction: str) -> int:
    """How many tests one Holm family holds, for the legend (``n_retrievers`` excludes the baseline)."""
    return n_retrievers * (n_metrics if correction == "all" else 1)


def _intervals(keys: list[tuple[str, str]], cis: dict[tuple[str, str, str], tuple[float, float]]):
    out: dict[str, dict[str, list[float]]] = {}
    for r, m in keys:
        out.setdefault(r, {})[m] = list(cis[("interval", r, m)])
    return out


class _Bootstrap:
    """Every bootstrap interval of a table, computed together: columns of one length share one resample.

    Without NaN every interval and every paired difference has all the queries, so the whole table
    is one :func:`~harness.stats.tests.bootstrap_cis` call (one draw, one matrix product); a column
    with NaN scores left out is resampled over its own length, as :func:`bootstrap_ci` would.
    """

    def __init__(self, *, n: int, confidence: float, seed: int) -> None:
        self.n, self.confidence, self.seed = n, confidence, seed
        self.columns: dict[tuple[str, str, str], np.ndarray] = {}
        #: a column's query weights (weighted tables): columns share a resample when their weights match
        self.weights: dict[tuple[str, str, str], np.ndarray] = {}

    def add(self, key: tuple[str, str, str], values: np.ndarray, weights: np.ndarray | None = None) -> None:
        self.columns[key] = values
        if weights is not None:
            self.weights[key] = weights

    def run(self) -> dict[tuple[str, str, str], tuple[float, float]]:
        by_size: dict[tuple[int, bytes], list[tuple[str, str, str]]] = {}
        for key, v in self.columns.items():
            w = self.weights.get(key)
            by_size.setdefault((v.size, b"" if w is None else w.tobytes()), []).append(key)
        out: dict[tuple[str, str, str], tuple[float, float]] = {}
        for (size, _), keys in by_size.items():
            stacked = np.column_stack([self.columns[k] for k in keys]) if size else np.empty((0, len(keys)))
            w = self.weights.get(keys[0])
            cis = bootstrap_cis_w(stacked, w, n=self.n, confidence=self.confidence, seed=self.seed)
            out.update(zip(keys, cis))
        return out


def _finite(v: np.ndarray) -> np.ndarray:
    return v[~np.isnan(v)]
