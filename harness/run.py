"""``Run``: ranked lists per query, stored as padded numpy arrays in canonical order.

Canonical order is trec_eval's: score descending, ties by doc id descending; it is applied once,
here, so every metric and every writer sees the same ranking. Scores are compared as float32, as
trec_eval stores them (two scores equal in float32 are a tie); the stored scores stay float64.
A duplicate doc id in one ranking keeps its first occurrence (input order) and is counted in
``duplicates_dropped``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError

PAD = -1
#: entries (rows x depth) of tied rows sorted at once in canonicalisation
_TIE_BLOCK = 1 << 20


class Run:
    """Per query, a ranked list of ``(doc_id, score)``.

    Storage is columnar: ``indices[i, j]`` is the position in ``doc_ids`` of the j-th ranked
    document of query ``query_ids[i]`` (``-1`` past ``lengths[i]``) and ``scores[i, j]`` its score.
    Retrievers that rank integer document positions (FAISS, bm25s) hand their arrays over as they
    are; dicts and TREC files are converted once, at the edge.
    """

    __slots__ = ("_dpos", "_qpos", "doc_ids", "duplicates_dropped", "indices", "lengths", "name", "query_ids", "scores")

    def __init__(
        self,
        query_ids: Sequence[str],
        doc_ids: Sequence[str] | np.ndarray,
        indices: np.ndarray,
        scores: np.ndarray,
        lengths: np.ndarray | None = None,
        *,
        name: str = "",
        canonical: bool = False,
        duplicates_dropped: int = 0,
        adopt: bool = False,
    ) -> None:
        """Build from arrays. Unless ``canonical`` is true, rows are de-duplicated and re-sorted
        into canonical order; padding is any index < 0. ``adopt`` (with ``canonical``): the arrays
        are the caller's to give away (a reader that built them), so they are kept and their padding
        set in place rather than copied: for a run of 25 million entries a copy of each is 400 MB
        more at the peak of reading it."""
        self.name = name
        self.query_ids = [str(q) for q in query_ids]
        if len(set(self.query_ids)) != len(self.query_ids):
            raise InputError("query ids in a run must be unique", field="query_ids")
        self.doc_ids = np.asarray(doc_ids, dtype=object)
        idx = np.asarray(indices)
        sc = np.asarray(scores, dtype=np.float64)
        nq = len(self.query_ids)
        if idx.ndim != 2 or sc.shape != idx.shape or idx.shape[0] != nq:
            raise InputError(
                f"indices and scores must both have shape (queries={nq}, depth); got {idx.shape} and {sc.shape}",
                field="indices",
            )
        if not np.issubdtype(idx.dtype, np.integer):
            raise InputError(f"indices must be integers, got {idx.dtype}", field="indices")
        idx = idx.astype(np.int64, copy=False)
        if lengths is None:
            valid = idx >= 0
        else:
            lengths = np.asarray(lengths, dtype=np.int64)
            valid = np.arange(idx.shape[1])[None, :] < lengths[:, None]
            valid &= idx >= 0
        if idx.size and int(idx.max(initial=-1)) >= len(self.doc_ids):
            raise InputError("an index points past the end of doc_ids", field="indices")
        bad = valid & ~np.isfinite(sc)
        if bad.any():
            i, j = map(int, np.argwhere(bad)[0])
            raise InputError(
                f"score of doc {self.doc_ids[idx[i, j]]!r} for query {self.query_ids[i]!r} is {sc[i, j]} "
                "(scores must be finite)",
                field="score",
            )
        self.duplicates_dropped = duplicates_dropped
        if canonical and adopt and idx.flags.writeable and sc.flags.writeable:
            invalid = ~valid
            np.putmask(idx, invalid, PAD)
            np.putmask(sc, invalid, -np.inf)
            del invalid
            self.indices, self.scores = idx, sc
        elif canonical:
            self.indices, self.scores = np.where(valid, idx, PAD), np.where(valid, sc, -np.inf)
        else:
            self.indices, self.scores = self._canonicalise(idx, sc, valid)
        self.lengths = (self.indices >= 0).sum(axis=1).astype(np.int64)
        self._qpos: dict[str, int] | None = None
        self._dpos: dict[str, int] | None = None

    # ------------------------------------------------------------------ canonical order
    def _canonicalise(self, idx: np.ndarray, sc: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = np.where(valid, idx, PAD)
        sc = np.where(valid, sc, -np.inf)
        if idx.shape[1] == 0:
            return idx, sc
        # duplicates: keep the first occurrence in input order
        srt = np.sort(idx, axis=1)
        dup_rows = np.flatnonzero(((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any(axis=1))
        del srt  # as large as the run: not kept through the sorts below
        for i in dup_rows:
            _, first = np.unique(idx[i], return_index=True)
            keep = np.zeros(idx.shape[1], dtype=bool)
            keep[first] = True
            keep &= idx[i] >= 0
            self.duplicates_dropped += int((idx[i] >= 0).sum() - keep.sum())
            idx[i] = np.where(keep, idx[i], PAD)
            sc[i] = np.where(keep, sc[i], -np.inf)
        # score descending (as trec_eval sees it: rounded to float32); padding (NaN key) sorts last
        key = rank_key(sc, idx >= 0)
        sort_rows_descending(key, idx, sc)
        all_ties = np.flatnonzero((key[:, 1:] == key[:, :-1]).any(axis=1))
        # tied rows a block at a time: the sort's temporaries (about ten arrays the size of the
        # block) stay small however many rows tie (a 1 GB run file can tie in every row)
        step = max(1, _TIE_BLOCK // max(1, idx.shape[1]))
        # many tied entries: rank the whole vocabulary once rather than each block's ids
        full_rank = id_rank(self.doc_ids) if all_ties.size * idx.shape[1] > len(self.doc_ids) else None
        for start in range(0, all_ties.size, step):
            tie_rows = all_ties[start : start + step]
            # ties: doc id descending (trec_eval compares docnos with strcmp)
            sub_idx, sub_sc, sub_key = idx[tie_rows], sc[tie_rows], key[tie_rows]
            if full_rank is not None:
                docrank = np.where(sub_idx >= 0, full_rank[np.maximum(sub_idx, 0)], -1)
            else:
                # rank only the ids in tied rows, not the whole (possibly huge) vocabulary
                used = np.unique(sub_idx[sub_idx >= 0])
                rank = id_rank(self.doc_ids[used])
                docrank = np.where(sub_idx >= 0, rank[np.searchsorted(used, np.maximum(sub_idx, 0))], -1)
            order = rule_order(sub_key, docrank)
            idx[tie_rows] = np.take_along_axis(sub_idx, order, axis=1)
            sc[tie_rows] = np.take_along_axis(sub_sc, order, axis=1)
        return idx, sc

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_lists(
        cls,
        rankings: Mapping[str, Iterable[tuple[str, float]]],
        *,
        name: str = "",
        doc_ids: Sequence[str] | None = None,
        source: str | None = None,
    ) -> Run:
        """From ``{qid: [(doc_id, score), ...]}`` (a retriever's return shape).

        With ``doc_ids`` (the corpus ids) the run shares the dataset's vocabulary and an unknown
        doc id is an error; without it the vocabulary is built from what the run names.
        """
        vocab: dict[str, int] = {d: i for i, d in enumerate(doc_ids)} if doc_ids is not None else {}
        fixed = doc_ids is not None
        qids = list(rankings)
        rows: list[tuple[list[int], list[float]]] = []
        for qid in qids:
            ranking = rankings[qid]
            r_idx: list[int] = []
            r_sc: list[float] = []
            for pos, item in enumerate(ranking):
                try:
                    doc, score = item
                except (TypeError, ValueError):
                    raise InputError(
                        f"query {qid!r}, item {pos}: expected (doc_id, score), got {item!r}", path=source
                    ) from None
                doc = str(doc)
                i = vocab.get(doc)
                if i is None:
                    if fixed:
                        raise InputError(f"query {qid!r}: unknown doc id {doc!r} (not in the corpus)", path=source)
                    i = vocab[doc] = len(vocab)
                try:
                    s = float(score)
                except (TypeError, ValueError):
                    raise InputError(
                        f"query {qid!r}, doc {doc!r}: score {score!r} is not a number", path=source
                    ) from None
                if not math.isfinite(s):
                    raise InputError(f"query {qid!r}, doc {doc!r}: score is {s} (scores must be finite)", path=source)
                r_idx.append(i)
                r_sc.append(s)
            rows.append((r_idx, r_sc))
        return cls.from_rows(qids, list(doc_ids) if fixed else list(vocab), rows, name=name)

    @classmethod
    def from_rows(
        cls,
        query_ids: Sequence[str],
        doc_ids: Sequence[str],
        rows: Sequence[tuple[Sequence[int], Sequence[float]]],
        *,
        name: str = "",
    ) -> Run:
        """From per-query lists of (doc positions, scores), padded here into the array form; the
        parsers build these lists line by line and hand them over once."""
        depth = max((len(r[0]) for r in rows), default=0)
        idx = np.full((len(rows), depth), PAD, dtype=np.int64)
        sc = np.full((len(rows), depth), -np.inf)
        for i, (r_idx, r_sc) in enumerate(rows):
            idx[i, : len(r_idx)] = r_idx
            sc[i, : len(r_sc)] = r_sc
        return cls(query_ids, doc_ids, idx, sc, name=name)

    @classmethod
    def from_dict(
        cls, run: Mapping[str, Mapping[str, float]], *, name: str = "", doc_ids: Sequence[str] | None = None
    ) -> Run:
        """From the pytrec_eval / ranx shape ``{qid: {doc_id: score}}``."""
        return cls.from_lists({q: d.items() for q, d in run.items()}, name=name, doc_ids=doc_ids)

    @classmethod
    def coerce(cls, obj: Any, *, name: str = "", doc_ids: Sequence[str] | None = None) -> Run:
        """Accept a ``Run``, ``{qid: {doc: score}}`` or ``{qid: [(doc, score), ...]}``."""
        if isinstance(obj, Run):
            if name and not obj.name:
                obj.name = name
            return obj
        if not isinstance(obj, Mapping):
            raise InputError(
                f"expected a Run or a mapping {{query_id: [(doc_id, score), ...]}}, got {type(obj).__name__}"
            )
        rankings: dict[str, Iterable[tuple[str, float]]] = {}
        for qid, ranking in obj.items():
            if isinstance(ranking, Mapping):
                rankings[str(qid)] = ranking.items()
            elif isinstance(ranking, (list, tuple)) or (
                hasattr(ranking, "__iter__") and not isinstance(ranking, (str, bytes))
            ):
                rankings[str(qid)] = ranking
            else:
                raise InputError(
                    f"query {qid!r}: expected a list of (doc_id, score) pairs, got {type(ranking).__name__}"
                )
        return cls.from_lists(rankings, name=name, doc_ids=doc_ids)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.query_ids)

    def __contains__(self, qid: object) -> bool:
        return qid in self._query_pos

    def __iter__(self) -> Iterator[str]:
        return iter(self.query_ids)

    @property
    def depth(self) -> int:
        return int(self.indices.shape[1])

    @property
    def _query_pos(self) -> dict[str, int]:
        if self._qpos is None:
            self._qpos = {q: i for i, q in enumerate(self.query_ids)}
        return self._qpos

    @property
    def doc_pos(self) -> dict[str, int]:
        """Doc id -> position in ``doc_ids`` (built once, on demand)."""
        if self._dpos is None:
            self._dpos = {d: i for i, d in enumerate(self.doc_ids.tolist())}
        return self._dpos

    def ranking(self, qid: str) -> list[tuple[str, float]]:
        """The ranked ``(doc_id, score)`` list of one query (empty when absent)."""
        i = self._query_pos.get(qid)
        if i is None:
            return []
        n = int(self.lengths[i])
        return [(self.doc_ids[j], float(s)) for j, s in zip(self.indices[i, :n], self.scores[i, :n])]

    def __getitem__(self, qid: str) -> list[tuple[str, float]]:
        if qid not in self._query_pos:
            raise KeyError(qid)
        return self.ranking(qid)

    def items(self) -> Iterator[tuple[str, list[tuple[str, float]]]]:
        for q in self.query_ids:
            yield q, self.ranking(q)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """The pytrec_eval / ranx shape."""
        return {q: dict(r) for q, r in self.items()}

    # ------------------------------------------------------------------ transforms
    def cut(self, k: int) -> Run:
        """The top ``k`` of every ranking."""
        return Run(
            self.query_ids,
            self.doc_ids,
            self.indices[:, :k],
            self.scores[:, :k],
            name=self.name,
            canonical=True,
            duplicates_dropped=self.duplicates_dropped,
        )

    def subset(self, query_ids: Sequence[str]) -> Run:
        """Only the named queries (absent ones get an empty ranking), in the given order."""
        rows = np.array([self._query_pos.get(q, -1) for q in query_ids], dtype=np.int64)
        idx = np.full((len(rows), self.depth), PAD, dtype=np.int64)
        sc = np.full((len(rows), self.depth), -np.inf)
        present = rows >= 0
        idx[present] = self.indices[rows[present]]
        sc[present] = self.scores[rows[present]]
        return Run(list(query_ids), self.doc_ids, idx, sc, name=self.name, canonical=True)

    def with_name(self, name: str) -> Run:
        return Run(
            self.query_ids,
            self.doc_ids,
            self.indices,
            self.scores,
            name=name,
            canonical=True,
            duplicates_dropped=self.duplicates_dropped,
        )

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, queries={len(self)}, depth={self.depth})"


def rank_key(scores: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """The value a ranking is sorted by: the score rounded to float32, because trec_eval stores scores
    as C ``float`` (scores equal in float32 tie and go by doc id there too; a finite score beyond
    float32's range becomes an infinity of its sign, and ties there); NaN for padding (``~valid``),
    which every numpy sort puts last. The stored scores stay float64."""
    with np.errstate(over="ignore"):
        key = np.asarray(scores, dtype=np.float64).astype(np.float32)
    if valid is not None:
        key[~valid] = np.nan
    return key


def sort_rows_descending(key: np.ndarray, *arrays: np.ndarray) -> None:
    """Reorder each row of ``key`` (and of ``arrays`` alongside, in place) so ``key`` descends with
    NaN padding last, stably. Rows already in order, which is what retrievers return, are not
    touched, so the common case costs one comparison pass instead of a sort."""
    if key.shape[1] < 2:
        return
    nxt = key[:, 1:]
    rows = np.flatnonzero(~((nxt <= key[:, :-1]) | np.isnan(nxt)).all(axis=1))
    if rows.size:
        order = np.argsort(-key[rows], axis=1, kind="stable")
        for a in (key, *arrays):
            a[rows] = np.take_along_axis(a[rows], order, axis=1)


def rule_order(key: np.ndarray, docrank: np.ndarray) -> np.ndarray:
    """Along the last axis, the order that sorts entries by the ranking rule: ``key``
    (:func:`rank_key`) descending, NaN padding last, ties by ``docrank`` (:func:`id_rank`) descending."""
    return np.lexsort((-docrank, -key), axis=-1)


def id_rank(doc_ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """``rank[i]`` = position of ``doc_ids[i]`` in code-point order (== UTF-8 byte order, trec_eval's
    strcmp): what the ranking rule breaks a tie by (the larger id first). Every cut by the rule
    (:mod:`retrievers.ties`) ranks ids here too."""
    order = np.argsort(np.asarray(doc_ids, dtype=object), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank
