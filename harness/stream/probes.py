"""Probes: documents searched with their own text to see when a write reaches search.

A probe's query is the document's text cut to the words the engine takes (:func:`probe_words`): a
learned engine reads at most its query window of tokens (each word is at least one token, so its first
that-many words give it the whole window), and an engine without one (BM25, a team's class) gets the
first :data:`PROBE_WORDS` words. A probe's cost is then bounded whatever the document's length: the
figures are the engine's lag, not the time to search with a megabyte of text.

- **time to retrievable**: each probed inserted document is searched from the moment its write was
  acknowledged, every ``poll_s``, until it is in the top ``k`` or ``probe_deadline_s`` passed. Its
  figure is the time from the acknowledgement to the return of the first search that found it (an
  upper bound: it was retrievable by then, and not at the start of the poll before); one first found
  by a search that returned after the deadline counts as never, as one not found;
- **blinks**: a probe found at one poll and missing at a later one (no delete in between), counted
  once per probe;
- **ghost hits**: each probed deleted document searched with its own text after its delete was
  acknowledged, and at the checkpoint: still in the top ``k`` is a hit;
- **stale hits**: each probed updated document searched with its new text at the checkpoint: one id
  in two rows, or a score other than the exact index gives the new version (the engine served an
  old one), is a hit.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.model import Document, Query
from harness.run import Run

#: a score differs from the exact index's when it is off by more than this (relative, or absolute near 0)
SCORE_TOLERANCE = 1e-4


#: words of a probe's query for an engine that declares no query length of its own
PROBE_WORDS = 512

_WORD = re.compile(r"\S+")


def probe_words(engine: Any) -> int:
    """How many words of a document probe ``engine``: its own query window (``query_max_length`` of
    the built retriever, in tokens) when it declares one, else :data:`PROBE_WORDS`."""
    n = getattr(getattr(engine, "obj", None), "query_max_length", None)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else PROBE_WORDS


def probe_query(doc: Document, tag: str, words: int = PROBE_WORDS) -> Query:
    """The query that probes ``doc``: its indexed text (title and text) up to the end of its
    ``words``-th word (the whole text when shorter), under an id of its own."""
    text = doc.content
    ends = [m.end() for m in itertools.islice(_WORD.finditer(text), words)]
    cut = text[: ends[-1]] if ends else ""
    return Query(id=f"probe:{tag}:{doc.id}", text=cut or doc.id)


def _found(run: Run, qid: str, doc_id: str) -> bool:
    return qid in run and any(d == doc_id for d, _ in run[qid])


@dataclass
class Retrievable:
    """Seconds to retrievable per probe (None: never within the deadline) and the blinks seen."""

    seconds: dict[str, float | None] = field(default_factory=dict)
    blinks: int = 0

    def summary(self) -> dict[str, float | None]:
        found = np.array([s for s in self.seconds.values() if s is not None], dtype=float)
        n = len(self.seconds)

        def pct(p: float) -> float | None:
            return float(np.percentile(found, p)) if found.size else None

        return {"p50": pct(50), "p95": pct(95), "p99": pct(99), "never": (n - found.size) / n if n else None}


def poll_inserts(engine, docs: Sequence[Document], acked: Mapping[str, float], *, k: int, poll_s: float,
                 deadline_s: float, tag: str) -> Retrievable:  # fmt: skip
    """Poll ``docs`` (acknowledged at ``acked[id]``, ``time.monotonic()``) until each is found or its
    deadline passed; found ones keep being searched until the last is found, to see blinks."""
    out = Retrievable()
    if not docs:
        return out
    words = probe_words(engine)
    queries = {d.id: probe_query(d, tag, words) for d in docs}
    pending = {d.id for d in docs}
    seen: set[str] = set()
    blinked: set[str] = set()
    while pending:
        run, _ = engine.search(list(queries.values()), k)
        now = time.monotonic()
        for doc_id, q in queries.items():
            hit = _found(run, q.id, doc_id)
            if doc_id in pending:
                if hit:  # found by a search that returned after the deadline: never, by the definition
                    late = now - acked[doc_id] > deadline_s
                    out.seconds[doc_id] = None if late else now - acked[doc_id]
                    pending.discard(doc_id)
                    seen.add(doc_id)
                elif now - acked[doc_id] >= deadline_s:
                    out.seconds[doc_id] = None
                    pending.discard(doc_id)
            elif doc_id in seen and not hit and doc_id not in blinked:
                blinked.add(doc_id)
        if pending:
            time.sleep(poll_s)
    out.blinks = len(blinked)
    return out


def ghost_hits(engine, docs: Sequence[Document], *, k: int, tag: str) -> int:
    """How many deleted ``docs`` a search with their own text still returns in the top ``k``."""
    if not docs:
        return 0
    queries = [probe_query(d, tag, probe_words(engine)) for d in docs]
    run, _ = engine.search(queries, k)
    return sum(_found(run, q.id, d.id) for q, d in zip(queries, docs))


def stale_hits(engine, reference, docs: Sequence[Document], *, k: int, tag: str) -> int:
    """How many updated ``docs`` (their new versions) the engine serves twice or at a score the exact
    index of the visible documents does not give the new version."""
    if not docs:
        return 0
    queries = [probe_query(d, tag, probe_words(engine)) for d in docs]
    run, repeats = engine.search(queries, k)
    ref, _ = reference.search(queries, k)
    hits = 0
    for q, d in zip(queries, docs):
        if repeats.get(q.id):
            hits += 1
            continue
        got = dict(run[q.id]) if q.id in run else {}
        want = dict(ref[q.id]) if q.id in ref else {}
        if d.id in got and d.id in want:
            a, b = got[d.id], want[d.id]
            if abs(a - b) > SCORE_TOLERANCE * max(1.0, abs(b)):
                hits += 1
    return hits
