"""Which documents get questions: a seeded draw, stratified by length, one per duplicate group.

A plain random draw over-samples whatever the corpus repeats (boilerplate pages, twins of one
article) and whatever length dominates it. So:

1. every document gets a *length stratum*: the documents ordered by word count (ties by position)
   and cut into ``strata`` parts of equal size (length quantiles of the whole corpus);
2. exact-duplicate groups (:func:`harness.inspect.duplicates.duplicate_documents`) and near-duplicate
   groups (:func:`harness.inspect.near.near_duplicate_documents`, MinHash verified exactly) are
   merged into *units*; each unit with an eligible member offers one candidate, chosen at random;
   excluded documents (already judged in a human set) and documents without a word (empty,
   whitespace only: nothing to ask about) are never candidates;
3. ``n`` is shared out over the strata by their share of the candidates (largest remainders, so
   each stratum's count is within one of ``n`` times its share), and each stratum draws its count
   from its candidates without replacement.

Randomness is numpy's ``Generator(PCG64)`` seeded with ``[seed, purpose]``, and only its uniform
doubles are used (sorted with a stable sort): the same seed draws the same documents on every
platform and run; nothing depends on Python's ``hash()`` or a set's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.errors import InputError

#: length strata by default (quartiles)
STRATA = 4
#: the purposes a seed is mixed with, so two random choices never share a stream
_UNIT_PICK, _STRATUM_DRAW = 1, 2


@dataclass
class Draw:
    """What was drawn: positions in draw order, each one's stratum, and the pool it came from."""

    positions: list[int]
    stratum: list[int]
    strata: int
    candidates_per_stratum: list[int]
    quota: list[int]
    excluded: int = 0
    grouped_away: int = 0  # documents not candidates because a twin of theirs stands for the group
    wordless: int = 0  # documents without a word (never candidates)
    boundaries: list[int] = field(default_factory=list)  # largest word count per stratum


def rng(seed: int, purpose: int, *more: int) -> np.random.Generator:
    """The one random stream for ``purpose`` (and ``more`` keys, e.g. a document's position) under
    ``seed``: platform-independent PCG64, its state from a ``SeedSequence`` of the integers."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), purpose, *map(int, more)])))


def word_counts(texts: Iterable[str]) -> np.ndarray:
    """Words per text (:func:`harness.synth.words.count`: scripts without spaces counted too)."""
    from harness.synth.words import count

    return np.fromiter((count(t) for t in texts), dtype=np.int64)


def length_strata(lengths: np.ndarray, strata: int = STRATA) -> np.ndarray:
    """Each document's stratum 0..strata-1: ordered by length (ties by position) and cut into
    ``strata`` parts whose sizes differ by at most one."""
    n = len(lengths)
    order = np.argsort(lengths, kind="stable")
    out = np.empty(n, dtype=np.int64)
    for s, part in enumerate(np.array_split(order, strata)):
        out[part] = s
    return out


def units(n: int, groups: Iterable[Sequence[int]]) -> np.ndarray:
    """A unit id per position: positions joined by any group (exact or near, chained) share one
    (connected components of the graph whose edges join each group's first member to the others)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows: list[int] = []
    cols: list[int] = []
    for g in groups:
        g = list(g)
        rows += [g[0]] * (len(g) - 1)
        cols += g[1:]
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def apportion(n: int, counts: Sequence[int]) -> list[int]:
    """``n`` shared out in proportion to ``counts`` by largest remainders (Hamilton): each share is
    the floor or the ceiling of ``n * count / total``, so within one of it; ties go to the lower
    stratum."""
    total = sum(counts)
    if total == 0:
        return [0] * len(counts)
    exact = [n * c / total for c in counts]
    quota = [int(np.floor(e)) for e in exact]
    left = n - sum(quota)
    by_remainder = sorted(range(len(counts)), key=lambda s: (-(exact[s] - quota[s]), s))
    for s in by_remainder[:left]:
        quota[s] += 1
    return quota


def draw(
    lengths: np.ndarray,
    n: int,
    seed: int,
    *,
    groups: Iterable[Sequence[int]] = (),
    exclude: Iterable[int] = (),
    without_words: Iterable[int] = (),
    strata: int = STRATA,
) -> Draw:
    """Draw ``n`` positions of a corpus of ``len(lengths)`` documents (see the module docstring);
    ``without_words``: positions of documents with no word (never candidates, counted apart).
    :class:`~harness.errors.InputError` when fewer than ``n`` can be drawn."""
    size = len(lengths)
    if size == 0:
        raise InputError("the corpus has no documents: nothing to draw questions from", field="--dataset")
    if n < 1:
        raise InputError("must be at least 1", field="--queries")
    strata = max(1, min(strata, size))
    stratum = length_strata(lengths, strata)
    unit = units(size, groups)
    excluded = np.zeros(size, dtype=bool)
    ex = list(exclude)
    if ex:
        excluded[np.asarray(ex, dtype=np.int64)] = True
    wordless = np.zeros(size, dtype=bool)
    empty = list(without_words)
    if empty:
        wordless[np.asarray(empty, dtype=np.int64)] = True
    eligible = np.flatnonzero(~excluded & ~wordless)
    # one candidate per unit: its eligible members in position order, one picked by a uniform draw
    members: dict[int, list[int]] = {}
    for i in eligible.tolist():
        members.setdefault(int(unit[i]), []).append(i)
    picks = rng(seed, _UNIT_PICK).random(len(members))
    candidates = sorted(m[int(u * len(m))] for m, u in zip((members[k] for k in sorted(members)), picks))
    cand = np.asarray(candidates, dtype=np.int64)
    if n > len(cand):
        why = []
        if ex:
            why.append(f"{int(excluded.sum())} excluded")
        if wordless.any():
            why.append(f"{int(wordless.sum())} without a word")
        if len(eligible) > len(cand):
            why.append(f"{len(eligible) - len(cand)} twins of another candidate in a duplicate group")
        extra = f" ({', '.join(why)})" if why else ""
        raise InputError(
            f"{n} asked, but the corpus has only {len(cand)} documents that can be drawn{extra}", field="--queries"
        )
    per = [cand[stratum[cand] == s] for s in range(strata)]
    quota = apportion(n, [len(p) for p in per])
    stream = rng(seed, _STRATUM_DRAW)
    chosen: list[int] = []
    of: list[int] = []
    for s, pool in enumerate(per):
        keys = stream.random(len(pool))
        take = pool[np.argsort(keys, kind="stable")[: quota[s]]]
        chosen += take.tolist()
        of += [s] * len(take)
    bounds = [int(lengths[stratum == s].max()) if (stratum == s).any() else 0 for s in range(strata)]
    return Draw(
        positions=chosen,
        stratum=of,
        strata=strata,
        candidates_per_stratum=[len(p) for p in per],
        quota=quota,
        excluded=int(excluded.sum()),
        grouped_away=len(eligible) - len(cand),
        wordless=int(wordless.sum()),
        boundaries=bounds,
    )
