"""nuggetizer's two files, read and written as nuggetizer reads and writes them.

- nuggets JSONL (``nuggetizer create``): one line per query,
  ``{"query": TEXT, "qid": ID, "nuggets": [{"text": ..., "importance": "vital" | "okay"}, ...]}``;
- assignments JSONL (``nuggetizer assign --input-kind retrieval``): one line per (query, passage),
  ``{"text": QUERY, "qid": ID, "candidate_text": PASSAGE, "docid": ID,
  "nuggets": [{"text": ..., "importance": ..., "assignment": "support" | "partial_support" | "not_support"}]}``.

Records are matched by qid, docid and nugget text. Each record keeps the object it was read from, and
a line is written as nuggetizer writes it (``json.dumps(record) + "\\n"``: its key order, ASCII
escapes), so a file read and written again is the same bytes, and a file the harness appends to stays
one nuggetizer resumes from (it skips the (qid, docid) pairs it finds).

Bad input stops before any work with ``FILE:LINE: field: what is wrong`` (exit 2): an importance or an
assignment nuggetizer does not write, an assigned nugget whose text the nuggets file does not hold for
that query, two records of one query (or one (query, passage)) that disagree. Records repeated
identically (a resumed run's overlap) are read once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.errors import InputError
from harness.io.lines import iter_lines, json_object
from harness.metrics.nuggets import IMPORTANCES, LEVELS


@dataclass(frozen=True)
class Nugget:
    """One nugget of a query: its text (the key assignments are matched by) and importance."""

    text: str
    importance: str

    @property
    def vital(self) -> bool:
        """Whether the vital metrics (``nugget_vital@k``, ``nugget_strict_vital@k``) count it."""
        return self.importance == "vital"


@dataclass
class NuggetRecord:
    """One query's nuggets (a line of the nuggets file)."""

    qid: str
    query: str
    nuggets: list[Nugget]
    #: the object as read (or as it will be written): nuggetizer's key order, extra keys kept
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        if self.raw:
            return self.raw
        return {
            "query": self.query,
            "qid": self.qid,
            "nuggets": [{"text": n.text, "importance": n.importance} for n in self.nuggets],
        }


@dataclass
class Assignment:
    """What one passage was judged to hold of each of its query's nuggets (a line of the assignments file)."""

    qid: str
    docid: str
    query: str
    passage: str
    #: nugget text -> assignment label (``support``, ``partial_support``, ``not_support``, ``failed``)
    labels: dict[str, str]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return self.raw


def dumps(record: Mapping[str, Any]) -> str:
    """One line as nuggetizer writes it (``nuggetizer.cli.io.append_jsonl_record``)."""
    return json.dumps(record) + "\n"


def assignment_record(nuggets: NuggetRecord, docid: str, passage: str, labels: Iterable[str]) -> Assignment:
    """The record ``nuggetizer assign --input-kind retrieval`` writes for one passage (its key order:
    ``text``, ``qid``, ``candidate_text``, ``docid``, ``nuggets``), from one label per nugget in order."""
    labels = list(labels)
    if len(labels) != len(nuggets.nuggets):
        raise ValueError(f"{len(labels)} labels for {len(nuggets.nuggets)} nuggets")
    qid = nuggets.raw.get("qid", nuggets.qid) if nuggets.raw else nuggets.qid
    raw = {
        "text": nuggets.query,
        "qid": qid,
        "candidate_text": passage,
        "docid": docid,
        "nuggets": [
            {"text": n.text, "importance": n.importance, "assignment": a} for n, a in zip(nuggets.nuggets, labels)
        ],
    }
    return Assignment(
        nuggets.qid, str(docid), nuggets.query, passage, {n.text: a for n, a in zip(nuggets.nuggets, labels)}, raw
    )


def _id(obj: Mapping[str, Any], key: str, path: Path, line: int) -> str:
    """A qid or docid: a string or an integer (nuggetizer writes what its input held), as a string."""
    if key not in obj:
        raise InputError(f"missing {key!r}", path=path, line=line, field=key)
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise InputError(f"must be a string or an integer, got {type(v).__name__}", path=path, line=line, field=key)
    s = str(v)
    if not s.strip():
        raise InputError("is empty", path=path, line=line, field=key)
    return s


def _text(obj: Mapping[str, Any], key: str, path: Path, line: int, where: str, *, default: str | None = None) -> str:
    v = obj.get(key, default)
    if not isinstance(v, str):
        got = "missing" if key not in obj else f"a {type(v).__name__}"
        raise InputError(f"must be a string, got {got}", path=path, line=line, field=where)
    return v


def _nugget_list(obj: Mapping[str, Any], path: Path, line: int) -> list[Any]:
    items = obj.get("nuggets")
    if not isinstance(items, list):
        raise InputError("must be a list of nugget objects", path=path, line=line, field="nuggets")
    for j, n in enumerate(items):
        if not isinstance(n, dict):
            raise InputError(f"must be an object, got {type(n).__name__}", path=path, line=line, field=f"nuggets[{j}]")
    return items


def _importance(n: Mapping[str, Any], path: Path, line: int, j: int) -> str:
    # nuggetizer reads a nugget without importance as vital (cli.adapters.scored_nuggets_from_record)
    imp = _text(n, "importance", path, line, f"nuggets[{j}].importance", default="vital")
    if imp not in IMPORTANCES:
        raise InputError(
            f"unknown importance {imp!r}; nuggetizer writes {', '.join(IMPORTANCES)}",
            path=path,
            line=line,
            field=f"nuggets[{j}].importance",
        )
    return imp


def read_nuggets(path: str | os.PathLike[str]) -> dict[str, NuggetRecord]:
    """qid -> its nuggets, in file order. A query's nugget texts are unique (assignments are matched
    by text); a query given twice must be given the same way."""
    p = Path(path)
    out: dict[str, NuggetRecord] = {}
    for lineno, text in iter_lines(p, "nuggets file", skip_comments=False):
        obj = json_object(p, lineno, text)
        qid = _id(obj, "qid", p, lineno)
        query = _text(obj, "query", p, lineno, "query", default="")
        nuggets: list[Nugget] = []
        seen: dict[str, int] = {}
        for j, n in enumerate(_nugget_list(obj, p, lineno)):
            t = _text(n, "text", p, lineno, f"nuggets[{j}].text")
            if t in seen:
                raise InputError(
                    f"nugget text {t[:60]!r} repeats nuggets[{seen[t]}] of this query; assignments are matched "
                    "by text, so each nugget's text must be unique within its query",
                    path=p,
                    line=lineno,
                    field=f"nuggets[{j}].text",
                )
            seen[t] = j
            nuggets.append(Nugget(t, _importance(n, p, lineno, j)))
        rec = NuggetRecord(qid, query, nuggets, obj, lineno)
        prev = out.get(qid)
        if prev is not None:
            if prev.nuggets != rec.nuggets or prev.query != rec.query:
                raise InputError(
                    f"query {qid!r} is given again, differently from line {prev.line}",
                    path=p,
                    line=lineno,
                    field="qid",
                )
            continue
        out[qid] = rec
    return out


def read_assignments(
    path: str | os.PathLike[str], nuggets: Mapping[str, NuggetRecord]
) -> dict[tuple[str, str], Assignment]:
    """(qid, docid) -> the passage's assignment, checked against ``nuggets``: every assigned nugget's
    text must be one of its query's, with the same importance, and a (qid, docid) given twice must
    be given the same labels (a resumed run repeats records; a disagreement is two judges mixed up)."""
    p = Path(path)
    out: dict[tuple[str, str], Assignment] = {}
    for lineno, text in iter_lines(p, "assignments file", skip_comments=False):
        out_rec = parse_assignment(json_object(p, lineno, text), nuggets, p, lineno)
        key = (out_rec.qid, out_rec.docid)
        prev = out.get(key)
        if prev is not None:
            if prev.labels != out_rec.labels:
                diff = next(t for t in {**prev.labels, **out_rec.labels} if prev.labels.get(t) != out_rec.labels.get(t))
                raise InputError(
                    f"query {key[0]!r}, passage {key[1]!r} was assessed at line {prev.line} too, differently "
                    f"(nugget {diff[:60]!r}: {prev.labels.get(diff)!r} there, {out_rec.labels.get(diff)!r} here)",
                    path=p,
                    line=lineno,
                    field="nuggets",
                )
            continue
        out[key] = out_rec
    return out


def parse_assignment(obj: dict[str, Any], nuggets: Mapping[str, NuggetRecord], path: Path, line: int) -> Assignment:
    """One assignments line, checked against the nuggets (see :func:`read_assignments`)."""
    qid = _id(obj, "qid", path, line)
    docid = _id(obj, "docid", path, line)
    known = nuggets.get(qid)
    if known is None:
        raise InputError(f"query {qid!r} has no nuggets in the nuggets file", path=path, line=line, field="qid")
    importance = {n.text: n.importance for n in known.nuggets}
    labels: dict[str, str] = {}
    for j, n in enumerate(_nugget_list(obj, path, line)):
        t = _text(n, "text", path, line, f"nuggets[{j}].text")
        imp = _importance(n, path, line, j) if t in importance else None
        a = _text(n, "assignment", path, line, f"nuggets[{j}].assignment") if imp is not None else None
        problem = (
            ("text", f"nugget {t[:60]!r} is not one of query {qid!r}'s nuggets (nuggets file line {known.line})")
            if imp is None
            else ("importance", f"importance {imp!r}, but the nuggets file (line {known.line}) says {importance[t]!r}")
            if imp != importance[t]
            else ("assignment", f"unknown assignment {a!r}; nuggetizer writes {', '.join(LEVELS)}")
            if a not in LEVELS
            else ("assignment", f"nugget {t[:60]!r} is assigned twice in this record, differently")
            if t in labels and labels[t] != a
            else None
        )
        if problem is not None:
            raise InputError(problem[1], path=path, line=line, field=f"nuggets[{j}].{problem[0]}")
        assert a is not None
        labels[t] = a
    query = obj.get("text") if isinstance(obj.get("text"), str) else known.query
    passage = obj.get("candidate_text") if isinstance(obj.get("candidate_text"), str) else ""
    return Assignment(qid, docid, query, passage, labels, obj, line)


def write_jsonl(records: Iterable[NuggetRecord | Assignment], out: IO[str]) -> None:
    """Records as nuggetizer writes them, one line each."""
    for r in records:
        out.write(dumps(r.to_json()))
