"""``harness judge auto POOL --judge NAME|module:Class --out grades.csv``: a pool filled by a judge
(:class:`~harness.judging.judge.Judge`: the built-in ``http`` and ``cross-encoder``, a plugin, or a
team's own class), through one fill loop (:func:`fill`).

The output is the pool file format (``harness judge merge`` takes it) with two more columns:
``judge``, the judge's ``name`` (who gave each grade with the settings that decide it: for an
endpoint the model, prompt version, endpoint without credentials, temperature, max_tokens), and
``judge_key``, the hash of the judge's identity and of the query text and the document text the
grade was given for (an ungraded row leaves all three empty). Every row of the pool is graded,
already-graded ones too: agreement with people is measured on the same pairs.

Every grade is cached as it arrives (:class:`~harness.endpoint.fanout.ReplyCache`, under the same
key), and the output is rewritten atomically every few seconds and at the end: a re-run asks only for
the pairs still ungraded, and Ctrl-C keeps every grade received. An earlier output's grade, or a
cached one, is used again only when its key is the one the pair has now: a changed temperature, a
changed document text, another model, URL or judge name asks again. A judge whose
``cache_identity()`` is None (the cross-encoder) is neither cached nor resumed.
"""

from __future__ import annotations

import csv
import json
import logging
import numbers
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.endpoint.client import Answer
from harness.endpoint.fanout import ReplyCache, Tally, ask_many, reply_key
from harness.endpoint.settings import AskOptions
from harness.engine.schedule import describe
from harness.errors import InputError
from harness.io import staged
from harness.io.append_log import sha256_text
from harness.judging import probabilities, umbrela
from harness.judging.judge import BUILTIN_PREFIXES, Judge, Pair, check_judge, judge_class, make_judge, whole
from harness.judging.pool import COLUMNS, PoolRow, file_format, read_pool, write_pool
from harness.protocol import Batched, CacheIdentity, Closeable, Concurrent, GradesWithCost

log = logging.getLogger("harness")

#: the output's columns: the pool's, then who graded the row and the key of what was graded
AUTO_COLUMNS = (*COLUMNS, "judge", "judge_key")
#: how the ``judge`` cell of a grade a built-in judge gave starts
JUDGES = BUILTIN_PREFIXES
#: seconds between two rewrites of the output while grading
SAVE_EVERY = 5.0
#: built-in judges that need an extra (``harness.extras``), named before any work
EXTRAS = {"cross-encoder": "rerank"}


@dataclass
class AutoOptions(AskOptions):
    """``judge auto``'s flags: the pool, the output, the judge and its settings (the model, endpoint,
    prices and a team class's options are every asking command's: :class:`AskOptions`)."""

    pool: str
    out: str
    judge: str
    probabilities: bool = False  # p_0..p_3 beside each grade (harness.judging.probabilities)
    thresholds: str | None = None
    calibrate: str | None = None
    show_progress: bool | None = None
    votes: int | None = None  # http without logprobs: the vote shares of K replies
    export_lara: str | None = None  # LARA's CSV of the grades and probabilities


@dataclass
class FillReport:
    """What a fill did: the tally of pairs, where the grades are, who gave them, how long it took."""

    out: Path
    judge: str
    tally: Tally
    endpoint: bool = False  # an endpoint was asked: requests and tokens are worth a line
    cost_usd: float | None = None
    seconds: float = 0.0
    grades: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # how many of each grade 0-3
    notes: list[str] = field(default_factory=list)  # more lines to print (where the probabilities came from)

    def line(self) -> str:
        t = self.tally
        by = "" if self.endpoint else f" by {self.judge}"
        head = (
            f"{t.answered} of {t.items} pairs graded{by} ({t.from_cache} from earlier runs), {t.unparsable} "
            f"ungraded (no readable grade), {t.failed} failed"
        )
        if not self.endpoint:
            return f"{head} (grades 0-3: {', '.join(map(str, self.grades))})"
        cost = "" if self.cost_usd is None else f", cost ${self.cost_usd:.4f}"
        refused = (
            f" ({t.usage_refused} replies' usage refused as not believable: not counted"
            + (", the cost is a lower bound)" if self.cost_usd is not None else ")")
            if t.usage_refused
            else ""
        )
        return f"{head}, {t.retried} retried; {t.spent()}{cost}{refused}"

    def lines(self) -> list[str]:
        """The summary line and one line per kind of failure (what ``judge auto`` prints)."""
        head = f"{self.out}: {self.line()} ({self.seconds:.1f} s)"
        return [head, *(f"  failed {n}: {why}" for why, n in sorted(self.tally.failures.items())), *self.notes]

    def raise_if_cut(self) -> None:
        """Exit 2 for a stopped endpoint, 130 for Ctrl-C, each saying where the grades are."""
        t = self.tally
        if t.stopped:
            raise InputError(f"stopped: {t.stopped}; the {t.answered} grades received are in {self.out}")
        if t.interrupted:  # the usual Ctrl-C exit (130), saying where the grades are
            raise KeyboardInterrupt(f"{t.answered} grades are in {self.out}; the same command grades the rest")


def auto(opts: AutoOptions, stream: Any = None) -> FillReport:
    """``harness judge auto``: everything checked (the judge's extra, the output, the prices, the
    pool, the judge itself), then every pair graded through :func:`fill`."""
    from harness import extras
    from harness import progress as progress_mod
    from harness.paths import cache_dir_of

    if opts.judge in EXTRAS:
        missing = extras.unmet([extras.Need(f"judge auto --judge {opts.judge}", EXTRAS[opts.judge])])
        if missing:
            raise InputError(extras.message(missing))
    cls = judge_class(opts.judge)
    out = check_out(opts.out)
    if opts.votes is not None and opts.judge != "http":
        raise InputError("only --judge http takes --votes (the vote shares of K replies)", field="--votes")
    for flag, price in (("--price-in", opts.price_in), ("--price-out", opts.price_out)):
        if price is not None and not price >= 0:
            raise InputError("must be a price >= 0 (USD per 1M tokens)", field=flag)
    build = getattr(cls, "from_options", None)
    if build is not None and opts.judge_options:
        raise InputError(f"the {opts.judge} judge takes its flags, not --judge-option", field="--judge-option")
    # the endpoint's flags and key, the cross-encoder's thresholds: refused before the pool is read
    judge = check_judge(build(opts), opts.judge) if build is not None else make_judge(opts.judge, opts.judge_options)
    source = probabilities.check_capable(judge, opts.judge) if opts.probabilities else None
    lara = probabilities.check_lara(opts.export_lara, opts.probabilities)
    check_theirs(out, judge.name)
    rows = read_pool(opts.pool)
    if not rows:
        raise InputError("the pool is empty: nothing to grade", path=opts.pool)
    cache = auto_cache(cache_dir_of(None), judge)
    if source is not None:  # asked first: probabilities that are not a distribution stop before any output
        identity = judge_identity(judge)
        keys = [None if identity is None else pair_key(identity, r.query, r.title, r.text) for r in rows]
        p_cache = probabilities.probability_cache(cache_dir_of(None), identity, source)
        probabilities.set_columns(rows, probabilities.gather(rows, judge, keys, p_cache))
    with progress_mod.session(stream or sys.stderr, enabled=opts.show_progress) as bar:
        report = fill(rows, judge, out, cache=cache, progress=bar)
    asked = getattr(judge, "probability_usage", None)  # the probability pass's requests and tokens count too
    if asked is not None:
        t = report.tally
        t.requests += asked.requests
        t.tokens_in += asked.tokens_in
        t.tokens_out += asked.tokens_out
        t.usage_refused += asked.usage_refused
    report.cost_usd = report.tally.cost(opts.price_in, opts.price_out)
    if source is not None:
        report.notes.append(f"  probabilities p_0..p_3 beside each grade, from {source}")
    if lara is not None:
        report.notes.append(f"  LARA's CSV: {probabilities.export_lara(rows, lara)} rows written to {lara}")
    return report


# ----------------------------------------------------------------------------- output file


def check_out(out: str | os.PathLike[str]) -> Path:
    """``out`` must be new, or a file an earlier ``judge auto`` wrote (its grades are kept)."""
    p = Path(out)
    if p.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("the grade file must end in .csv or .jsonl", field="--out")
    theirs = "exists and was not written by `harness judge auto`; choose a new file"
    return staged.check_out(p, "owned", file=True, owned_by=_is_auto_file, not_ours=theirs)


def check_theirs(p: Path, judge: str) -> None:
    """Refuse an output holding grades neither a built-in judge nor ``judge`` gave: rewriting it
    would erase them."""
    if p.exists():
        theirs = [
            r for r in read_pool(p)
            if r.grade is not None and not _judged(str(r.extra.get("judge") or ""), judge)
        ]  # fmt: skip
        if theirs:  # graded on the page (`person`) or typed in: rewriting the file would erase them
            raise InputError(
                f"holds {len(theirs)} grade(s) no judge gave (made on the `judge serve` page or typed in, e.g. "
                f"query {theirs[0].query_id!r}, doc {theirs[0].doc_id!r}); they are never overwritten: choose a "
                "new file",
                path=p,
                field="--out",
            )


def _judged(cell: str, judge: str) -> bool:
    return cell.startswith(JUDGES) or cell == judge


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


# ----------------------------------------------------------------------------- the fill loop


def pair_key(identity: Sequence[Any], query: str, title: str, text: str) -> str:
    """The key of one pair's grade: sha256 of the judge's identity (for an endpoint: URL without
    credentials, model, temperature, max_tokens, prompt version; otherwise its name), the query text
    and sha256 of the document text. Two grades with one key were asked the same question."""
    return reply_key(identity, query, sha256_text(umbrela.passage(title, text)))


def judge_identity(judge: Any) -> list | None:
    """What, beside the pair, decides a judge's grade: its ``cache_identity()`` where it has one
    (None: never cached nor resumed), otherwise its name."""
    return judge.cache_identity() if isinstance(judge, CacheIdentity) else [judge.name]


def auto_cache(cache_dir: Path, judge: Any) -> ReplyCache | None:
    """The grades ``judge`` gave, kept in ``<cache>/judge/replies.jsonl`` under their keys (hashes
    only: no text, URL or key); None for a judge that is never cached."""
    identity = judge_identity(judge)
    return None if identity is None else ReplyCache(cache_dir / "judge" / "replies.jsonl", identity, _grade, _record)


def _grade(rec: dict[str, Any]) -> int | None:
    """A grade 0-3 as a Python int: an int or a numpy integer (what ``np.argmax`` gives), never a bool
    or a float (2.0 is refused: a judge that returns floats may return 2.5 too)."""
    g = rec["grade"]
    if isinstance(g, (bool, np.bool_)) or not isinstance(g, numbers.Integral):
        return None
    return int(g) if 0 <= g <= 3 else None


def _record(grade: int, o: Answer) -> dict[str, Any]:
    return {"grade": grade, "tokens_in": o.tokens_in, "tokens_out": o.tokens_out}


def _asker(judge: Any) -> Callable[[list[Pair], threading.Event], list[Answer]]:
    """How the fill loop asks ``judge`` about a batch: its ``outcomes`` (an endpoint: grades with what
    they cost, a stop raised) or its ``grade``, each answer checked to be a grade 0-3 or None."""
    if isinstance(judge, GradesWithCost):
        return judge.outcomes  # type: ignore[return-value]

    def ask(pairs: list[Pair], stop: threading.Event) -> list[Answer]:
        try:
            got = judge.grade(pairs)
            grades = None if got is None or isinstance(got, (str, bytes)) or not hasattr(got, "__iter__") else list(got)
        except KeyboardInterrupt:
            raise  # Ctrl-C: the grades so far are written, the same command grades the rest
        except BaseException as e:  # the team's code (sys.exit too): one line naming the judge and the call
            raise InputError(f"judge {judge.name!r}: grade() raised {describe(e, 'the judge')}") from None
        checked = None if grades is None else [None if g is None else _grade({"grade": g}) for g in grades]
        if checked is None or len(checked) != len(pairs) or any(c is None and g is not None
                                                                 for c, g in zip(checked, grades)):  # fmt: skip
            shown = f"{grades[:5]!r}" if grades is not None else f"a {type(got).__name__} ({got!r:.60})"
            shown = "None" if got is None else shown
            more = "..." if grades is not None and len(grades) > 5 else ""
            raise InputError(
                f"judge {judge.name!r}: grade() must return one grade (0-3 or None) per pair, each an int; it returned "
                f"{shown}{more} for {len(pairs)} pairs"
            )
        return [Answer(g, None if g is not None else "unparsable", int(i == 0)) for i, g in enumerate(checked)]

    return ask


def fill(
    rows: list[PoolRow],
    judge: Judge,
    out: Path,
    *,
    cache: ReplyCache | None,
    progress: Any = None,
    clock: Callable[[], float] = time.monotonic,
) -> FillReport:
    """Grade every row through ``judge``: earlier outputs' and cached grades under the pair's key are
    taken, the rest asked (:func:`~harness.endpoint.fanout.ask_many`, in the judge's ``batch_size``
    and ``concurrency``); the output is saved every :data:`SAVE_EVERY` seconds, at the end, and on
    Ctrl-C or a stop (in ``FillReport.tally``)."""
    start = clock()
    name = judge.name
    t = Tally(items=len(rows))
    sent_before = getattr(judge, "requests_sent", None)
    judges: list[str | None] = [None] * len(rows)
    identity = judge_identity(judge)
    keys: list[str | None] = [None] * len(rows)
    if identity is not None:
        keys = [pair_key(identity, r.query, r.title, r.text) for r in rows]
    earlier = earlier_grades(out, name) if identity is not None else {}
    todo: list[int] = []
    for i, r in enumerate(rows):
        r.grade = None
        g, key = earlier.get((r.query_id, r.doc_id), (None, None))
        if key != keys[i]:  # graded under other settings, or for another text: asked again
            g = None
        if g is None and cache is not None and keys[i] is not None:
            g = cache.get(keys[i])
        if g is not None:
            r.grade, judges[i] = g, name
            t.answered += 1
            t.from_cache += 1
        else:
            todo.append(i)
    log.info("%s: %d of %d pairs to grade (%d graded by earlier runs)", name, len(todo), len(rows), t.from_cache)
    pairs = [Pair(rows[i].query_id, rows[i].query, rows[i].doc_id, umbrela.passage(rows[i].title, rows[i].text))
             for i in todo]  # fmt: skip
    last_save = [clock()]

    def on_reply(j: int, o: Answer) -> None:
        if o.value is not None:
            i = todo[j]
            rows[i].grade, judges[i] = o.value, name

    def on_wait() -> None:
        if clock() - last_save[0] >= SAVE_EVERY:
            write_auto(out, rows, judges, keys)
            last_save[0] = clock()

    try:
        ask_many(
            pairs, _asker(judge), on_reply, tally=t, cache=cache, keys=[keys[i] for i in todo],
            batch=max(1, whole(judge.batch_size if isinstance(judge, Batched) else 32) or 1),
            concurrency=max(1, whole(judge.concurrency if isinstance(judge, Concurrent) else 1) or 1),
            progress=progress, on_wait=on_wait, phase="grading {n} pairs",
        )  # fmt: skip
    finally:
        try:
            if isinstance(judge, Closeable):
                judge.close()
        finally:  # every grade received is written, whatever close() did
            write_auto(out, rows, judges, keys)
    if sent_before is not None:  # every request sent, those of pairs cut short by a stop included
        t.requests = judge.requests_sent - sent_before  # type: ignore[attr-defined]
    if t.stopped or t.interrupted:  # pairs never asked count as failed, so the counts add up
        t.failed = t.items - t.answered - t.unparsable
    counts = [0, 0, 0, 0]
    for r in rows:
        if r.grade is not None:
            counts[r.grade] += 1
    return FillReport(out, name, t, endpoint=sent_before is not None, seconds=clock() - start, grades=counts)
