"""The cut at depth k by the ranking rule, for both shapes a built-in retriever holds its scores in,
and the tail below a reranked head: the one home of the rule outside :class:`harness.run.Run`.

The rule (docs/metrics.md, "Rules"): score descending, scores compared as float32 as trec_eval
stores them (:func:`harness.run.rank_key`), ties by doc id descending (:func:`harness.run.id_rank`),
in the order :func:`harness.run.rule_order` gives. Three entry points:

- :func:`cut_by_rule`: over a library's own top k (FAISS, a vector database, rank-bm25);
- :func:`top_k`: over one query's full score vector (``bm25`` over bm25s's scores, ``splade``,
  ``colbert``: every document scored);
- :func:`rerank`: a run whose head a stage re-scored, its tail kept in order below the head.

A library's top-k picks *some* k documents when more than k tie at the k-th score: bm25s kept the
last ones of a 300-copy corpus, FAISS the first ones. The rule says which ones, so which copy of a
duplicated document is retrieved, and so every metric, must not depend on the library. :func:`cut_by_rule` asks the
library for one document more than k; only where that one still ties with the k-th does it ask
again for those rows (doubling the depth until the tie ends or the corpus does) and cut the fetched
ranking by the rule. Without a tie at the cut the cost is one extra document per query.

For exact search (bm25 both backends, a flat index) the result is the rule's top k exactly; for an
approximate index it is the rule applied to what the index finds at the larger depth.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.run import PAD, Run, rank_key, rule_order

#: ``search(rows, depth) -> (scores, positions)``, each ``(len(rows), depth)``: the library's own
#: top ``depth`` for the query rows ``rows`` (positions into the corpus; ``-1`` for none)
SearchRows = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def cut_by_rule(
    search: SearchRows, n_rows: int, k: int, doc_ids: np.ndarray, *, floor: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, positions)`` of each query row's top ``k`` by the ranking rule, each
    ``(n_rows, min(k, len(doc_ids)))``, best first, ``-1`` / ``-inf`` padding where a row has fewer.

    ``floor``: scores at or below it are never returned (bm25 drops documents that match no query
    term), so a tie there is not worth fetching past."""
    n_docs = len(doc_ids)
    kk = min(k, n_docs)
    if kk <= 0 or n_rows == 0:
        return np.full((n_rows, max(kk, 0)), -np.inf), np.full((n_rows, max(kk, 0)), -1, dtype=np.int64)
    fetch = min(kk + 1, n_docs)
    scores, idx = _sorted(*search(np.arange(n_rows), fetch))
    out_s, out_i = scores[:, :kk].copy(), idx[:, :kk].copy()
    rows = np.flatnonzero(_tied_past(scores, idx, kk, floor)) if fetch > kk else np.empty(0, dtype=np.int64)
    scores, idx = scores[rows], idx[rows]  # from here on, the fetched rankings of the rows still tied
    while rows.size and fetch < n_docs:
        fetch = min(2 * fetch, n_docs)
        scores, idx = _sorted(*search(rows, fetch))
        more = _tied_past(scores, idx, kk, floor) if fetch < n_docs else np.zeros(len(rows), dtype=bool)
        done = ~more
        if done.any():
            out_s[rows[done]], out_i[rows[done]] = _rule_cut(scores[done], idx[done], kk, doc_ids)
        rows, scores, idx = rows[more], scores[more], idx[more]
    if rows.size:  # the whole corpus fetched and still tied: cut what was fetched
        out_s[rows], out_i[rows] = _rule_cut(scores, idx, kk, doc_ids)
    return out_s, out_i


def _sorted(scores: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by score descending (as float32), padding last; ``-inf`` scores for padding."""
    idx = np.asarray(idx, dtype=np.int64)
    scores = np.where(idx >= 0, np.asarray(scores, dtype=np.float64), -np.inf)
    order = np.argsort(-rank_key(scores, idx >= 0), axis=1, kind="stable")  # NaN (padding) sorts last
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(idx, order, axis=1)


def _tied_past(scores: np.ndarray, idx: np.ndarray, kk: int, floor: float | None) -> np.ndarray:
    """Per row (sorted): does the last fetched document still tie with the ``kk``-th?"""
    key = rank_key(scores, idx >= 0)
    tied = (key[:, -1] == key[:, kk - 1]) & (idx[:, -1] >= 0)
    if floor is not None:
        tied &= scores[:, kk - 1] > floor
    return tied


def _rule_cut(scores: np.ndarray, idx: np.ndarray, kk: int, doc_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first ``kk`` of each row in the ranking rule's order (the order :class:`Run` keeps)."""
    run = Run([str(i) for i in range(len(idx))], doc_ids, idx, scores)
    width = run.indices.shape[1]
    s = np.full((len(idx), kk), -np.inf)
    i = np.full((len(idx), kk), -1, dtype=np.int64)
    s[:, : min(kk, width)], i[:, : min(kk, width)] = run.scores[:, :kk], run.indices[:, :kk]
    return s, i


def top_k(scores: np.ndarray, k: int, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, scores)`` of the top ``k`` of one query's float64 ``scores`` over every document
    (``-inf``: not a candidate), best first by the rule; ``rank`` is :func:`harness.run.id_rank` of
    the documents' ids. Shorter than ``k`` only where fewer documents are candidates: a finite score
    beyond float32's range is a candidate whose key is an infinity (ties there go by id)."""
    key = rank_key(scores)
    n = len(key)
    kk = min(k, n)
    if kk == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    if kk < n:  # non-candidates key as -inf, below every candidate but those that tie them there
        cand = np.flatnonzero(key >= np.partition(key, n - kk)[n - kk])
    else:
        cand = np.arange(n)
    cand = cand[np.isfinite(scores[cand])]  # a candidate is a finite float64 score, whatever its key
    pos = cand[rule_order(key[cand], rank[cand])[:kk]]
    return pos, scores[pos]


def rerank(run: Run, head: np.ndarray, k: int, name: str) -> Run:
    """``run`` with its first ``head.shape[1]`` documents re-scored by ``head`` (``-inf`` past a row's
    end), cut to ``k``. The tail keeps its input order strictly below the lowest head score of its
    query (one less per place), so a stage reranks its head and never reorders what it did not score."""
    n = head.shape[1]
    scores = run.scores.copy()
    scores[:, :n] = head
    if run.depth > n:
        valid = run.indices[:, :n] >= 0
        floor = np.where(valid, head, np.inf).min(axis=1, initial=np.inf)
        floor = np.where(np.isfinite(floor), floor, 0.0)
        steps = np.arange(1, run.depth - n + 1, dtype=np.float64)[None, :]
        scores[:, n:] = np.where(run.indices[:, n:] >= 0, floor[:, None] - steps, -np.inf)
    out = Run(run.query_ids, run.doc_ids, np.where(run.indices >= 0, run.indices, PAD), scores, name=name)
    return out.cut(k) if out.depth > k else out
