"""Every pair of retrievers at once: Tukey HSD, randomized Tukey HSD, letter groups, swap rate.

``harness power`` sizes one pair (a retriever against the baseline). With five or ten retrievers
the questions are which pairs the set separates at all, and whether another set of the same size
would order them the same way. The figures here answer them, over a score matrix ``X`` of ``k``
systems x ``n`` queries (the same queries for every system: a two-way design without replication).

**Tukey HSD** (the parametric one). The two-way ANOVA of systems x queries leaves the residuals

    r_ij = x_ij - mean_i. - mean_.j + mean_..,   mse = sum r_ij^2 / df,   df = (k - 1)(n - 1)

and for a pair (a, b), ``q = |mean_a - mean_b| / sqrt(mse / n)`` is referred to the studentized range
distribution of ``k`` means with ``df`` degrees of freedom: ``p = studentized_range.sf(q, k, df)``.
Taking out the query effect (the row means) is what makes it the paired design: most of the
variance of IR scores is between queries, not between systems.

**Randomized Tukey HSD** (Carterette, "Multiple testing in statistical analysis of systems-based
information retrieval experiments", TOIS 2012). Under the null hypothesis that the systems are
interchangeable, each query's ``k`` scores may be shuffled among the systems. Per draw, every
query's scores are permuted independently; the statistic is the largest difference between two
permuted system means, ``max_i mean_i - min_i mean_i``. The p-value of a pair is the share of draws
whose statistic reaches the observed ``|mean_a - mean_b|``, counted as Phipson and Smyth ("Permutation
p-values should never be zero", Stat. Appl. Genet. Mol. Biol. 2010) count it: ``p = (reached + 1) /
(draws + 1)``, the observed assignment being one of the assignments the null allows. So no p is below
``1 / (draws + 1)``, and fewer draws than :func:`min_draws` cannot separate any pair at alpha (refused).
The draws are made and counted chunk by chunk (the exceedances of each pair summed), so memory does not
grow with the number of draws. Comparing each pair with the
distribution of the *maximum* difference is what holds the family-wise error at alpha over all
``k (k - 1) / 2`` pairs, without the normal assumption of the parametric test.

**Groups** (a compact letter display, Piepho, "An algorithm for a letter-based representation of
all-pairwise comparisons", J. Comput. Graph. Stat. 2004): every two retrievers that share a group
are not separated at alpha, and every two that are not separated share a group. The groups are the
maximal cliques of the graph "not separated" (Bron-Kerbosch), less those whose every member and
every pair another group already covers.

**Discriminative power** (Sakai, "Evaluating evaluation metrics based on the bootstrap", SIGIR
2006): the share of the pairs a test separates at alpha.

**Swap rate** (Voorhees and Buckley, "The effect of topic set size on retrieval experiment error",
SIGIR 2002): for a set size ``n`` (at most half the queries), draw two disjoint sets of ``n``
queries and, per pair, the differences ``d_A`` and ``d_B`` of its means on each. Ties are counted as
what they are, never as agreement:

- a draw whose first set ties the pair (``d_A = 0``) has no order to keep or swap: it is left out of
  the rate and reported apart (``first_half_ties``: its count and share of all draws x pairs), as
  Voorhees and Buckley keep a difference of 0 out of their bins;
- of the others, a pair the second set orders oppositely (``d_A * d_B < 0``) is a swap, and one the
  second set ties (``d_B = 0``) is half a swap (the second set cannot say which is better: a coin
  would order it wrongly half the time).

The rate is ``(swaps + ties_B / 2) / (draws x pairs with d_A != 0)`` (None where every draw ties on
the first set); per bin of ``|d_A|`` (the difference seen on the first set, as Voorhees and Buckley
bin it) the same, which says how large a difference must be before a set of that size orders it
reliably. ``n_for_5pct`` is the set size of the grid from which the rate stays under 5% at every
larger size of the grid (None when the largest is not under): a rate that dips under 5% at a small
``n`` only because most small sets tie is not a set size that suffices.

**Traffic weights** (``dataset: {weights: count}``; :mod:`harness.stats.weighted`). Each query ``j``
carries a weight ``w_j`` (its production count), ``W = sum w``, Kish's ``n_eff = W^2 / sum w^2``.
Weights are importance weights over distinct queries, as in the run table, so every figure weighs
the queries and every uncertainty rests on ``n_eff``:

- system means ``m_i = sum_j w_j x_ij / W`` (the run table's weighted means);
- Tukey HSD: the weighted least-squares fit of ``x_ij = a_i + b_j`` (weights ``w_j``; statsmodels'
  ``WLS`` of ``score ~ C(system) + C(query)``) leaves ``r_ij = x_ij - m_i - mean_.j + mean_i(m_i)``,
  and ``mse = sum_j w_j sum_i r_ij^2 / W * n_eff / (n_eff - 1) / (k - 1)`` on
  ``df = (k - 1)(n_eff - 1)``, ``q = |m_a - m_b| / sqrt(mse / n_eff)``. It is the unweighted ANOVA
  when the weights are equal, and with two systems ``q / sqrt(2)`` is the weighted paired t of the
  run table (``s_w`` and ``n_eff`` of :mod:`harness.stats.weighted`), as ``q / sqrt(2)`` is the
  paired t unweighted;
- randomized Tukey HSD: each query's scores permuted among the systems as before, the statistic the
  range of the permuted *weighted* means (each query keeps its weight wherever its scores go: the
  test of the matrix whose column ``j`` is scaled by ``w_j n / W``, whose plain means are the
  weighted ones, so the draws are the unweighted test's);
- swap rate: the two disjoint sets are drawn uniformly over the queries as before, each query
  keeping its weight, and the differences are the weighted means' of each set (the bootstrap of the
  run table resamples so too); a set whose every query weighs 0 has no mean and counts as a tie.

Equal weights are no weights: :func:`all_pairs` then runs the unweighted code, bit for bit.

Everything is numpy-vectorised: permutations are drawn in chunks of a few million scores, so 10,000
draws over 10 systems x 1,000 queries take about a second.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from harness.stats.weighted import as_weights, effective_n, is_uniform, rescaled

#: edges of the |difference| bins of the swap rate (the last bin is open above)
BIN_EDGES = (0.0, 0.01, 0.02, 0.03, 0.05, 0.1, math.inf)
#: the swap rate a set size must get under to order a pair "reliably" (Voorhees and Buckley's 5%)
SWAP_TARGET = 0.05
#: the set sizes of the default grid (capped at half the queries, which is added)
GRID = (5, 10, 25, 50, 100, 200, 500, 1000, 2000, 5000)
#: scores per chunk of draws (memory: about 8 bytes x 3 each)
_CHUNK = 1 << 21
#: below this, relative to the largest |score|, a difference is rounding noise
_ZERO = 1e-12
#: permutations of up to this many systems are drawn from a table of all k! (faster than shuffling)
_TABLE_K = 7


@dataclass
class Pair:
    """One pair of systems: ``delta = mean_a - mean_b``; ``q`` None when it is infinite (mse 0)."""

    a: str
    b: str
    delta: float
    q: float | None
    #: the parametric Tukey HSD's p (None where only the randomized test was run)
    p: float | None
    p_randomized: float | None = None


@dataclass
class SwapPoint:
    """The swap rate at one set size ``n`` over ``draws`` pairs of disjoint query sets (module doc:
    ``rate`` over the draws x pairs whose first set differs, None where none does)."""

    n: int
    draws: int
    rate: float | None
    #: per bin of |difference on the first set| (a difference of 0 is in no bin): ``low``, ``high``
    #: (None: open), ``count``, ``rate``
    bins: list[dict[str, Any]] = field(default_factory=list)
    #: draws x pairs whose first set ties the pair (left out of ``rate``), and all draws x pairs
    first_ties: int = 0
    cells: int = 0
    #: of the others, how many the second set orders oppositely, and how many it ties (half a swap each)
    swaps: int = 0
    second_ties: int = 0

    @property
    def first_tie_share(self) -> float:
        """Share of all draws x pairs whose first set ties the pair."""
        return self.first_ties / self.cells if self.cells else 0.0

    def to_json(self) -> dict[str, Any]:
        # what the rate counts (swaps and half-swaps over the pairs compared), then what it leaves out
        counted = {"swaps": self.swaps, "second_half_ties": self.second_ties, "compared": self.cells - self.first_ties}
        left_out = {"count": self.first_ties, "share": self.first_tie_share}
        return {"n": self.n, "draws": self.draws, "rate": self.rate, **counted, "first_half_ties": left_out,
                "bins": self.bins}  # fmt: skip


def n_for_target(points: Sequence[SwapPoint], target: float = SWAP_TARGET) -> int | None:
    """The set size from which the swap rate stays under ``target`` at every larger size of the grid;
    None when the largest size is not under it (or its rate is undefined)."""
    found = None
    for s in points:
        if s.rate is not None and s.rate < target:
            found = s.n if found is None else found
        else:
            found = None
    return found


@dataclass
class AllPairs:
    """Every figure of ``harness power --all-pairs`` for one metric (see module doc)."""

    names: list[str]
    means: list[float]
    n: int
    mse: float
    #: ``(k - 1)(n - 1)``; weighted: ``(k - 1)(n_eff - 1)``, a real number
    df: float
    pairs: list[Pair]
    draws: int
    seed: int
    alpha: float
    groups: list[list[str]]
    groups_from: str
    swap: list[SwapPoint] = field(default_factory=list)
    #: traffic-weighted figures: Kish's effective number of the ``n`` queries (None: unweighted)
    effective_n: float | None = None

    def separates(self, pair: Pair) -> bool:
        """Whether the test the groups follow separates ``pair`` at alpha."""
        p = pair.p_randomized if self.groups_from == "randomized" else pair.p
        return p is not None and p < self.alpha

    @property
    def separated(self) -> dict[str, int]:
        """Pairs separated at alpha, per test."""
        out = {"tukey": sum(p.p is not None and p.p < self.alpha for p in self.pairs)}
        out["randomized"] = sum(p.p_randomized is not None and p.p_randomized < self.alpha for p in self.pairs)
        return out

    @property
    def discriminative_power(self) -> dict[str, float]:
        """Share of the pairs separated at alpha, per test (Sakai 2006)."""
        total = max(1, len(self.pairs))
        return {k: v / total for k, v in self.separated.items()}

    @property
    def n_for_5pct(self) -> int | None:
        """The set size from which the swap rate stays under 5% for every larger size of the grid
        (:func:`n_for_target`); None when none does."""
        return n_for_target(self.swap)

    @property
    def letters(self) -> dict[str, str]:
        """Retriever -> its group letters (``a`` is the group of the best mean)."""
        return letters(self.names, self.groups)

    def to_json(self) -> dict[str, Any]:
        """The JSON of docs/power.md, "All pairs"."""
        out: dict[str, Any] = {
            "n": self.n,
            **({} if self.effective_n is None else {"effective_n": self.effective_n}),
            "alpha": self.alpha,
            "means": dict(zip(self.names, self.means)),
            "tukey": {
                "mse": self.mse,
                "df": self.df,
                "pairs": [{"a": p.a, "b": p.b, "delta": p.delta, "q": p.q, "p": p.p} for p in self.pairs],
            },
            "randomized": {
                "draws": self.draws,
                "seed": self.seed,
                "pairs": [{"a": p.a, "b": p.b, "p": p.p_randomized} for p in self.pairs],
            },
            "groups": self.groups,
            "groups_from": self.groups_from,
            "letters": self.letters,
            "discriminative_power": self.discriminative_power,
            "swap_rate": [s.to_json() for s in self.swap],
            "n_for_5pct": self.n_for_5pct,
        }
        return out


# ---------------------------------------------------------------------- Tukey HSD
def _matrix(scores: Any) -> np.ndarray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"scores must be systems x queries (2-d), got shape {x.shape}")
    if x.shape[1] < 2:
        raise ValueError(f"all-pairs tests need at least 2 queries, got {x.shape[1]}")
    if not np.isfinite(x).all():
        raise ValueError("scores must be finite (drop the queries a system has no score for first)")
    return x


def _tol(x: np.ndarray) -> float:
    return _ZERO * max(1.0, float(np.abs(x).max(initial=0.0)))


def query_weights(weights: Any, n: int) -> np.ndarray | None:
    """``weights`` (one per query) rescaled to a largest weight of 1, or None when there are none or
    all are equal (then every figure is the unweighted one, bit for bit)."""
    w = rescaled(as_weights(weights, n))
    return None if w is None or is_uniform(w) else w


def weighted_means(x: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """Each system's mean over the queries, weighted by ``w`` (None: the plain means)."""
    return x.mean(axis=1) if w is None else x @ w / float(w.sum())


def two_way_mse(scores: Any, weights: Any = None) -> tuple[float, float]:
    """Residual mean square and its degrees of freedom of the two-way ANOVA without replication;
    with ``weights``, the weighted form of the module doc (df ``(k - 1)(n_eff - 1)``)."""
    x = _matrix(scores)
    k, n = x.shape
    w = query_weights(weights, n)
    if w is None:
        r = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
        df = (k - 1) * (n - 1)
        return float((r * r).sum() / df) if df else 0.0, df
    means = weighted_means(x, w)
    r = x - means[:, None] - x.mean(axis=0, keepdims=True) + means.mean()
    n_eff = effective_n(w)
    if k < 2 or n_eff <= 1:
        return 0.0, 0.0
    mse = float(w @ (r * r).sum(axis=0)) / float(w.sum()) * n_eff / (n_eff - 1) / (k - 1)
    return mse, (k - 1) * (n_eff - 1)


def tukey_hsd(
    scores: Any, names: Sequence[str], *, p_values: bool = True, weights: Any = None
) -> tuple[float, float, list[Pair]]:
    """``mse``, ``df`` and per pair (in the order of ``combinations(names, 2)``) delta, q and p.

    A difference of 0 gives q 0 and p 1; with an mse of 0 (every query moves every system alike) a
    non-zero difference is certain: q None (infinite), p 0. Never nan. scipy's studentized range
    integrates numerically (about 0.1 s a value): ``p_values=False`` leaves p None, for the reports,
    which need only the randomized test. ``weights``: the weighted means and mse of the module doc,
    ``se = sqrt(mse / n_eff)``.
    """
    from scipy.stats import studentized_range

    x = _matrix(scores)
    k, n = x.shape
    w = query_weights(weights, n)
    mse, df = two_way_mse(x, w)
    means = weighted_means(x, w)
    tol = _tol(x)
    se = math.sqrt(mse / (n if w is None else effective_n(w)))
    out = []
    for i, j in combinations(range(k), 2):
        delta = float(means[i] - means[j])
        if abs(delta) <= tol:
            q, p = 0.0, 1.0
        elif se <= tol:
            q, p = None, 0.0
        else:
            q, p = abs(delta) / se, None
        out.append(Pair(names[i], names[j], delta, q, p))
    todo = [pair for pair in out if pair.p is None]
    if p_values and todo and df > 0:  # one vectorised call
        ps = np.atleast_1d(studentized_range.sf(np.array([pair.q for pair in todo]), k, df))
        for pair, p in zip(todo, ps):
            pair.p = 0.0 if math.isnan(p) else min(1.0, max(0.0, float(p)))
    return mse, df, out


# ---------------------------------------------------------------------- randomized Tukey HSD
def _permuted_sums(rng: np.random.Generator, moving: np.ndarray, c: int, table: np.ndarray | None) -> np.ndarray:
    """``c`` draws of each system's sum after every row of ``moving`` (queries x systems) is
    permuted independently: shape (c, k). ``table``: every permutation of every row (rows x k!
    blocks of k), where small enough to draw one index per row instead of shuffling."""
    m, k = moving.shape
    if table is not None:
        n_perm = table.shape[0] // m
        pick = rng.integers(0, n_perm, size=(c, m)) + np.arange(m) * n_perm
        return table.take(pick.ravel(), axis=0).reshape(c, m, k).sum(axis=1)
    z = np.broadcast_to(moving, (c, m, k)).reshape(c * m, k).copy()
    rng.permuted(z, axis=1, out=z)
    return z.reshape(c, m, k).sum(axis=1)


def _table(moving: np.ndarray) -> np.ndarray | None:
    """Every permutation of every row of ``moving`` (rows x k! of k), or None when too large."""
    from itertools import permutations

    m, k = moving.shape
    if k > _TABLE_K or m * math.factorial(k) * k > _CHUNK:
        return None
    perms = np.array(list(permutations(range(k))), dtype=np.intp)
    return moving[:, perms].reshape(m * len(perms), k)


def _null_chunks(x: np.ndarray, draws: int, seed: int) -> Iterator[np.ndarray]:
    """The null distribution of :func:`max_range_null`, chunk by chunk (a few million scores each)."""
    k, n = x.shape
    moving = np.ascontiguousarray(x[:, np.ptp(x, axis=0) > 0].T)  # (m, k)
    m = moving.shape[0]
    if m == 0:
        yield np.zeros(draws)
        return
    rng = np.random.default_rng(seed)
    table = _table(moving)
    chunk = max(1, _CHUNK // (m * k))
    for start in range(0, draws, chunk):
        sums = _permuted_sums(rng, moving, min(chunk, draws - start), table)
        yield (sums.max(axis=1) - sums.min(axis=1)) / n


def max_range_null(scores: Any, draws: int, seed: int) -> np.ndarray:
    """Per draw, ``max - min`` of the system means after each query's scores are permuted among the
    systems (the null distribution of the randomized Tukey HSD). Queries whose scores are equal for
    every system move no mean apart and are left out of the shuffling (the statistic is unchanged).
    Kept whole here (``draws`` floats); :func:`randomized_tukey` counts chunk by chunk instead."""
    x = _matrix(scores)
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    return np.concatenate(list(_null_chunks(x, draws, seed)))


def min_draws(alpha: float) -> int:
    """The fewest draws whose smallest p, ``1 / (draws + 1)``, is under ``alpha``: with fewer, the
    randomized test cannot separate any pair at alpha, whatever the scores."""
    b = max(1, math.floor(1 / alpha))
    while (b + 1) * alpha <= 1:
        b += 1
    while b > 1 and b * alpha > 1:
        b -= 1
    return b


def too_few_draws(draws: int, alpha: float) -> str | None:
    """Why ``draws`` cannot support ``alpha`` (fewer than :func:`min_draws`), or None when they can."""
    need = min_draws(alpha)
    if draws >= need:
        return None
    return (
        f"{draws:,} draw{'' if draws == 1 else 's'} cannot separate a pair at alpha {alpha:g} "
        f"(no randomized p is below 1 / (draws + 1)): give at least {need:,}"
    )


def randomized_tukey(scores: Any, draws: int, seed: int, weights: Any = None) -> list[float]:
    """Per pair (``combinations`` order), ``(reached + 1) / (draws + 1)``: ``reached`` the draws whose
    largest permuted mean difference reaches the pair's observed ``|delta|`` (Carterette 2012; the +1s
    of Phipson and Smyth 2010: a p is never 0). A difference of 0 gives 1. The exceedances are counted
    chunk by chunk: memory does not grow with ``draws``. ``weights``: the weighted means (the module
    doc), as the plain means of the columns scaled by ``w_j n / W``."""
    x = _matrix(scores)
    w = query_weights(weights, x.shape[1])
    if w is not None:
        x = x * (w * (x.shape[1] / float(w.sum())))[None, :]
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    means = x.mean(axis=1)
    tol = _tol(x)
    # a draw equal to the observed value counts
    observed = np.array([abs(float(means[i] - means[j])) - tol for i, j in combinations(range(x.shape[0]), 2)])
    reached = np.zeros(observed.size, dtype=np.int64)
    for null in _null_chunks(x, draws, seed):
        null.sort()
        reached += null.size - np.searchsorted(null, observed, side="left")
    return [float((r + 1) / (draws + 1)) for r in reached]


# ---------------------------------------------------------------------- groups
def _maximal_cliques(adj: list[set[int]]) -> list[frozenset[int]]:
    """Bron-Kerbosch with pivoting: every maximal clique of the graph ``adj``."""
    out: list[frozenset[int]] = []

    def expand(r: set[int], p: set[int], x: set[int]) -> None:
        if not p and not x:
            out.append(frozenset(r))
            return
        pivot = max(p | x, key=lambda u: len(adj[u] & p))
        for v in sorted(p - adj[pivot]):
            expand(r | {v}, p & adj[v], x & adj[v])
            p = p - {v}
            x = x | {v}

    expand(set(), set(range(len(adj))), set())
    return out


def letter_groups(names: Sequence[str], means: Sequence[float], separated: set[frozenset[str]]) -> list[list[str]]:
    """The compact letter display of ``names``: a list of groups, each a list of names.

    Two names share a group exactly when they are not ``separated`` (a set of name pairs). Groups
    are the maximal cliques of "not separated", less redundant ones (every member and every pair
    covered by another kept group), each ordered by mean (best first), the groups by their best
    member's mean, then by their next ones'.
    """
    k = len(names)
    index = {name: i for i, name in enumerate(names)}
    apart = {frozenset(index[n] for n in pair) for pair in separated}
    adj = [{j for j in range(k) if j != i and frozenset((i, j)) not in apart} for i in range(k)]
    cliques = _maximal_cliques(adj)
    # drop redundant cliques, smallest first
    kept = sorted(cliques, key=lambda c: (len(c), sorted(c)))
    for c in list(kept):
        others = [o for o in kept if o is not c]
        members = all(any(v in o for o in others) for v in c)
        pairs = all(any(u in o and v in o for o in others) for u, v in combinations(sorted(c), 2))
        if members and pairs:
            kept.remove(c)
    order = sorted(range(k), key=lambda i: (-means[i], i))
    rank = {i: r for r, i in enumerate(order)}
    groups = [sorted(c, key=lambda i: rank[i]) for c in kept]
    groups.sort(key=lambda g: [rank[i] for i in g])
    return [[names[i] for i in g] for g in groups]


def codes(count: int) -> list[str]:
    """The codes of ``count`` groups, no one of which contains another: ``a`` .. ``z`` up to 26
    groups; past 26 every code has the same length (``aa``, ``ab``, .. ``zz``, then ``aaa`` ..), so
    that group 27 is never read as sharing group 1's ``a``."""
    width = 1
    while 26**width < count:
        width += 1
    out = []
    for i in range(count):
        s = ""
        for _ in range(width):
            i, r = divmod(i, 26)
            s = chr(ord("a") + r) + s
        out.append(s)
    return out


def letters(names: Sequence[str], groups: Sequence[Sequence[str]]) -> dict[str, str]:
    """Name -> the codes of the groups it belongs to (``a`` is the first group): written together
    (``ab``) while every code is one letter, joined by ``,`` past 26 groups (``aa,ab``), so that no
    retriever's letters contain a code of a group it is not in."""
    out: dict[str, list[str]] = {name: [] for name in names}
    for code, members in zip(codes(len(groups)), groups):
        for name in members:
            out[name].append(code)
    sep = "" if len(groups) <= 26 else ","
    return {name: sep.join(c) for name, c in out.items()}


# ---------------------------------------------------------------------- swap rate
def default_sizes(queries: int) -> list[int]:
    """The grid of set sizes: 5, 10, 25, 50, 100, ... up to half the queries, and half the queries."""
    half = queries // 2
    sizes = [s for s in GRID if s < half]
    return [*sizes, half] if half >= 1 else []


def swap_rates(
    scores: Any,
    sizes: Sequence[int],
    draws: int,
    seed: int,
    edges: Sequence[float] = BIN_EDGES,
    weights: Any = None,
) -> list[SwapPoint]:
    """Voorhees-Buckley swap rates of every pair at each set size (see module doc); ``weights``: each
    set's weighted means (a set of zero weights only: a tie)."""
    x = _matrix(scores)
    k, total = x.shape
    w = query_weights(weights, total)
    xw = None if w is None else x * w[None, :]
    pairs = list(combinations(range(k), 2))
    ia, ib = (np.array([p[i] for p in pairs], dtype=np.intp) for i in (0, 1))
    rng = np.random.default_rng(seed)
    tol = _tol(x)
    out = []
    for n in sizes:
        if not (1 <= n <= total // 2):
            raise ValueError(f"set size {n} is not in 1..{total // 2} (half of {total} queries)")
        chunk = max(1, _CHUNK // (2 * n * k + total))
        nb = len(edges) - 1
        counts, bin_swaps, bin_ties = (np.zeros(nb, dtype=np.int64) for _ in range(3))
        first_ties = 0
        for start in range(0, draws, chunk):
            c = min(chunk, draws - start)
            # the n smallest of c x total uniform keys are set A, the next n set B: two disjoint
            # uniformly random sets (argpartition: linear, not a sort of every query)
            order = np.argpartition(rng.random((c, total)), sorted({n - 1, 2 * n - 1}), axis=1)
            if xw is None:
                ma = x[:, order[:, :n]].mean(axis=2)  # (k, c)
                mb = x[:, order[:, n : 2 * n]].mean(axis=2)
            else:
                ma, mb = (_set_means(xw, w, order[:, part]) for part in (slice(0, n), slice(n, 2 * n)))
            da, db = ma[ia] - ma[ib], mb[ia] - mb[ib]  # (pairs, c)
            differs = np.abs(da) > tol
            first_ties += int((~differs).sum())
            da, db = da[differs], db[differs]
            tie_b = np.abs(db) <= tol
            swap = (da * db < 0) & ~tie_b
            which = np.clip(np.searchsorted(np.asarray(edges[1:-1]), np.abs(da), side="right"), 0, nb - 1)
            counts += np.bincount(which, minlength=nb)
            bin_swaps += np.bincount(which[swap], minlength=nb)
            bin_ties += np.bincount(which[tie_b], minlength=nb)
        cells = draws * len(ia)
        compared = int(counts.sum())
        swaps, ties = int(bin_swaps.sum()), int(bin_ties.sum())
        bins = [
            {
                "low": float(edges[b]),
                "high": None if math.isinf(edges[b + 1]) else float(edges[b + 1]),
                "count": int(counts[b]),
                "rate": float((bin_swaps[b] + bin_ties[b] / 2) / counts[b]) if counts[b] else None,
            }
            for b in range(nb)
        ]
        rate = (swaps + ties / 2) / compared if compared else None
        out.append(SwapPoint(int(n), int(draws), rate, bins, first_ties, int(cells), swaps, ties))
    return out


def _set_means(xw: np.ndarray, w: Any, idx: np.ndarray) -> np.ndarray:
    """Weighted means (k, c) of the query sets ``idx`` (c, n): ``sum(w x) / sum(w)`` per set; a set
    whose weights are all 0 gets 0 for every system (its differences are ties)."""
    total = w[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = xw[:, idx].sum(axis=2) / total[None, :]
    return np.nan_to_num(means, nan=0.0, posinf=0.0, neginf=0.0)


# ---------------------------------------------------------------------- all of it
def all_pairs(
    scores: Any,
    names: Sequence[str],
    *,
    alpha: float,
    draws: int,
    seed: int,
    sizes: Sequence[int] | None = None,
    swap_draws: int = 0,
    groups_from: str = "randomized",
    parametric: bool = True,
    weights: Any = None,
) -> AllPairs:
    """Tukey HSD, randomized Tukey HSD, groups and (with ``swap_draws``) swap rates of ``scores``
    (systems x queries, rows named by ``names``); ``parametric=False`` skips the Tukey HSD's p-values
    (see :func:`tukey_hsd`). ``weights`` (one per query, traffic counts): every figure weighted as
    the module doc says; equal weights are no weights."""
    x = _matrix(scores)
    w = query_weights(weights, x.shape[1])
    if len(names) != x.shape[0] or len(set(names)) != len(names):
        raise ValueError("names must name every row of scores once")
    if groups_from not in ("randomized", "tukey") or (groups_from == "tukey" and not parametric):
        raise ValueError(f"groups_from must be 'randomized' or 'tukey' (with parametric), got {groups_from!r}")
    mse, df, pairs = tukey_hsd(x, names, p_values=parametric, weights=w)
    for pair, p in zip(pairs, randomized_tukey(x, draws, seed, w)):
        pair.p_randomized = p
    means = [float(v) for v in weighted_means(x, w)]
    out = AllPairs(list(names), means, x.shape[1], mse, df, pairs, draws, seed, alpha, [], groups_from)
    out.effective_n = None if w is None else effective_n(w)
    out.groups = letter_groups(list(names), means, {frozenset((p.a, p.b)) for p in pairs if out.separates(p)})
    if swap_draws:
        sizes = default_sizes(x.shape[1]) if sizes is None else sizes
        out.swap = swap_rates(x, sizes, swap_draws, seed, weights=w)
    return out


def sentence(result: AllPairs) -> str:
    """The result in one sentence: "with 93 queries this set separates 6 of 10 pairs at alpha 0.05
    (randomized Tukey HSD); groups: {bm25, bm25_k1}, {dense}"."""
    test = "randomized Tukey HSD" if result.groups_from == "randomized" else "Tukey HSD"
    separated = result.separated[result.groups_from]
    groups = ", ".join("{" + ", ".join(g) + "}" for g in result.groups)
    return (
        f"with {result.n:,} queries this set separates {separated} of {len(result.pairs)} pairs at alpha "
        f"{result.alpha:g} ({test}); groups: {groups}"
    )


def swap_sentence(result: AllPairs) -> str:
    """What the swap rate says about the set size, and which differences it holds for: ``n_for_5pct``
    (the size from which every larger size of the grid is under 5%) or that none is."""
    if not result.swap:
        return ""
    tied = sum(s.first_ties for s in result.swap) / max(1, sum(s.cells for s in result.swap))
    which = (
        "for pairs whose means differ on the first set (a tie on the second counts half a swap; "
        f"{tied:.0%} of draws x pairs tie on the first set and are left out)"
    )
    n5 = result.n_for_5pct
    if n5 is not None:
        return f"swap rate under 5% from n = {n5} on, at every larger n of the grid, {which}"
    return (
        f"swap rate not under 5% at n = {result.swap[-1].n}, the largest n of the grid, {which}: the set is too "
        "small to order these retrievers reliably"
    )


def legend(result: AllPairs) -> str:
    """What the columns of ``harness power --all-pairs`` mean: the group letters and ``q``."""
    test = "randomized Tukey HSD" if result.groups_from == "randomized" else "Tukey HSD"
    return (
        f"group: retrievers that share a letter are not separated at alpha {result.alpha:g} by the {test}; "
        "no shared letter: separated (a is the group of the best mean). q: the studentized range "
        "|Δ| / sqrt(mse / n), what the Tukey HSD refers to its distribution for k means; p rand.: "
        "(draws reaching |Δ| + 1) / (draws + 1)."
    )
