"""Checking what a retriever or stage returned, before anything is scored.

A team's retriever can return anything; a number from a half-valid ranking is worse than none,
so problems are errors that name the retriever and the query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError, RetrieverError
from harness.model import Query
from harness.run import Run

#: vocabularies already found equal to the corpus's, by id (the arrays are held so ids stay
#: unique): a retriever returns the same vocabulary on every call, so the O(corpus) comparison
#: is paid once, not on each of the single-query calls that latency is measured with
_VERIFIED: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}


def _same_vocab(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    hit = _VERIFIED.get((id(a), id(b)))
    if hit is not None and hit[0] is a and hit[1] is b:
        return True
    same = len(a) == len(b) and bool(np.array_equal(a, b))
    if same:
        if len(_VERIFIED) >= 32:
            _VERIFIED.clear()
        _VERIFIED[(id(a), id(b))] = (a, b)
    return same


def validate_output(
    result: Any, queries: Sequence[Query], k: int, doc_ids: np.ndarray, name: str, *, allow_unknown_docs: bool = False
) -> Run:
    """A canonical ``Run`` over the corpus vocabulary, cut to ``k``, holding only asked queries."""
    if result is None:
        raise RetrieverError(
            f"retriever {name!r}: search() returned None (expected {{query_id: [(doc_id, score), ...]}})"
        )
    if not isinstance(result, (Run, Mapping)):
        raise RetrieverError(
            f"retriever {name!r}: search() returned {type(result).__name__}; expected a Run or "
            "a mapping {query_id: [(doc_id, score), ...]}"
        )
    asked = {q.id for q in queries}
    try:
        if isinstance(result, Run):
            run = result
            if not _same_vocab(run.doc_ids, doc_ids) and not allow_unknown_docs:
                corpus = set(doc_ids.tolist())
                used = {run.doc_ids[j] for j in np.unique(run.indices[run.indices >= 0])}
                unknown = sorted(used - corpus)
                if unknown:
                    qid = next(q for q, ranking in run.items() if any(d == unknown[0] for d, _ in ranking))
                    raise InputError(
                        f"query {qid!r}: unknown doc id {unknown[0]!r} (not in the corpus; {len(unknown)} such ids)"
                    )
                run = Run.from_lists(dict(run.items()), doc_ids=doc_ids)
        else:
            run = Run.coerce(_rankings(result), doc_ids=None if allow_unknown_docs else doc_ids)
    except InputError as e:
        raise RetrieverError(f"retriever {name!r} returned an unusable ranking: {e}") from None
    extra = [q for q in run.query_ids if q not in asked]
    if extra:
        raise RetrieverError(
            f"retriever {name!r} returned results for query {extra[0]!r}, which was not asked "
            f"({len(extra)} such queries)"
        )
    if run.depth > k:
        run = run.cut(k)
    return run.with_name(name)


def _rankings(result: Mapping[Any, Any]) -> dict[str, Any]:
    """``{qid: ranking}`` with every ranking materialised (a generator is read once) and every item
    checked to be a ``(doc_id, score)`` pair, so a wrong shape is reported as such, naming the query,
    instead of surfacing later as an odd doc id (a bare string ``"d1"`` unpacks to ``("d", "1")``)."""
    out: dict[str, Any] = {}
    for qid, ranking in result.items():
        q = str(qid)
        if isinstance(ranking, Mapping):
            out[q] = ranking
            continue
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Iterable):
            raise InputError(
                f"query {q!r}: expected a list of (doc_id, score) pairs, got {type(ranking).__name__} {ranking!r:.80}"
            )
        items = list(ranking)
        for pos, item in enumerate(items):
            pair = isinstance(item, (Sequence, np.ndarray)) and not isinstance(item, (str, bytes)) and len(item) == 2
            if not pair:
                hint = " (doc ids alone carry no score: return (doc_id, score) pairs)" if isinstance(item, str) else ""
                raise InputError(f"query {q!r}, item {pos}: expected a (doc_id, score) pair, got {item!r:.80}{hint}")
        out[q] = items
    return out
