"""Near-duplicate documents: groups of documents within exact Jaccard 0.9 (word 5-shingles) of one
representative, found at corpus scale in bounded time and memory.

The grouping rule (what a group *is*, independent of how it is found):

    Take the documents in corpus order. A document joins the group of the earliest representative
    whose exact Jaccard with it is at least the threshold; if there is none, it becomes the
    representative of a new group. Groups of one are not reported.

Exact copies (:mod:`harness.inspect.duplicates`) enter once, as their first copy, and are reported
with it; a group that is only one exact group is left out (it is listed as exact duplicates).

So every member is within the threshold of its group's representative (and, Jaccard distance being
a metric, within ``2 * (1 - threshold)`` of every other member). The rule is not the transitive
closure of "is a near duplicate of": a templated corpus (one page, a word changed per copy) chains
every document to every other one through neighbours that differ by a word, and the closure then
reports one group holding documents that share little. The closure also needs every verified pair;
this rule verifies a document against representatives only, which on a templated corpus is one
comparison a document (they all join the first), not one per pair.

How they are found. Comparing every document with every representative is quadratic in the worst
case, so candidates come from MinHash signatures (datasketch, 128 permutations, fixed seed) cut into
bands: two documents are *candidates* when one band of their signatures is equal (they fall in one
*bucket*). A pair at Jaccard 0.9 shares no band with probability (1 - 0.9**5)**25 = 2e-10 at 25 bands
of 5 rows (ideal min-wise hashing; :func:`banding` shortens the bands for a lower threshold). Then:

1. *Candidate groups*: union-find over the buckets (the connected components of "shares a bucket",
   one bucket member linked to the bucket's first; scipy's ``connected_components``), computed from
   one bucket id per document and band. No pair is ever listed, so a bucket of 200,000 documents
   costs 200,000 links, not 2e10 pairs. A document alone in its candidate group is done.
2. *Verification*, candidate group by candidate group, in corpus order: a document is compared with
   the representatives that share one of its buckets, earliest first. A representative whose
   signature agrees with the document's on fewer than :func:`agreement_floor` of the 128 positions
   is skipped (a pair at the threshold agrees that little with probability under 1e-9); the others
   are verified on the exact shingle sets, and the first at or above the threshold takes the
   document. The sketch can therefore add work but never a false member.

Bounded work: a bucket keeps at most :data:`REPRESENTATIVES` (64) representatives, and a document
is compared with at most that many (the earliest of those sharing one of its buckets), so the search
makes at most 64 exact verifications a document whatever the corpus: linear, not quadratic. Only a
corpus with more than 64 *different groups* sharing one bucket reaches the bound (many texts that
are each close to one template yet not within the threshold of one another); a document there is
compared with the first 64 representatives only, so a group among them may be split in two. The
search counts those documents (:attr:`NearSearch.capped`) and logs a warning with the count.

Memory: the signatures (one uint32 row of 128 per document, 512 bytes), one bucket id per document
and band, the representatives of each bucket, and the shingle sets of at most
:data:`CACHED_SETS` representatives at once.
"""

from __future__ import annotations

import functools
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from datasketch import MinHash
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from harness import progress
from harness.inspect.text import MIX, ShingleHasher, jaccard, normalize, shingles, words
from harness.model import Corpus

log = logging.getLogger(__name__)

#: exact Jaccard of word 5-shingles at or above which a document joins a representative's group
THRESHOLD = 0.9
NUM_PERM = 128
SEED = 1
BANDS, ROWS = 25, 5
#: the largest chance of missing a pair at the threshold that :func:`banding` and
#: :func:`agreement_floor` accept (ideal hashing)
MISS = 1e-9
#: representatives a bucket keeps, and a document is compared with, at most (the bound on the work)
REPRESENTATIVES = 64
#: representatives' shingle sets kept at once (least recently used dropped first)
CACHED_SETS = 4096
#: distinct shingles numbered at once (the numbering starts again past it)
NUMBERED = 2_000_000


@dataclass
class NearSearch:
    """What :func:`near_duplicate_search` found, and what it cost."""

    #: groups of corpus positions (sorted, each with the exact copies of its members), sorted
    groups: list[list[int]] = field(default_factory=list)
    #: documents signed (exact copies after the first left out, documents without a word too)
    signed: int = 0
    #: candidate groups of two or more documents, and the documents in them
    candidate_groups: int = 0
    candidates: int = 0
    #: exact Jaccard computations made
    verified: int = 0
    #: documents compared with only some of their candidate representatives (a bucket was full)
    capped: int = 0


def signatures(corpus: Corpus, positions: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """MinHash signatures (rows of uint32) of the documents at ``positions`` that have a word, and
    those positions."""
    hasher = ShingleHasher()
    kept: list[int] = []
    shown = progress.current()

    def shingle_hashes() -> Iterator[list[int]]:
        for n, i in enumerate(positions, 1):
            tokens = words(normalize(corpus.content(i)))
            if tokens:
                kept.append(i)
                yield hasher(tokens).tolist()
            if n % 1000 == 0:
                shown.advance(1000)

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


@functools.lru_cache(maxsize=16)
def agreement_floor(threshold: float) -> int:
    """The fewest equal signature positions (of :data:`NUM_PERM`) worth an exact verification: the
    largest ``c`` with P(Binomial(NUM_PERM, threshold) < c) <= :data:`MISS`, so a pair at the
    threshold (whose positions agree with probability ``threshold`` each) falls below it that rarely;
    91 of 128 at 0.9."""
    below = 0.0
    for c in range(NUM_PERM + 1):
        p = math.comb(NUM_PERM, c) * threshold**c * (1.0 - threshold) ** (NUM_PERM - c)
        if below + p > MISS:
            return c
        below += p
    return NUM_PERM


def bucket_ids(sig: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """One id per row and band (``int64``, shape ``(rows, bands)``): rows with an equal band share
    the id; a row alone in its bucket gets -1 (nobody can be proposed through it). A band is keyed
    by a 64-bit mix of its values: two different bands share a key with probability 2**-64 a pair,
    which can only add a candidate (verified exactly), never lose one."""
    n_bands, n_rows = banding(threshold)
    out = np.full((len(sig), n_bands), -1, dtype=np.int64)
    offset = 0
    for b in range(n_bands):
        key = np.zeros(len(sig), dtype=np.uint64)
        for j in range(n_rows):  # one 64-bit key per band (sorting it is 5x faster than the rows)
            key = (key ^ sig[:, b * n_rows + j].astype(np.uint64)) * MIX[j]
        _, inverse, counts = np.unique(key ^ (key >> np.uint64(31)), return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        shared = counts[inverse] > 1
        out[shared, b] = offset + inverse[shared]
        offset += len(counts)
    return out


def candidate_groups(buckets: np.ndarray) -> list[np.ndarray]:
    """Union-find over the buckets: the rows linked by shared buckets, groups of two or more, each
    sorted, in order of their first row. Each row is linked to its bucket's first row (one link per
    row and band), never to every other member."""
    n = len(buckets)
    rows, cols = [], []
    for b in range(buckets.shape[1]):
        ids = buckets[:, b]
        members = np.flatnonzero(ids >= 0)
        if not len(members):
            continue
        _, first, which = np.unique(ids[members], return_index=True, return_inverse=True)
        rows.append(members.astype(np.int32))
        cols.append(members[first][which.ravel()].astype(np.int32))  # linked to its bucket's first
    if not rows:
        return []
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))
    _, labels = connected_components(graph, directed=True, connection="weak")
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = [g for g in np.split(order, cuts) if len(g) > 1]
    return sorted(groups, key=lambda g: int(g[0]))


class _ShingleSets:
    """The exact shingle sets of rows, computed on demand, each shingle numbered (an ``int`` hashes
    and compares in one step, a tuple of five words does not: verification is ~20x faster), the
    last :data:`CACHED_SETS` kept. The numbering is exact (a dict of the shingles themselves); it is
    dropped, with the kept sets, when it reaches :data:`NUMBERED` shingles."""

    def __init__(self, text_of: Callable[[int], str]) -> None:
        self.text_of = text_of
        self.kept: OrderedDict[int, set[int]] = OrderedDict()
        self.number: dict[tuple[str, ...], int] = {}

    def settle(self) -> None:
        """Start the numbering again if it is full: called between two documents, never while
        one document's sets are being compared (their numbers must come from one numbering)."""
        if len(self.number) >= NUMBERED:
            self.number.clear()
            self.kept.clear()

    def __call__(self, row: int) -> set[int]:
        """A representative's set (kept)."""
        s = self.kept.get(row)
        if s is not None:
            self.kept.move_to_end(row)
            return s
        return self.keep(row, self.fresh(row))

    def fresh(self, row: int) -> set[int]:
        """A document's set, not kept (most documents join a group and are never compared again)."""
        number = self.number
        return {number.setdefault(sh, len(number)) for sh in shingles(words(normalize(self.text_of(row))))}

    def keep(self, row: int, s: set[int]) -> set[int]:
        """Keep ``row``'s set (a new representative's), dropping the least recently used past the limit."""
        self.kept[row] = s
        if len(self.kept) > CACHED_SETS:
            self.kept.popitem(last=False)
        return s


def _verify(
    group: np.ndarray, sig: np.ndarray, buckets: np.ndarray, sets: _ShingleSets, threshold: float, found: NearSearch
) -> dict[int, list[int]]:
    """The grouping rule over one candidate group (rows in corpus order): representative row ->
    its members (itself first)."""
    floor = agreement_floor(threshold)
    held: dict[int, list[int]] = {}  # bucket id -> its representatives, earliest first
    full: set[int] = set()  # buckets that turned a representative away
    members: dict[int, list[int]] = {}
    for row in group.tolist():
        ids = [i for i in buckets[row].tolist() if i >= 0]
        reps = sorted({r for i in ids for r in held.get(i, ())})
        if len(reps) > REPRESENTATIVES or not full.isdisjoint(ids):
            found.capped += 1
            del reps[REPRESENTATIVES:]
        joined = mine = None
        if reps:
            sets.settle()
            agree = (sig[reps] == sig[row]).sum(axis=1)
            for rep, a in zip(reps, agree.tolist()):
                if a < floor:
                    continue
                mine = sets.fresh(row) if mine is None else mine
                found.verified += 1
                if jaccard(mine, sets(rep)) >= threshold:
                    joined = rep
                    break
        if joined is not None:
            members[joined].append(row)
            continue
        members[row] = [row]
        if mine is not None:
            sets.keep(row, mine)
        for i in ids:
            there = held.setdefault(i, [])
            if len(there) < REPRESENTATIVES:
                there.append(row)
            else:
                full.add(i)
    return members


def near_duplicate_search(
    corpus: Corpus, exact: Sequence[Sequence[int]] = (), threshold: float = THRESHOLD
) -> NearSearch:
    """:func:`near_duplicate_documents`, with what the search cost (verifications, capped documents)."""
    copies = {g[0]: list(g) for g in exact}
    later = {i for g in exact for i in g[1:]}
    shown = progress.current()
    positions = [i for i in range(len(corpus)) if i not in later]
    shown.phase(f"near duplicates: signing {len(positions)} documents", len(positions))
    sig, rows = signatures(corpus, positions)
    found = NearSearch(signed=len(rows))
    buckets = bucket_ids(sig, threshold)
    groups = candidate_groups(buckets)
    found.candidate_groups, found.candidates = len(groups), sum(len(g) for g in groups)
    log.debug(
        "near duplicates: verifying %d candidates in %d candidate groups (of %d documents signed)",
        found.candidates,
        found.candidate_groups,
        found.signed,
    )
    shown.phase(f"near duplicates: verifying {found.candidates} candidates", found.candidates)
    sets = _ShingleSets(lambda row: corpus.content(rows[row]))
    out = []
    for group in groups:
        for rs in _verify(group, sig, buckets, sets, threshold, found).values():
            if len(rs) > 1:
                out.append(sorted(p for r in rs for p in copies.get(rows[r], [rows[r]])))
        shown.advance(len(group))
    found.groups = sorted(out)
    log.debug("near duplicates: %d exact verifications, %d groups", found.verified, len(found.groups))
    if found.capped:
        log.warning(
            "near duplicates: %d documents share a bucket with more than %d groups' representatives "
            "(texts close to one template, not to one another); each was compared with the first %d "
            "only, so a near-duplicate group among them may be split (bounded work: docs/golden-sets.md)",
            found.capped,
            REPRESENTATIVES,
            REPRESENTATIVES,
        )
    return found


def near_duplicate_documents(
    corpus: Corpus, exact: Sequence[Sequence[int]] = (), threshold: float = THRESHOLD
) -> list[list[int]]:
    """Groups of corpus positions whose documents are near duplicates by the module's rule (each
    within exact shingle Jaccard ``threshold`` of its group's representative), each group sorted and
    with the exact copies of its members (``exact``: groups of positions, as
    :func:`~harness.inspect.duplicates.duplicate_documents` gives them; all but the first of each
    are left out of the search); groups that are only one exact group are left out. A stable entry
    point: ``harness synth`` draws one document per group."""
    return near_duplicate_search(corpus, exact, threshold).groups
