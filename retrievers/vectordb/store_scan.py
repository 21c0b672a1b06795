"""A connected store read in batches: its audit before any search, and the exact reference of
``ann_recall@k``, both in bounded memory.

A team's table is not the harness's: it may hold an id twice (the same document written by two
loaders), a row without a vector, or a million rows. Reading it whole into numpy cost 1.6 GB at
60,000 rows; here every pass reads :data:`BATCH` rows at a time (:meth:`Driver.iter_vectors`), so
memory grows with the batch and the queries, not the table.

- :func:`audit_store`, once, right after the store is opened: rows without a vector are refused (one
  line: the count and the first ids); ids held by several rows are refused (the count and the first
  ids), unless ``duplicate_ids: keep_best``, where each id counts once, at its best-ranked row.
- :func:`exact_from_store`: the exact (filtered) top ``k`` of every query over the store's own vectors,
  a running top ``k`` merged batch by batch; an id held by several rows scores its best row
  (``keep_best``'s rule), and rows whose id is not in the corpus never enter it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.filters import Filter, group_by_filter
from harness.model import Query
from retrievers.exact import Distance, similarity

#: rows per batch read from a store (at 1,024 dimensions: 16 MB of float32 per batch)
BATCH = 4096
#: ids named in a refusal
SHOWN = 5


@dataclass(frozen=True)
class Audit:
    rows: int
    distinct: int

    @property
    def surplus(self) -> int:
        """Rows beyond one per id: how many more hits a search asks for under ``keep_best``."""
        return self.rows - self.distinct


def _shown(ids: Sequence[str]) -> str:
    return ", ".join(repr(d) for d in ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")


def audit_store(batches: Iterator[tuple[list[str], np.ndarray]], where: str, duplicate_ids: str) -> Audit:
    """Refuse (``InputError``, ``field`` set) rows without a vector, and ids held by several rows unless
    ``duplicate_ids == "keep_best"``. ``where`` names the store (``"pgvector table 'docs'"``)."""
    counts: Counter[str] = Counter()
    missing: list[str] = []
    n_missing = 0
    for ids, vecs in batches:
        counts.update(ids)
        if not len(ids):
            continue
        bad = ~np.isfinite(vecs).all(axis=1) if vecs.ndim == 2 and vecs.shape[1] else np.ones(len(ids), bool)
        n_missing += int(bad.sum())
        if len(missing) <= SHOWN:
            missing += [ids[i] for i in np.flatnonzero(bad)[: SHOWN + 1].tolist()]
    if n_missing:
        raise InputError(
            f"{where}: {n_missing:,} row(s) have no vector (NULL or not finite), e.g. id {_shown(missing)}; "
            "every row must hold an embedding",
            field="vector_field",
        )
    rows = sum(counts.values())
    dup = [d for d, c in counts.items() if c > 1]
    if dup and duplicate_ids != "keep_best":
        extra = sum(counts[d] - 1 for d in dup)
        raise InputError(
            f"{where}: {len(dup):,} id(s) are held by more than one row ({extra:,} extra rows), e.g. "
            f"{_shown(dup)}; a search would return an id twice and push others out: "
            "set duplicate_ids: keep_best to keep each id's best-ranked row",
            field="duplicate_ids",
        )
    return Audit(rows=rows, distinct=len(counts))


def exact_from_store(
    batches: Iterator[tuple[list[str], np.ndarray]],
    q: np.ndarray,
    k: int,
    *,
    pos: dict[str, int],
    distance: Distance,
    queries: Sequence[Query],
    masks: Callable[[Filter], np.ndarray] | None,
) -> np.ndarray:
    """Corpus positions of the exact top ``k`` of each query row over the store's vectors (``-1``
    padding), read batch by batch."""
    nq = len(q)
    best_s = np.full((nq, k), -np.inf)
    best_i = np.full((nq, k), -1, dtype=np.int64)
    groups = group_by_filter(queries) if masks is not None else [(None, list(range(nq)))]
    for ids, vecs in batches:
        at = np.fromiter((pos.get(d, -1) for d in ids), dtype=np.int64, count=len(ids))
        keep = at >= 0
        if not keep.any():
            continue
        at, vecs = at[keep], vecs[keep]
        sims = similarity(q, vecs, distance)
        for flt, rows in groups:
            s = sims[rows]
            if flt is not None and masks is not None:
                s = np.where(masks(flt)[at][None, :], s, -np.inf)
            cand_s = np.concatenate([best_s[rows], s], axis=1)
            cand_i = np.concatenate([best_i[rows], np.broadcast_to(at, (len(rows), len(at)))], axis=1)
            best_s[rows], best_i[rows] = _merge(cand_s, cand_i, k)
    return best_i


def _merge(scores: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` best distinct positions (a position held twice keeps its best score)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    s = np.take_along_axis(scores, order, axis=1)
    i = np.take_along_axis(idx, order, axis=1)
    out_s = np.full((len(s), k), -np.inf)
    out_i = np.full((len(s), k), -1, dtype=np.int64)
    for r in range(len(s)):
        ok = np.isfinite(s[r]) & (i[r] >= 0)
        rs, ri = s[r][ok], i[r][ok]
        _, first = np.unique(ri, return_index=True)
        first.sort()  # the best row of each position, best first
        first = first[:k]
        out_s[r, : len(first)], out_i[r, : len(first)] = rs[first], ri[first]
    return out_s, out_i


def vectors_from_rows(rows: Sequence[Any], dim: int | None = None) -> np.ndarray:
    """float32 rows from a batch of vectors as an engine returns them (lists, arrays, pgvector text);
    a missing vector becomes a row of NaN (what :func:`audit_store` counts)."""
    parsed = [None if v is None else _vector(v) for v in rows]
    d = dim or next((len(v) for v in parsed if v is not None), 0)
    out = np.full((len(parsed), d), np.nan, dtype=np.float32)
    for j, v in enumerate(parsed):
        if v is not None and len(v) == d:
            out[j] = v
    return out


def _vector(v: Any) -> np.ndarray:
    if isinstance(v, str):  # pgvector's text form: np.fromstring's text mode parses it in C
        return np.fromstring(v.strip("[]"), sep=",", dtype=np.float32)
    return np.asarray(v, dtype=np.float32)
