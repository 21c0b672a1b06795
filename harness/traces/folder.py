"""What ``harness traces import`` writes into its folder.

The folder is written whole or not at all (:class:`harness.io.staged.Staged`: a hidden sibling of
``OUT`` renamed into place at the end; ``OUT`` must not exist, so nothing a user wrote is
overwritten); ``traces.json`` is its envelope (``schema: retrieval-harness/traces``, each file's
sha256).

``runs/production.trec``: each query's latest ranking in the order production returned it (the
order its span listed the documents in, which is what the user was shown). The score column keeps
the recorded scores when every one is present, finite and strictly decreasing down the list; any
other ranking (a missing or NaN score, a tie, scores out of order) is written with scores
``n, n-1, ..., 1`` instead, so every tool that sorts by score (trec_eval breaks ties by document id)
reads back exactly the returned order. A document listed twice keeps its first place.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from harness.errors import InputError
from harness.io import staged
from harness.traces.aggregate import QueryRecord

TRACES_FILE = "traces.json"
RUN_NAME = "production"
KIND = "traces"
#: 2: the common envelope; 1 was ``format: harness-traces``, ``version: 1`` (no ``files``)
VERSION = 2

Count = Field(ge=0)


class Spans(staged.Ordered):
    read: int = Count
    imported: int = Count
    truncated_at_max_spans: bool


class Window(staged.Ordered):
    first: str | None
    last: str | None


class QueryCounts(staged.Ordered):
    distinct: int = Count
    below_min_count: int = Count
    sampled_out: int = Count
    written: int = Count


class CorpusCounts(staged.Ordered):
    from_: str = Field(alias="from")
    documents_with_content: int = Count
    listings_without_content: int = Count


class TracesFile(staged.Ordered):
    """``traces.json``: what ``harness traces import`` read, kept, skipped and wrote (docs/traces.md)."""

    schema_: str = Field(staged.schema(KIND), alias="schema")
    schema_version: int = VERSION
    spans: Spans
    skipped: dict[str, int]
    documents_dropped: dict[str, int]
    window: Window
    services: dict[str, int]
    data_sources: dict[str, int]
    conventions: dict[str, int]
    top_k: dict[str, int]
    queries: QueryCounts
    rankings: dict[str, int]
    corpus: CorpusCounts
    redactions: dict[str, int]
    options: dict[str, Any]
    problems: list[Any]
    complete: bool = True
    files: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def read(cls, folder: str | os.PathLike[str]) -> TracesFile:
        """``DIR/traces.json``: one located line (file, key) and exit 2 when it is not the shape
        ``traces import`` writes, or a file it lists is missing or changed since."""
        p = Path(folder) / TRACES_FILE
        if not p.is_file():
            raise InputError(f"not a folder `harness traces import` wrote (no {TRACES_FILE})", path=p.parent)
        return staged.open_envelope(p, KIND, cls, version=VERSION, upgrade=upgrade, by="traces import")


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A traces.json written before the common envelope (``format: harness-traces``, ``version: 1``)."""
    if doc.get("format") == "harness-traces" and doc.get("version") == 1:
        rest = {k: v for k, v in doc.items() if k not in ("format", "version")}
        return {"schema": staged.schema(KIND), "schema_version": 1, **rest}
    return doc


def iso(ns: int) -> str | None:
    """Nanoseconds since the epoch as ISO 8601 UTC to the millisecond (None for 0: no time recorded)."""
    if not ns:
        return None
    dt = datetime.fromtimestamp(ns // 10**6 / 1000, tz=timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ordered(records: Iterable[QueryRecord]) -> list[QueryRecord]:
    """Most asked first, then by id: the order queries.jsonl and the run list them in."""
    return sorted(records, key=lambda r: (-r.count, r.id))


def write_queries(fh: IO[str], records: list[QueryRecord]) -> None:
    for r in records:
        rec: dict[str, Any] = {
            "_id": r.id,
            "text": r.text,
            "count": r.count,
            "first_seen": iso(r.first_ns),
            "last_seen": iso(r.last_ns),
            "services": sorted(r.services),
            "data_sources": sorted(r.data_sources),
            "conversations": sorted(r.conversations),
        }
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def trec_lines(r: QueryRecord, dup: dict[str, int]) -> Iterator[str]:
    """The run lines of one query's ranking (see the module docstring for the score rule)."""
    seen: set[str] = set()
    ranking = []
    for doc_id, score in r.ranking:
        if doc_id in seen:
            dup["duplicate_document"] = dup.get("duplicate_document", 0) + 1
            continue
        seen.add(doc_id)
        ranking.append((doc_id, score))
    scores = [s for _, s in ranking]
    keep = all(s is not None for s in scores) and all(a > b for a, b in itertools.pairwise(scores))  # type: ignore[operator]
    if not keep and ranking:
        dup["ranked_by_position"] = dup.get("ranked_by_position", 0) + 1
    n = len(ranking)
    for i, (doc_id, score) in enumerate(ranking):
        s = repr(float(score)) if keep else str(n - i)
        yield f"{r.id} Q0 {doc_id} {i + 1} {s} {RUN_NAME}\n"


def write_run(fh: IO[str], records: list[QueryRecord]) -> dict[str, int]:
    """``runs/production.trec``; returns the counts of rankings fixed up (duplicates, by position)."""
    counts: dict[str, int] = {}
    for r in records:
        fh.writelines(trec_lines(r, counts))
    return counts


def corpus_line(doc_id: str, content: str) -> str:
    return json.dumps({"_id": doc_id, "title": "", "text": content}, ensure_ascii=False) + "\n"
