"""Checking what a retriever or stage returned, before anything is scored.

A team's retriever can return anything; a number from a half-valid ranking is worse than none,
so problems are errors that name the retriever and the query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.errors import InputError, RetrieverError
from harness.model import Query
from harness.run import Run


def _same_vocab(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (len(a) == len(b) and bool(np.array_equal(a, b)))


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
                    raise InputError(f"unknown doc id {unknown[0]!r} (not in the corpus; {len(unknown)} such ids)")
                run = Run.from_lists(dict(run.items()), doc_ids=doc_ids)
        else:
            run = Run.coerce({str(q): v for q, v in result.items()}, doc_ids=None if allow_unknown_docs else doc_ids)
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
