"""Retrieval spans to one record per distinct query: its count, when, where from, and the ranking
production returned the last time it was asked.

Two spans ask the same query when their texts are equal after Unicode NFKC normalisation, case
folding and collapsing every run of whitespace to one space (trimmed): ``"What is  BM25?"`` and
``"what is bm25?"`` are one query asked twice. Its id is ``q`` and the first 16 hex digits of the
sha256 of that normal form, so the same query gets the same id in every import (and ids leak
nothing the written text does not). The text written is the most recent span's, as asked; the
ranking is the most recent span's (latest start time; equal times: the one read last).

Memory is one record per distinct query (its latest ranking, its data source and conversation ids),
never one per span: a billion spans of ten thousand queries take what ten thousand take. The ids a
query lists are capped: the first :data:`MAX_LISTED` distinct conversation ids (and as many data
sources and services) are kept and written, the spans whose id was not kept are counted
(``listed_ids_not_kept`` in traces.json), so one query asked in a million conversations neither
grows memory nor writes a queries.jsonl line longer than the readers take; traces.json's
``services`` and ``data_sources`` tallies keep the first :data:`MAX_TALLIED` values the same way.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from harness.traces.conventions import RetrievalSpan
from harness.traces.redact import Redactor

_WS = re.compile(r"\s+")
#: distinct conversation ids (and data sources, services) kept per query; more are counted, not kept
MAX_LISTED = 100
#: distinct services and data sources tallied for traces.json; spans of more are counted, not kept
MAX_TALLIED = 1000


def normalise(text: str) -> str:
    """The form two spans' query texts are compared in: NFKC, case-folded, whitespace collapsed."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def query_id(normal: str) -> str:
    return "q" + hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(slots=True)
class QueryRecord:
    id: str
    text: str
    count: int
    first_ns: int
    last_ns: int
    data_sources: set[str] = field(default_factory=set)
    conversations: set[str] = field(default_factory=set)
    services: set[str] = field(default_factory=set)
    #: the latest span's ranking: (document id, score or None) in the order it was returned
    ranking: list[tuple[str, float | None]] = field(default_factory=list)
    #: where the latest span was: file, line, span id (for located errors about its documents)
    where: tuple[str, int, str] = ("", 0, "")


class Aggregate:
    """Folds retrieval spans into :class:`QueryRecord` s; document contents go to ``on_content``
    the first time each id is seen with one."""

    def __init__(self, redactor: Redactor, on_content=None, *, keep_raw_ids: bool = False) -> None:
        self.redactor = redactor
        #: query id -> its latest ranking's document ids as the spans had them, before redaction (kept
        #: where ``--corpus`` checks them: the team's ids are unredacted); None when not asked for
        self.raw_ids: dict[str, list[str]] | None = {} if keep_raw_ids else None
        self.queries: dict[str, QueryRecord] = {}
        self.on_content = on_content
        self.with_content: set[str] = set()
        self.without_content = 0
        self.conventions: Counter[str] = Counter()
        self.services: Counter[str] = Counter()
        self.data_sources: Counter[str] = Counter()
        self.top_k: Counter[str] = Counter()
        self.first_ns = 0
        self.last_ns = 0
        #: spans whose conversation id / data source / service was not kept (over MAX_LISTED), by field
        self.not_listed: Counter[str] = Counter()

    def _listed(self, ids: set[str], value: str, what: str) -> None:
        if value in ids:
            return
        if len(ids) < MAX_LISTED:
            ids.add(value)
        else:
            self.not_listed[what] += 1

    def _tally(self, counter: Counter[str], value: str, what: str) -> None:
        if value in counter or len(counter) < MAX_TALLIED:
            counter[value] += 1
        else:
            self.not_listed[what] += 1

    def add(self, span: RetrievalSpan) -> str | None:
        """Fold ``span`` in; the reason it is skipped instead (``no_query``: nothing left of its text)."""
        r = self.redactor
        text = r.text(span.query)
        normal = normalise(text)
        if r.patterns and normal:  # compared redacted in the normal form: redaction never splits a query
            normal = normalise(r.key(normalise(r.spaced(span.query))))
        if not normal:
            return "no_query"
        t = span.raw.start_ns
        service = r.text(span.raw.service)
        self.conventions[span.convention] += 1
        self._tally(self.services, service, "traces.json services")
        if t:
            self.first_ns = t if not self.first_ns else min(self.first_ns, t)
            self.last_ns = max(self.last_ns, t)
        self.top_k[str(span.top_k) if span.top_k is not None else f"unset ({len(span.documents)} returned)"] += 1
        rec = self.queries.get(normal)
        if rec is None:
            rec = self.queries[normal] = QueryRecord(query_id(normal), text, 0, t, t)
        rec.count += 1
        self._listed(rec.services, service, "services")
        if span.data_source is not None:
            source = r.text(span.data_source)
            self._listed(rec.data_sources, source, "data_sources")
            self._tally(self.data_sources, source, "traces.json data_sources")
        if span.conversation is not None:
            self._listed(rec.conversations, r.text(span.conversation), "conversations")
        if t and (not rec.first_ns or t < rec.first_ns):
            rec.first_ns = t
        ranking = []
        raw: list[str] = []
        for d in span.documents:
            doc_id = r.doc_id(d.id)  # distinct ids stay distinct; ids hold no control characters (conventions)
            ranking.append((doc_id, d.score))
            if self.raw_ids is not None:
                raw.append(d.id)
            if d.content is None:
                self.without_content += 1
            elif doc_id not in self.with_content:
                self.with_content.add(doc_id)
                if self.on_content is not None:
                    self.on_content(doc_id, r.text(d.content))
        if t >= rec.last_ns or rec.count == 1:  # the latest span (equal times: the later read) wins
            rec.last_ns = t
            rec.text = text
            rec.ranking = ranking
            if self.raw_ids is not None:
                self.raw_ids[rec.id] = raw
            rec.where = (span.raw.path, span.raw.line, span.raw.span_id)
        return None
