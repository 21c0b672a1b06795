"""``--sample N --seed S``: N queries, stratified by how often they were asked, so rare ones stay.

A plain random draw of queries keeps the head of the traffic and loses its long tail; weighting the
draw by count keeps only the head. Queries are put in strata by the base-2 logarithm of their
count (1, 2-3, 4-7, 8-15, ...), N is shared among the strata in proportion to their sizes (largest
remainders, and at least one per stratum while N allows), and each stratum is drawn uniformly with
``numpy.random.default_rng(seed)`` over its queries in id order: the same spans and seed give the
same sample. The weights (``count``) of the sampled queries are kept as they were, so a weighted
mean over the sample still estimates the traffic's.
"""

from __future__ import annotations

import numpy as np


def stratified_sample(counts: dict[str, int], n: int, seed: int) -> set[str]:
    """The ids of ``n`` queries drawn from ``counts`` (query id -> count), stratified by log2(count)."""
    if n >= len(counts):
        return set(counts)
    strata: dict[int, list[str]] = {}
    for qid in sorted(counts):
        strata.setdefault(max(int(counts[qid]), 1).bit_length(), []).append(qid)
    keys = sorted(strata)
    sizes = np.array([len(strata[k]) for k in keys], dtype=np.float64)
    take = np.zeros(len(keys), dtype=np.int64)
    if n >= len(keys):
        take += 1  # one from every stratum first: the rare ones are the point
    rest = n - int(take.sum())
    share = sizes / sizes.sum() * rest
    take += np.floor(share).astype(np.int64)
    remainder = n - int(take.sum())
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    for i in order[:remainder]:
        take[i] += 1
    take = np.minimum(take, sizes.astype(np.int64))
    short = n - int(take.sum())  # a stratum smaller than its share: the others make it up, in order
    for i in range(len(keys)):
        extra = min(short, len(strata[keys[i]]) - int(take[i]))
        take[i] += extra
        short -= extra
    rng = np.random.default_rng(seed)
    chosen: set[str] = set()
    for k, t in zip(keys, take):
        members = strata[k]
        idx = rng.choice(len(members), size=int(t), replace=False)
        chosen.update(members[i] for i in idx)
    return chosen
