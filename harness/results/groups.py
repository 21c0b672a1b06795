"""The all-pairs figures a results table shows: letter groups beside each mean, the sentence of
the legend, the swap-rate curve of ``report.html`` (docs/power.md, "All pairs").

Computed from the per-query scores when the table is rendered (nothing new in ``results.json``), for
three retrievers or more, with the draws of ``harness power --all-pairs`` where that is cheap and
fewer on a large folder (:func:`draws_for`; the swap curve: :data:`SWAP_DRAWS`), so that rendering
a folder stays around a second per metric; the command gives the full figures. Cached on the
:class:`~harness.results.Results`, so the renderings of one folder draw once. A traffic-weighted
folder's letters and swap curve are weighted as its means are (:mod:`harness.stats.allpairs`,
"Traffic weights"), so the letters never disagree with the weighted means beside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from harness.results.manifest import Manifest
from harness.results.traffic import weights_of
from harness.stats import allpairs as ap

if TYPE_CHECKING:
    from harness.results import Results

#: randomized Tukey HSD draws behind the letters of a table: those of ``harness power --all-pairs``
#: (same seed, so the same p-values) unless draws x retrievers x queries would pass :data:`BUDGET`
DRAWS = 10_000
#: permuted scores one metric's letters may cost (about a second); the fewest draws, however large
BUDGET, MIN_DRAWS = 50_000_000, 1_000
#: the most draws behind a table's letters: an alpha that needs more (below 1e-6) gets no letters
MAX_DRAWS = 1_000_000
#: draws of two disjoint query sets per set size behind the page's swap-rate curve: those of ``harness power
#: --all-pairs`` (same seed and sizes, so the same rates as its JSON) unless draws x queries x sizes would
#: pass :data:`BUDGET`, then fewer (never under :data:`MIN_SWAP_DRAWS`)
SWAP_DRAWS, MIN_SWAP_DRAWS = 1_000, 200
#: the fewest retrievers the groups are drawn for (two: the baseline test of the table applies)
MIN_RETRIEVERS = 3


def seed_of(results: Results) -> int:
    """The seed the results were run with (the config's ``seed``), else the default."""
    from harness.results.manifest import Manifest

    return Manifest.of(results).seed


def score_matrix(results: Results, metric: str, names: list[str]) -> tuple[np.ndarray, int]:
    """Retrievers x queries of ``metric`` over the queries every one of ``names`` scored with a finite
    value, and how many queries were left out: the one matrix behind a table's letters and the
    figures of ``harness power --all-pairs`` (every retriever must hold per-query scores of it)."""
    x = _stacked(results, metric, names)
    keep = np.isfinite(x).all(axis=0)
    return x[:, keep], int((~keep).sum())


def matrix_weights(results: Results, metric: str, names: list[str]) -> np.ndarray | None:
    """The traffic weights of the queries :func:`score_matrix` keeps, in its order (None: the folder
    is unweighted, or its weights are all equal: :func:`harness.results.traffic.weights_of`)."""
    w = weights_of(results)
    if w is None:
        return None
    return w[np.isfinite(_stacked(results, metric, names)).all(axis=0)]


def _stacked(results: Results, metric: str, names: list[str]) -> np.ndarray:
    return np.vstack([np.asarray(results.scores(r)[metric], dtype=np.float64) for r in names])


def matrix(results: Results, metric: str, names: list[str]) -> np.ndarray | None:
    """:func:`score_matrix` for a table (None when fewer than 2 queries remain, or a retriever has no
    per-query scores of ``metric``)."""
    lengths = set()
    for r in names:
        scores = results.scores(r) if r in results.per_query else {}
        if metric not in scores:
            return None
        lengths.add(len(scores[metric]))
    if len(lengths) != 1:
        return None
    x, _ = score_matrix(results, metric, names)
    return x if x.shape[1] >= 2 else None


def draws_for(x: np.ndarray) -> int:
    """Draws for a systems x queries matrix: :data:`DRAWS`, fewer where they would pass :data:`BUDGET`."""
    return max(MIN_DRAWS, min(DRAWS, BUDGET // max(1, x.size)))


def alpha_of(results: Results) -> float:
    """The alpha the results were computed with (the config's ``stats.alpha``), else the default."""
    return Manifest.of(results).alpha


def separation(results: Results, names: list[str], metric: str, alpha: float) -> ap.AllPairs | None:
    """The randomized Tukey HSD and letter groups of ``names`` (two or more) on ``metric``, with the
    draws and seed of the table's letters (so a verdict drawn from it agrees with the letters the
    folder's table shows); None without per-query scores of every one. Cached per (names, metric, alpha)."""
    cache: dict[Any, Any] = results._all_pairs
    key = (tuple(names), metric, alpha)
    if key not in cache:
        x = matrix(results, metric, names) if len(names) >= 2 else None
        # at least the draws alpha needs (no randomized p is below 1 / (draws + 1)); none past MAX_DRAWS
        draws = None if x is None else max(draws_for(x), ap.min_draws(alpha))
        w = None if x is None else matrix_weights(results, metric, names)  # weighted folder: weighted letters
        cache[key] = None if x is None or draws > MAX_DRAWS else ap.all_pairs(
            x, names, alpha=alpha, draws=draws, seed=seed_of(results), parametric=False, weights=w
        )  # fmt: skip
    return cache[key]


def table_groups(results: Results, names: list[str], metrics: list[str], alpha: float) -> dict[str, ap.AllPairs]:
    """Per metric, the randomized Tukey HSD and letter groups of ``names`` (empty below
    :data:`MIN_RETRIEVERS`); cached per (names, metric, alpha)."""
    if len(names) < MIN_RETRIEVERS:
        return {}
    figures = {m: separation(results, names, m, alpha) for m in metrics}
    return {m: f for m, f in figures.items() if f is not None}


def swap_curve(results: Results, names: list[str], metric: str) -> list[ap.SwapPoint]:
    """The swap rate of ``metric`` over every pair of ``names`` at the default set sizes (empty below
    :data:`MIN_RETRIEVERS` or with fewer than 4 queries)."""
    if len(names) < MIN_RETRIEVERS:
        return []
    cache: dict[Any, Any] = results._all_pairs
    key = ("swap", tuple(names), metric)
    if key not in cache:
        x = matrix(results, metric, names)
        sizes = ap.default_sizes(x.shape[1]) if x is not None else []
        if x is None or not sizes:
            cache[key] = []
        else:
            w = matrix_weights(results, metric, names)
            cache[key] = ap.swap_rates(x, sizes, swap_draws_for(x, sizes), seed_of(results), weights=w)
    return cache[key]


def swap_draws_for(x: np.ndarray, sizes: list[int]) -> int:
    """Swap-rate draws for a systems x queries matrix: :data:`SWAP_DRAWS`, fewer where draws x queries x
    sizes would pass :data:`BUDGET`."""
    return max(MIN_SWAP_DRAWS, min(SWAP_DRAWS, BUDGET // max(1, x.shape[1] * len(sizes))))


def sentence_line(metric: str, figures: ap.AllPairs) -> str:
    """The legend's sentence: what the set separates, and the groups."""
    return f"All pairs on {metric}: {ap.sentence(figures)}."


def letters_line(figures: ap.AllPairs) -> str:
    """What the letters beside the means are."""
    return (
        "a, b, ...: groups beside each mean (compact letter display): two retrievers that share a letter are "
        f"not separated on that metric at alpha {figures.alpha:g} by the randomized Tukey HSD over all pairs "
        f"({figures.draws:,} draws; harness power DIR --all-pairs gives the tests and the swap rate)."
    )
