"""Near-duplicate documents: exact Jaccard of word 5-shingles >= 0.9, found at corpus scale.

Comparing every pair is quadratic (4.5e10 pairs at 300k documents). MinHash signatures and
locality-sensitive hashing (datasketch: a well-kept library, not ours) propose candidate pairs, and
every candidate is then verified on the exact shingle sets, so the sketch's noise can add work but
never a false finding. The banding is set for recall, not precision: 25 bands of 5 rows propose a
pair sharing one band, which a pair at Jaccard 0.9 misses with probability (1 - 0.9**5)**25 =
2e-10 with ideal min-wise hashing (the candidate threshold, where a pair is proposed half the
time, is about 0.53). The seed is fixed, so a run is reproducible.

Memory is what bounds it: an LSH index holds a Python set per bucket per band (about 9 KB per
document at 25 bands), so the bands are indexed a few at a time, over the signatures kept as one
uint32 array (512 bytes a document), and each index is dropped before the next.

Members of an exact-duplicate group enter once (their first member); a near group is a connected
component of verified pairs, reported with every exact copy of its members, and only when it joins
texts that are not all exact copies of one another (those are ``duplicate_documents``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from harness.inspect.text import ShingleHasher, jaccard, normalize, shingles, words
from harness.model import Corpus

#: exact Jaccard of word 5-shingles at or above which two documents are near duplicates
THRESHOLD = 0.9
NUM_PERM = 128
SEED = 1
BANDS, ROWS = 25, 5
#: the largest chance of missing a pair at the threshold that :func:`banding` accepts (ideal hashing)
MISS = 1e-9
#: bands indexed at once (the memory of one LSH index is proportional to it)
BANDS_PER_PASS = 5


class _Components:
    """Union-find over ``n`` items."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def signatures(corpus: Corpus, positions: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """MinHash signatures (rows of uint32) of the documents at ``positions`` that have a word, and
    those positions."""
    hasher = ShingleHasher()
    kept: list[int] = []

    def shingle_hashes() -> Iterator[list[int]]:
        for i in positions:
            tokens = words(normalize(corpus.content(i)))
            if tokens:
                kept.append(i)
                yield hasher(tokens).tolist()

    sig = np.empty((len(positions), NUM_PERM), dtype=np.uint32)
    n = 0
    for n, mh in enumerate(MinHash.generator(shingle_hashes(), num_perm=NUM_PERM, seed=SEED, hashfunc=int), 1):
        sig[n - 1] = mh.hashvalues
    return sig[:n], kept


def banding(threshold: float) -> tuple[int, int]:
    """``(bands, rows)`` for ``threshold``: the most rows per band (fewest candidates) with which a
    pair at the threshold is missed with probability (1 - J**rows)**bands <= :data:`MISS`; 25 x 5 at
    0.9. A lower ``--near-threshold`` needs shorter bands, else its pairs would mostly go unproposed
    (at 0.5, 25 x 5 misses 45% of them); below about 0.15 even single rows cannot promise it."""
    for rows in range(ROWS, 0, -1):
        bands = NUM_PERM // rows
        if (1.0 - threshold**rows) ** bands <= MISS:
            return bands, rows
    return NUM_PERM, 1


def candidate_pairs(sig: np.ndarray, threshold: float = THRESHOLD) -> set[tuple[int, int]]:
    """Row pairs ``(a, b)``, ``a < b``, that share a band of their signatures (:func:`banding`)."""
    pairs: set[tuple[int, int]] = set()
    n_bands, n_rows = banding(threshold)
    for first in range(0, n_bands, BANDS_PER_PASS):
        bands = min(BANDS_PER_PASS, n_bands - first)
        cols = sig[:, first * n_rows : (first + bands) * n_rows]
        lsh = MinHashLSH(num_perm=bands * n_rows, params=(bands, n_rows))
        for row in range(len(cols)):
            sketch = LeanMinHash(seed=SEED, hashvalues=cols[row], scheme="affine32")
            for other in lsh.query(sketch):
                pairs.add((other, row))
            lsh.insert(row, sketch, check_duplication=False)
        del lsh
    return pairs


def near_duplicate_documents(
    corpus: Corpus, exact: Sequence[Sequence[int]] = (), threshold: float = THRESHOLD
) -> list[list[int]]:
    """Groups of positions whose documents are near duplicates (exact shingle Jaccard >=
    ``threshold``, chained: connected components), each with the exact copies of its members;
    groups that are only one exact group are left out."""
    copies = {g[0]: list(g) for g in exact}
    later = {i for g in exact for i in g[1:]}
    sig, rows = signatures(corpus, [i for i in range(len(corpus)) if i not in later])
    comps = _Components(len(rows))
    sets: dict[int, set[tuple[str, ...]]] = {}

    def shingle_set(row: int) -> set[tuple[str, ...]]:
        s = sets.get(row)
        if s is None:
            s = sets[row] = shingles(words(normalize(corpus.content(rows[row]))))
        return s

    for a, b in sorted(candidate_pairs(sig, threshold)):
        if comps.find(a) != comps.find(b) and jaccard(shingle_set(a), shingle_set(b)) >= threshold:
            comps.union(a, b)
    members: dict[int, list[int]] = {}
    for row in range(len(rows)):
        members.setdefault(comps.find(row), []).append(row)
    groups = []
    for rs in members.values():
        if len(rs) > 1:
            groups.append(sorted(p for r in rs for p in copies.get(rows[r], [rows[r]])))
    return sorted(groups)
