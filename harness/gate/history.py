"""The nightly history: one JSON line per ``harness check --history FILE.jsonl``, appended durably.

A month of nights answers what one check cannot: is quality drifting, did last week's failure come
back. Each line is one night (:func:`night`): when, the commit and dataset the current results came
from, every current mean, the baseline means and tolerances, each row's verdict, and the overall
verdict and exit code. A check that could not run (bad input, exit 2) is a night too, with its error.

Appending is the only write (:func:`append`): ``O_APPEND`` under an exclusive lock, one ``write`` of
the whole line, ``fsync``. Earlier lines are never rewritten or truncated. A last line cut short (a
machine that died mid-write) is kept as it is and reported with its line number; the new night starts
on a fresh line after it, and the reader (:func:`read`) skips such lines with a warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import clock
from harness.errors import InputError
from harness.gate.verdict import CheckReport
from harness.io import jsontext

log = logging.getLogger("harness")

#: every night carries this, so a history file is recognisable (and a foreign JSONL is refused): the
#: common envelope's marker, as every file the harness writes (:mod:`harness.io.staged`)
SCHEMA = "retrieval-harness/history"
#: 2: ``schema: retrieval-harness/history`` + ``schema_version``; 1 was ``schema: harness-history/1``
SCHEMA_VERSION = 2
#: the marker of a night written before the common envelope (read as schema_version 1)
SCHEMA_V1 = "harness-history/1"


def _now() -> str:
    return clock.stamp()


def night(report: CheckReport, *, time: str | None = None) -> dict[str, Any]:
    """One night's line from a finished check."""
    git = report.current_git
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "time": time or _now(),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "created": report.current_info.get("created"),
        "dataset": {
            "name": report.dataset.name,
            "split": report.dataset.split,
            "fingerprint": report.dataset.current_fingerprint,
            "queries": report.dataset.current_queries,
        },
        "baseline": report.baseline,
        "current": report.current,
        "alpha": report.alpha,
        "test": report.test_description,
        "summary": report.current_summary,
        "baseline_summary": report.baseline_summary,
        "rows": [
            {
                "retriever": r.retriever,
                "metric": r.metric,
                "verdict": r.verdict,
                "baseline": r.baseline,
                "current": r.current,
                "delta": r.delta,
                "p_value": r.p_value,
                "tolerance": r.tolerance,
                "queries": r.queries,
            }
            for r in report.rows
        ],
        "problems": list(report.problems),
        "verdict": "fail" if report.failed else "pass",
        "exit_code": report.exit_code,
        "headline": report.headline(),
    }


def error_night(message: str, *, baseline: str, current: str, time: str | None = None) -> dict[str, Any]:
    """A night whose check could not run (bad input): recorded so the trend shows the gap."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "time": time or _now(),
        "baseline": baseline,
        "current": current,
        "verdict": "error",
        "exit_code": 2,
        "error": message,
        "rows": [],
        "summary": {},
    }


def encode(record: dict[str, Any]) -> bytes:
    """One line of JSON; a non-finite number is refused (it is not JSON, and never a score)."""
    text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if "\n" in text:  # cannot happen with json.dumps, kept as the invariant the reader relies on
        raise ValueError("a history line must not contain a newline")
    return (text + "\n").encode("utf-8")


def append(path: str | os.PathLike[str], record: dict[str, Any]) -> int:
    """Append ``record`` as one line; returns its line number. See the module doc for the guarantees."""
    p = Path(path).expanduser()
    data = encode(record)
    created = not p.exists()
    if created:
        p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # the umask decides the mode
    except OSError as e:
        raise InputError(f"--history: cannot open for appending ({e.strerror or e})", path=p) from None
    try:
        _lock(fd)
        size = os.fstat(fd).st_size
        lines = 0
        if size:
            lines, last_ok, ends_newline = _scan(p)
            if not last_ok:
                log.warning(
                    f"{p}:{lines}: the last line is not a complete night (a write cut short?); "
                    "it is kept as it is and tonight is appended after it"
                )
            if not ends_newline:
                data = b"\n" + data
        _write_all(fd, data)
        os.fsync(fd)
    except OSError as e:
        raise InputError(f"--history: cannot append ({e.strerror or e})", path=p) from None
    finally:
        os.close(fd)
    if created:
        _fsync_dir(p.parent)
    return lines + 1


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: O_APPEND alone
        return
    fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _scan(p: Path) -> tuple[int, bool, bool]:
    """(number of lines, whether the last one is a complete night, whether the file ends in a newline)."""
    raw = p.read_bytes()
    lines = raw.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return 0, True, raw.endswith(b"\n") or not raw
    try:
        complete = _parse(lines[-1]) is not None
    except _TooDeep:
        complete = True  # a whole line, if not a night: appending after it is safe
    return len(lines), complete, raw.endswith(b"\n")


class _TooDeep(Exception):
    """A line nested deeper than any night (see :mod:`harness.io.jsontext`)."""


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    except RecursionError:  # nested thousands deep
        raise _TooDeep from None
    deep = raw.count(b"[") + raw.count(b"{") > jsontext.MAX_JSON_DEPTH
    if deep and jsontext.depth(obj) > jsontext.MAX_JSON_DEPTH:
        raise _TooDeep
    return obj if isinstance(obj, dict) else None


@dataclass
class History:
    """The nights of a history file, in file order, and the lines that could not be read."""

    nights: list[dict[str, Any]] = field(default_factory=list)
    #: (line number, why) of each line skipped
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def metrics(self) -> list[str]:
        out: dict[str, None] = {}
        for n in self.nights:
            for scores in (n.get("summary") or {}).values():
                out.update(dict.fromkeys(scores))
            for r in n.get("rows") or []:
                out[r["metric"]] = None
        return list(out)

    def retrievers(self) -> list[str]:
        out: dict[str, None] = {}
        for n in self.nights:
            out.update(dict.fromkeys(n.get("summary") or {}))
            out.update(dict.fromkeys(r["retriever"] for r in n.get("rows") or []))
        return list(out)


def read(path: str | os.PathLike[str]) -> History:
    """Every night of ``path``; lines cut short are skipped (and listed), a foreign file is refused."""
    p = Path(path).expanduser()
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("history file not found", path=p) from None
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=p) from None
    hist = History()
    for i, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = _parse(line)
        except _TooDeep:
            raise InputError(f"nested more than {jsontext.MAX_JSON_DEPTH} levels deep", path=p, line=i) from None
        if obj is None:
            hist.skipped.append((i, "not valid JSON (a write cut short?)"))
            continue
        obj = _upgrade(obj)
        if obj.get("schema") != SCHEMA:
            raise InputError(f'not a night written by harness check (no "schema": "{SCHEMA}")', path=p, line=i)
        v = obj.get("schema_version")
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= SCHEMA_VERSION:
            raise InputError(f"schema_version: must be a whole number 1..{SCHEMA_VERSION} (a newer harness wrote it?)",
                             path=p, line=i)  # fmt: skip
        problem = _night_problem(obj)
        if problem:
            raise InputError(problem, path=p, line=i)
        obj["line"] = i
        hist.nights.append(obj)
    if not hist.nights:
        raise InputError("holds no nights" + (" (every line is unreadable)" if hist.skipped else ""), path=p)
    return hist


def _upgrade(obj: dict[str, Any]) -> dict[str, Any]:
    """A night written before the common envelope (``harness-history/1``) as schema_version 1."""
    if obj.get("schema") == SCHEMA_V1:
        return {"schema": SCHEMA, "schema_version": 1, **{k: v for k, v in obj.items() if k != "schema"}}
    return obj


def _night_problem(obj: dict[str, Any]) -> str | None:
    if not isinstance(obj.get("time"), str):
        return "time: missing"
    if obj.get("verdict") not in ("pass", "fail", "error"):
        return f"verdict: must be pass, fail or error, got {obj.get('verdict')!r}"
    summary = obj.get("summary") or {}
    if not isinstance(summary, dict):
        return "summary: not a mapping"
    for r, ms in summary.items():
        if not isinstance(ms, dict):
            return f"summary.{r}: not a mapping"
        for m, v in ms.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"summary.{r}.{m}: not a finite number"
    rows = obj.get("rows") or []
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "retriever" in r and "metric" in r for r in rows):
        return "rows: each must be a mapping with retriever and metric"
    for i, r in enumerate(rows):
        for key in ("retriever", "metric"):
            if not isinstance(r[key], str):
                return f"rows[{i}].{key}: must be text, got {type(r[key]).__name__}"
        if r.get("verdict") is not None and not isinstance(r.get("verdict"), str):
            return f"rows[{i}].verdict: must be text, got {type(r['verdict']).__name__}"
    return _field_types(obj)


#: Optional fields of a night and the types a reader relies on (a hand-edited night of another type is
#: refused naming the line and field, not met later as an ``AttributeError``).
_OPTIONAL_TYPES: dict[str, tuple[type, ...]] = {
    "dataset": (dict,),
    "problems": (list,),
    "error": (str,),
    "commit": (str,),
    "dirty": (bool,),
    "exit_code": (int,),
}


def _field_types(obj: dict[str, Any]) -> str | None:
    for key, types in _OPTIONAL_TYPES.items():
        value = obj.get(key)
        if value is not None and not isinstance(value, types):
            return f"{key}: must be {' or '.join(t.__name__ for t in types)}, got {type(value).__name__}"
    if not all(isinstance(x, str) for x in obj.get("problems") or []):
        return "problems: must be a list of text"
    name = (obj.get("dataset") or {}).get("name")
    if name is not None and not isinstance(name, str):
        return f"dataset.name: must be text, got {type(name).__name__}"
    return None
