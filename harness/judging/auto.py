"""``harness judge auto POOL --judge http|cross-encoder --out grades.csv``: a pool filled by a judge.

The output is the pool file format (``harness judge merge`` takes it) with two more columns:
``judge``, naming who gave each grade with the settings that decide it (model, prompt version,
endpoint without credentials, temperature, max_tokens), and ``judge_key``, the hash of those and of
the query text and the document text the grade was given for (an ungraded row leaves all three
empty). Every row of the pool is graded, already-graded ones too: agreement with people is measured
on the same pairs.

For an endpoint, every reply with a grade is cached (:class:`ReplyCache`, under the same key), and
the output is rewritten atomically every few seconds and at the end: a re-run sends requests only
for the pairs still ungraded, and Ctrl-C keeps every grade received. An earlier output's grade, or a
cached one, is used again only when its key is the one the pair has now: a changed temperature, a
changed document text, another model or URL asks again.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io.append_log import AppendLog, sha256_text
from harness.judging import umbrela
from harness.judging.pool import COLUMNS, PoolRow, file_format, read_pool, write_pool

log = logging.getLogger("harness")

#: the output's columns: the pool's, then who graded the row and the key of what was graded
AUTO_COLUMNS = (*COLUMNS, "judge", "judge_key")
#: how the ``judge`` cell of a grade an automatic judge gave starts
JUDGES = ("llm:", "cross-encoder:")
#: seconds between two rewrites of the output while grading
SAVE_EVERY = 5.0


@dataclass
class Summary:
    pairs: int = 0
    graded: int = 0
    from_cache: int = 0
    ungraded: int = 0  # replies never held a readable grade
    failed: int = 0  # no usable reply (timeouts, errors, cut replies) after the retries
    retried: int = 0  # pairs that needed more than one request
    requests: int = 0  # requests sent, those of a pair cut short by a stop or Ctrl-C included
    tokens_in: int = 0
    tokens_out: int = 0
    usage_refused: int = 0  # replies whose token counts were not believable: neither counted nor priced
    cost_usd: float | None = None
    seconds: float = 0.0
    interrupted: bool = False
    stopped: str | None = None
    failures: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        cost = "" if self.cost_usd is None else f", cost ${self.cost_usd:.4f}"
        refused = (
            f" ({self.usage_refused} replies' usage refused as not believable: not counted"
            + (", the cost is a lower bound)" if self.cost_usd is not None else ")")
            if self.usage_refused
            else ""
        )
        return (
            f"{self.graded} of {self.pairs} pairs graded ({self.from_cache} from earlier runs), {self.ungraded} "
            f"ungraded (no readable grade), {self.failed} failed, {self.retried} retried; {self.requests} "
            f"requests, {self.tokens_in} tokens in, {self.tokens_out} out{cost}{refused}"
        )


# ----------------------------------------------------------------------------- output file


def check_out(out: str | os.PathLike[str]) -> Path:
    """``out`` must be new, or a file an earlier ``judge auto`` wrote (its grades are kept)."""
    p = Path(out)
    if p.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("the grade file must end in .csv or .jsonl", field="--out")
    if p.exists() and not _is_auto_file(p):
        raise InputError("exists and was not written by `harness judge auto`; choose a new file", path=p, field="--out")
    if p.exists():
        theirs = [
            r for r in read_pool(p) if r.grade is not None and not str(r.extra.get("judge") or "").startswith(JUDGES)
        ]
        if theirs:  # graded on the page (`person`) or typed in: rewriting the file would erase them
            raise InputError(
                f"holds {len(theirs)} grade(s) no judge gave (made on the `judge serve` page or typed in, e.g. "
                f"query {theirs[0].query_id!r}, doc {theirs[0].doc_id!r}); they are never overwritten: choose a "
                "new file",
                path=p,
                field="--out",
            )
    return p


def _is_auto_file(p: Path) -> bool:
    try:
        with p.open(encoding="utf-8-sig") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return False
    if file_format(p) == "jsonl":
        try:
            rec = json.loads(first)
        except (ValueError, TypeError):
            return False
        return isinstance(rec, dict) and "judge" in rec
    names = next(csv.reader([first]), [])
    return all(c in names for c in COLUMNS) and "judge" in names  # this version's, an older one's, served


def earlier_grades(out: Path, judge: str) -> dict[tuple[str, str], tuple[int, str]]:
    """The grades ``judge`` gave in an earlier run's output, with the key each was given under
    (another judge's, a person's and a keyless row's are not reused)."""
    if not out.exists():
        return {}
    keep: dict[tuple[str, str], tuple[int, str]] = {}
    for r in read_pool(out):
        key = r.extra.get("judge_key")
        if r.grade is not None and r.extra.get("judge") == judge and isinstance(key, str) and key:
            keep[r.query_id, r.doc_id] = (r.grade, key)
    return keep


def write_auto(
    path: Path, rows: Sequence[PoolRow], judges: Sequence[str | None], keys: Sequence[str | None] | None = None
) -> Path:
    """The pool rows with their grades, ``judge`` and ``judge_key`` (empty on an ungraded row), and
    every other column the pool has, written atomically as a pool file."""
    for i, (r, j) in enumerate(zip(rows, judges)):
        graded = r.grade is not None and bool(j)
        r.extra["judge"] = j if graded else None
        r.extra["judge_key"] = (keys[i] if keys is not None else None) if graded else None
    return write_pool(path, rows)


# ----------------------------------------------------------------------------- reply cache


def pair_key(identity: list, query: str, title: str, text: str) -> str:
    """The key of one pair's grade: sha256 of the judge's identity (URL without credentials, model,
    temperature, max_tokens, prompt version), the query text and sha256 of the document text. Two
    grades with one key were asked the same question; any other difference asks again."""
    doc = sha256_text(umbrela.passage(title, text))
    return sha256_text(json.dumps([*identity, query, doc], ensure_ascii=False))


def _grade(rec: dict[str, Any]) -> int | None:
    g = rec["grade"]
    return g if isinstance(g, int) and 0 <= g <= 3 else None


class ReplyCache:
    """Grades an endpoint gave (:class:`~harness.io.append_log.AppendLog`: one JSON line per reply,
    appended as they come, a killed run keeps them). Keys are hashes: no text, URL or key is stored."""

    def __init__(self, path: Path, identity: list) -> None:
        self.path, self.identity = path, identity
        self._log: AppendLog[int] = AppendLog(path, _grade)

    def key(self, query: str, title: str, text: str) -> str:
        return pair_key(self.identity, query, title, text)

    def get(self, key: str) -> int | None:
        return self._log.get(key)

    def put(self, key: str, grade: int, tokens_in: int, tokens_out: int) -> None:
        self._log.append(key, grade, {"grade": grade, "tokens_in": tokens_in, "tokens_out": tokens_out})


# ----------------------------------------------------------------------------- the fill loop


def fill_http(
    rows: list[PoolRow],
    judge: Any,
    out: Path,
    *,
    cache: ReplyCache | None,
    concurrency: int = 4,
    progress: Any = None,
    price_in: float | None = None,
    price_out: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Summary:
    """Grade every row through ``judge`` (:class:`~harness.judging.llm.HttpJudge`), at most
    ``concurrency`` requests at a time; the output is saved every :data:`SAVE_EVERY` seconds, at the
    end, and on Ctrl-C or a stop (whose reason is in ``Summary.stopped``)."""
    from harness.judging.llm import JudgeStopped

    start = clock()
    s = Summary(pairs=len(rows))
    name = judge.name
    sent_before = getattr(judge, "requests_sent", None)
    judges: list[str | None] = [None] * len(rows)
    earlier = earlier_grades(out, name) if out.exists() else {}
    todo: list[int] = []
    identity = judge.cache_identity()
    keys: list[str | None] = [pair_key(identity, r.query, r.title, r.text) for r in rows]
    for i, r in enumerate(rows):
        r.grade = None
        g, key = earlier.get((r.query_id, r.doc_id), (None, None))
        if key != keys[i]:  # graded under other settings, or for another text: asked again
            g = None
        if g is None and cache is not None:
            g = cache.get(keys[i])
        if g is not None:
            r.grade, judges[i] = g, name
            s.graded += 1
            s.from_cache += 1
        else:
            todo.append(i)
    log.info("%s: %d of %d pairs to grade (%d graded by earlier runs)", name, len(todo), len(rows), s.from_cache)
    if progress is not None:
        progress.phase(f"grading {len(todo)} pairs", len(todo))
    stop = threading.Event()
    last_save = clock()
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
    pending: dict[Future, int] = {}
    it = iter(todo)

    def submit() -> None:
        while len(pending) < concurrency * 2 and not stop.is_set():
            i = next(it, None)
            if i is None:
                return
            r = rows[i]
            pending[pool.submit(judge.grade, r.query, r.title, r.text, stop)] = i

    try:
        submit()
        while pending:
            done, _ = wait(list(pending), timeout=1.0, return_when=FIRST_COMPLETED)
            for f in done:
                i = pending.pop(f)
                try:
                    o = f.result()
                except JudgeStopped as e:
                    if s.stopped is None:
                        s.stopped = str(e)
                    s.requests += e.requests
                    stop.set()
                    continue
                s.requests += o.requests
                s.tokens_in += o.tokens_in
                s.tokens_out += o.tokens_out
                s.usage_refused += getattr(o, "usage_refused", 0)
                s.retried += o.requests > 1
                if o.grade is not None:
                    rows[i].grade, judges[i] = o.grade, name
                    s.graded += 1
                    if cache is not None and keys[i] is not None:
                        cache.put(keys[i], o.grade, o.tokens_in, o.tokens_out)
                elif o.failure == "unparsable":
                    s.ungraded += 1
                else:
                    s.failed += 1
                    why = (o.failure or "failed").removeprefix("failed: ")
                    s.failures[why] = s.failures.get(why, 0) + 1
                if progress is not None:
                    progress.advance(1)
            if clock() - last_save >= SAVE_EVERY:
                write_auto(out, rows, judges, keys)
                last_save = clock()
            submit()
    except KeyboardInterrupt:
        s.interrupted = True
        stop.set()
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        judge.close()
        write_auto(out, rows, judges, keys)
    if sent_before is not None:  # every request sent, those of pairs cut short by a stop included
        s.requests = judge.requests_sent - sent_before
    if s.stopped or s.interrupted:  # pairs never asked count as failed, so the counts add up
        s.failed = s.pairs - s.graded - s.ungraded
    if price_in is not None or price_out is not None:
        s.cost_usd = (s.tokens_in * (price_in or 0.0) + s.tokens_out * (price_out or 0.0)) / 1e6
    s.seconds = clock() - start
    return s
