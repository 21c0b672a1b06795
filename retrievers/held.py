"""The documents an index of the learned rows (``splade``, ``colbert``) holds, by position, while it
changes through the mutable protocol (:class:`harness.protocol.Mutable`, ``harness stream``).

Positions are the rows of the index's arrays. An added document takes the next position; a deleted
one keeps its position, marked dead (its scores are discarded at search); an update is a delete and
an add, so for a while one id sits at two positions, one of them dead. Positions are never reused:
only the index's own merge renumbers them (:meth:`HeldDocs.keep`), all at once, together with the
arrays it rewrites.

What search needs is kept right across writes: the tie rank (document ids in lexicographic order, the
harness's tie rule) over every position, and the masks of metadata filters, which cover added
documents (a mask computed before an add is extended by the new documents' own matches, not served
short).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from harness.filters import Filter, group_by_filter, has_filters
from harness.model import Corpus, Query
from harness.run import Run, id_rank
from retrievers.ties import top_k

#: masks of distinct filters kept before they are all dropped (the latency loop repeats a few)
MAX_MASKS = 4096

#: one query's scores over every position, for the query rows asked (``(row, float64 scores)``)
ScoreRows = Callable[[list[int]], Iterable[tuple[int, np.ndarray]]]


class HeldDocs:
    """Ids, deletions, tie rank and filter masks over the positions of a changing index."""

    def __init__(self, corpus: Corpus) -> None:
        self.ids = np.asarray(corpus.ids, dtype=object)
        self.dead = np.zeros(len(self.ids), dtype=bool)
        self._meta: dict[int, dict[str, Any]] = dict(corpus.metadata_items())
        self._masks: dict[str, tuple[Filter, np.ndarray]] = {}
        self._rank: np.ndarray | None = None
        self._where: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def live(self) -> int:
        return len(self.ids) - int(self.dead.sum())

    @property
    def rank(self) -> np.ndarray:
        """Each position's place in lexicographic id order (recomputed after a write, once)."""
        if self._rank is None:
            self._rank = id_rank(self.ids)
        return self._rank

    @property
    def where(self) -> dict[str, int]:
        """id -> position of the live documents."""
        if self._where is None:
            live = np.flatnonzero(~self.dead)
            self._where = dict(zip(self.ids[live].tolist(), live.tolist()))
        return self._where

    # ------------------------------------------------------------------ writes
    def append(self, corpus: Corpus) -> np.ndarray:
        """Hold ``corpus``'s documents at the next positions (returned)."""
        start, n = len(self.ids), len(corpus)
        where = self.where
        self.ids = np.concatenate([self.ids, np.asarray(corpus.ids, dtype=object)])
        self.dead = np.concatenate([self.dead, np.zeros(n, dtype=bool)])
        added = dict(corpus.metadata_items())
        self._meta.update((start + i, m) for i, m in added.items())
        for key, (flt, mask) in self._masks.items():
            extra = np.zeros(n, dtype=bool)
            extra[[i for i, m in added.items() if flt.matches(m)]] = True
            self._masks[key] = (flt, np.concatenate([mask, extra]))
        positions = np.arange(start, start + n, dtype=np.int64)
        where.update(zip(corpus.ids.tolist(), positions.tolist()))
        self._rank = None
        return positions

    def remove(self, ids: Sequence[str]) -> np.ndarray:
        """Mark the live documents of ``ids`` dead; their positions (ids not held are ignored, as dense does)."""
        where = self.where
        gone = np.array([where.pop(i) for i in ids if i in where], dtype=np.int64)
        self.dead[gone] = True
        return gone

    def keep(self, positions: np.ndarray) -> None:
        """Renumber: the documents at ``positions`` (ascending) become positions 0..n-1, the rest are
        dropped. Called by the index's merge, which rewrites its arrays the same way."""
        positions = np.asarray(positions, dtype=np.int64)
        new = {int(p): j for j, p in enumerate(positions.tolist())}
        self.ids, self.dead = self.ids[positions], self.dead[positions]
        self._meta = {new[i]: m for i, m in self._meta.items() if i in new}
        self._masks = {k: (f, m[positions]) for k, (f, m) in self._masks.items()}
        self._rank = self._where = None

    # ------------------------------------------------------------------ search
    def allowed(self, flt: Filter | None) -> np.ndarray | None:
        """The positions a query may be answered from (live, and admitted by ``flt``); None: every one."""
        if flt is None:
            return ~self.dead if self.dead.any() else None
        got = self._masks.get(flt.key)
        if got is None:
            if len(self._masks) > MAX_MASKS:
                self._masks.clear()
            mask = np.zeros(len(self.ids), dtype=bool)
            mask[[i for i, m in self._meta.items() if flt.matches(m)]] = True
            got = self._masks[flt.key] = (flt, mask)
        return got[1] & ~self.dead

    def top_k(self, queries: Sequence[Query], k: int, score_rows: ScoreRows, name: str) -> Run:
        """Each query's exact top ``k`` of the documents it may be answered from, with the harness's
        ranking rule (:func:`retrievers.ties.top_k`); ``score_rows`` scores every position."""
        kk = min(k, self.live)
        idx = np.full((len(queries), kk), -1, dtype=np.int64)
        scores = np.full((len(queries), kk), -np.inf)
        groups = group_by_filter(queries) if has_filters(queries) else [(None, list(range(len(queries))))]
        rank = self.rank
        for flt, rows in groups:
            allowed = self.allowed(flt)
            for r, s in score_rows(rows):
                if allowed is not None:
                    s = np.where(allowed, s, -np.inf)
                pos, sc = top_k(s, kk, rank)
                idx[r, : len(pos)], scores[r, : len(pos)] = pos, sc
        return Run([q.id for q in queries], self.ids, idx, scores, name=name)
