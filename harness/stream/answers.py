"""A retriever's raw answer as the stream reads it: once, and with the rows it repeated counted.

A stale engine can serve two versions of one document, one id in two rows; the check every answer goes
through (:func:`harness.validate.validate_output`) keeps one of them, so the repeats are counted on the raw
answer first. Both a row (:mod:`.engines`) and each part of a composed row (:mod:`.composed`) read their
answers here, so a part that serves an old version beside the new one is a stale hit of the composed row too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.run import Run


def materialised(raw: Any) -> Any:
    """A mapping's rankings read once, in the worker thread (a generator's items are the team's code
    too, and bounded by the same time limit)."""
    if isinstance(raw, Mapping) and not isinstance(raw, Run):
        return {
            qid: r if isinstance(r, (Mapping, str, bytes)) or not hasattr(r, "__iter__") else list(r)
            for qid, r in raw.items()
        }
    return raw


def repeats(raw: Any) -> dict[str, int]:
    """Per query, the rows beyond the first that name a document already in its ranking."""
    if isinstance(raw, Run) or not isinstance(raw, Mapping):
        return {}  # a Run holds each document once per query
    out: dict[str, int] = {}
    for qid, rows in raw.items():
        ids = list(rows) if isinstance(rows, Mapping) else [r[0] for r in rows]
        extra = len(ids) - len(set(ids))
        if extra:
            out[str(qid)] = extra
    return out


def summed(*counts: Mapping[str, int]) -> dict[str, int]:
    """Repeats of several answers to the same queries, added per query."""
    out: dict[str, int] = {}
    for c in counts:
        for qid, n in c.items():
            out[qid] = out.get(qid, 0) + n
    return out
