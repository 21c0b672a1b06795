"""``harness nuggets assign``: every passage of a results folder's top k that has no nugget assignment
yet, assigned by a judge and appended to a nuggetizer assignments file (docs/nuggets.md).

The judge is an OpenAI-compatible endpoint asked nuggetizer's assignment prompt (``--judge http``:
:class:`HttpAssigner`, through the one endpoint client and fan-out ``judge auto`` uses), or a team's
class (``--judge module:Class``, built with the ``--judge-option KEY=VALUE`` pairs): a ``name`` (str,
the identity its cached answers are kept under) and ``assign(query, nuggets, passage) -> list[str]``,
one label per nugget text (``support``, ``partial_support``, ``not_support``), in order; optional
``concurrency`` (default 1: a team's class need not be thread-safe) and ``close()``.

The file is nuggetizer's own (``assign --input-kind retrieval``): a record is appended, and flushed,
as each passage's labels arrive, so a killed run loses only the passages in flight; every answer is
also kept in the reply cache (``<cache>/nuggets/replies.jsonl``, hashes only) under the judge's
identity, the query, the nugget texts and the passage's hash. The same command again asks only for
what is in neither; a passage already in the file (whoever assessed it: a judge, a person, nuggetizer
itself) is never asked nor rewritten. Asking is costed as ``judge auto`` costs it (requests, tokens,
``--price-in/--price-out``).
"""

from __future__ import annotations

import ast
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.endpoint.client import Answer, ChatClient
from harness.endpoint.fanout import ReplyCache, Tally, ask_many, reply_key
from harness.endpoint.settings import AskOptions
from harness.errors import InputError
from harness.imports import NoAttribute, import_target
from harness.io.append_log import sha256_text
from harness.judging import umbrela
from harness.metrics.nuggets import LEVELS
from harness.nuggets.files import NuggetRecord, assignment_record, dumps, read_assignments, read_nuggets

log = logging.getLogger("harness")

#: names the prompt below; part of every cache key and of the judge's name: change it with the text
PROMPT_VERSION = "nuggetizer-assign-3grade-1"
#: nuggetizer asks about at most this many nuggets in one prompt (its ``assigner_window_size``)
WINDOW = 10
#: nuggetizer's assigner prompt (castorini/nuggetizer, Apache-2.0; models/nuggetizer.py, 3-grade mode),
#: word for word; its system message goes first in the one user message the client sends
SYSTEM = (
    "You are NuggetizeAssignerLLM, an intelligent assistant that can label a list of atomic nuggets based on if "
    "they are captured by a given passage."
)
INSTRUCTION = (
    "Based on the query and passage, label each of the {n} nuggets either as support, partial_support, or "
    "not_support using the following criteria. A nugget that is fully captured in the passage should be labeled "
    "as support. A nugget that is partially captured in the passage should be labeled as partial_support. If the "
    "nugget is not captured at all, label it as not_support. Return the list of labels in a Pythonic list format "
    "(type: List[str]). The list should be in the same order as the input nuggets. Make sure to provide a label "
    "for each nugget."
)
LABELS = ("support", "partial_support", "not_support")


def prompt(query: str, passage: str, texts: Sequence[str]) -> str:
    """One window's message: nuggetizer's system line, then its user prompt (the nugget list as
    Python writes a list, as nuggetizer's f-string does)."""
    return (
        f"{SYSTEM}\n\n{INSTRUCTION.replace('{n}', str(len(texts)))}\n\n"
        f"Search Query: {query}\nPassage: {passage}\nNugget List: {list(texts)}\n"
        "Only return the list of labels (List[str]). Do not explain.\nLabels:"
    )


def parse_labels(reply: str, n: int) -> list[str] | None:
    """The labels of a reply: one Python/JSON list literal of ``n`` labels (lower-cased, as nuggetizer
    reads them); None for anything else (asked again, then left unassigned)."""
    text = reply.strip()
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start or end - start > 100_000:
        return None
    try:
        value = ast.literal_eval(text[start : end + 1])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or len(value) != n or not all(isinstance(v, str) for v in value):
        return None
    labels = [v.strip().lower() for v in value]
    return labels if all(v in LABELS for v in labels) else None


@dataclass(frozen=True)
class Item:
    """One passage to assign: its query's nuggets and the text the judge reads."""

    qid: str
    docid: str
    query: str
    passage: str
    texts: tuple[str, ...]


class HttpAssigner:
    """nuggetizer's prompt through an OpenAI-compatible endpoint, in windows of :data:`WINDOW`
    nuggets, one passage per batch, the client's ``concurrency`` at a time."""

    def __init__(self, client: ChatClient) -> None:
        self.client, self.concurrency = client, client.concurrency
        self.name = (
            f"llm:{client.model}:{PROMPT_VERSION}@{client.public};temperature={client.temperature:g};"
            f"max_tokens={client.max_tokens}"
        )

    def cache_identity(self) -> list:
        return self.client.identity(PROMPT_VERSION)

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def outcome(self, item: Item, stop: threading.Event | None = None) -> Answer:
        """The passage's labels (every window's, in order) with what asking cost; no value when a
        window never parsed."""
        total = Answer(value=[])
        for s in range(0, len(item.texts), WINDOW):
            window = item.texts[s : s + WINDOW]
            read = functools.partial(parse_labels, n=len(window))
            o, _ = self.client.ask(prompt(item.query, item.passage, window), read, stop)
            total.requests += o.requests
            total.tokens_in += o.tokens_in
            total.tokens_out += o.tokens_out
            total.usage_refused += o.usage_refused
            if o.value is None:
                total.value, total.failure = None, o.failure
                return total
            total.value.extend(o.value)
        return total

    def close(self) -> None:
        self.client.close()


class TeamAssigner:
    """A team's class (``assign(query, nuggets, passage) -> list[str]``) behind the same interface."""

    def __init__(self, inner: Any, choice: str) -> None:
        name = getattr(inner, "name", None)
        if not callable(getattr(inner, "assign", None)):
            raise InputError(
                f"{choice!r} is not an assigner: it needs `assign(query, nuggets, passage)`", field="--judge"
            )
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{choice!r}: its `name` must be a non-empty str, not {name!r}", field="--judge")
        self.inner, self.name = inner, name
        self.concurrency = max(1, int(getattr(inner, "concurrency", 1)))

    def cache_identity(self) -> list:
        return [self.name, PROMPT_VERSION]

    def outcome(self, item: Item, stop: threading.Event | None = None) -> Answer:
        labels = list(self.inner.assign(item.query, list(item.texts), item.passage))
        if len(labels) != len(item.texts) or not all(isinstance(x, str) and x in LEVELS for x in labels):
            raise InputError(
                f"assigner {self.name!r}: assign() must return one label ({', '.join(LABELS)}) per nugget; it "
                f"returned {labels[:5]!r} for {len(item.texts)} nuggets"
            )
        return Answer(labels, None, 1)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


@dataclass(kw_only=True)
class AssignOptions(AskOptions):
    """``harness nuggets assign``'s flags (by name: the command builds it from its flags)."""

    #: nuggetizer's nuggets JSONL
    nuggets: str
    #: the results folder whose stored runs' top ``depth`` passages are assigned
    results: str
    depth: int = 10
    #: the assignments JSONL written (or added to: its records are kept)
    out: str
    #: ``http`` or ``module:Class``
    judge: str
    allow_incomplete: bool = False
    show_progress: bool | None = None


@dataclass
class AssignReport:
    """What an assignment run did."""

    out: Path
    judge: str
    tally: Tally
    already: int = 0
    endpoint: bool = False
    cost_usd: float | None = None
    seconds: float = 0.0

    def lines(self) -> list[str]:
        t = self.tally
        head = (
            f"{self.out}: {t.answered} of {t.items} passages assigned by {self.judge} ({t.from_cache} from the "
            f"cache; {self.already} assessed before), {t.unparsable} unassigned (no readable labels), {t.failed} failed"
        )
        if self.endpoint:
            cost = "" if self.cost_usd is None else f", cost ${self.cost_usd:.4f}"
            head += f", {t.retried} retried; {t.spent()}{cost}"
        head += f" ({self.seconds:.1f} s)"
        return [head, *(f"  failed {n}: {why}" for why, n in sorted(t.failures.items()))]

    def raise_if_cut(self) -> None:
        t = self.tally
        if t.stopped:
            raise InputError(f"stopped: {t.stopped}; the {t.answered} passages assigned are in {self.out}")
        if t.interrupted:
            raise KeyboardInterrupt(f"{t.answered} passages are in {self.out}; the same command assigns the rest")


def make_assigner(opts: AssignOptions) -> Any:
    """``--judge http`` (needs ``--model`` and ``--url``; checked here, before anything is read) or
    ``--judge module:Class`` built with the ``--judge-option`` pairs."""
    if opts.judge == "http":
        if not opts.model:
            raise InputError("--judge http needs --model (the model name to ask for)", field="--model")
        return HttpAssigner(opts.endpoint.check("--judge http").client(opts.model))
    if ":" not in opts.judge:
        raise InputError(f"unknown judge {opts.judge!r}; give http or module:Class", field="--judge")
    try:
        cls = import_target(opts.judge)
    except ImportError as e:
        raise InputError(
            f"judge {opts.judge!r}: cannot import {e.name or opts.judge!r} ({e})", field="--judge"
        ) from None
    except (NoAttribute, ValueError) as e:
        raise InputError(f"judge {opts.judge!r}: {e}", field="--judge") from None
    try:
        inner = cls(**opts.judge_options)
    except TypeError as e:
        raise InputError(f"judge {opts.judge!r} does not take these options: {e}", field="--judge-option") from None
    return TeamAssigner(inner, opts.judge)


def check_out(out: str | os.PathLike[str], nuggets: dict[str, NuggetRecord]) -> tuple[Path, set[tuple[str, str]]]:
    """The output: new, or an assignments file of these nuggets (read and checked; its passages are
    kept and not asked again). A record a killed run left half-written at the end is cut off."""
    p = Path(out)
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError("the assignments file must end in .jsonl (nuggetizer's JSONL)", field="--out")
    if not p.exists():
        return p, set()
    _cut_torn_tail(p)
    return p, set(read_assignments(p, nuggets))


def _cut_torn_tail(p: Path) -> None:
    data = p.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    import json

    try:
        json.loads(data[keep:])
    except ValueError:
        log.warning("%s: the last line is a record cut short (a run killed while writing it): dropped", p)
        with p.open("r+b") as fh:
            fh.truncate(keep)
        return
    with p.open("ab") as fh:  # a whole record without its newline: the next one goes on its own line
        fh.write(b"\n")


def items_to_assign(
    nuggets: dict[str, NuggetRecord], done: set[tuple[str, str]], results: str, depth: int, *, allow_incomplete: bool
) -> list[Item]:
    """Every passage of any run's top ``depth`` (the stored runs of ``results``) of a query with
    nuggets that ``done`` does not hold, in the pool's order (query, best rank), with the text a
    judge reads (from the dataset the folder records)."""
    from harness.judging.pool import _dataset, _named_runs, pooled
    from harness.results import Results
    from harness.results.store import read_runs

    res = Results.open(results, allow_incomplete=allow_incomplete)
    runs = _named_runs([res], read_runs)
    assessed: dict[str, dict[str, int]] = {q: {} for q, rec in nuggets.items() if rec.nuggets}
    for q, d in done:
        if q in assessed:
            assessed[q][d] = 0
    rows = pooled(runs, assessed, depth)
    if not rows:
        return []
    ds = _dataset(res)
    corpus = {d.id: d for d in ds.corpus}
    out, textless = [], []
    for q, d, _, _ in rows:
        doc = corpus.get(d)
        if doc is None or not (doc.title.strip() or doc.text.strip()):
            textless.append(d)  # nothing for a judge to read: never asked, left unassessed
            continue
        rec = nuggets[q]
        out.append(Item(q, d, rec.query, umbrela.passage(doc.title, doc.text), tuple(n.text for n in rec.nuggets)))
    if textless:
        log.warning(
            "%d passages of the top %d have no text in the dataset (e.g. %s): not asked, left unassessed",
            len(textless), depth, ", ".join(map(repr, textless[:3])),
        )  # fmt: skip
    return out


def _read_cached(rec: dict[str, Any]) -> list[str] | None:
    labels = rec.get("labels")
    return labels if isinstance(labels, list) and all(isinstance(x, str) and x in LEVELS for x in labels) else None


def _record(labels: list[str], o: Answer) -> dict[str, Any]:
    return {"labels": labels, "tokens_in": o.tokens_in, "tokens_out": o.tokens_out}


def assign(opts: AssignOptions, *, progress: Any = None, clock: Callable[[], float] = time.monotonic) -> AssignReport:
    """``harness nuggets assign``: the judge, the nuggets, the output and the folder checked (in that
    order, nothing asked yet), then every missing passage asked and appended as it arrives."""
    from harness.paths import cache_dir_of

    start = clock()
    if opts.depth < 1:
        raise InputError("must be at least 1", field="--depth")
    for flag, price in (("--price-in", opts.price_in), ("--price-out", opts.price_out)):
        if price is not None and not price >= 0:
            raise InputError("must be a price >= 0 (USD per 1M tokens)", field=flag)
    judge = make_assigner(opts)
    nuggets = read_nuggets(opts.nuggets)
    out, done = check_out(opts.out, nuggets)
    items = items_to_assign(nuggets, done, opts.results, opts.depth, allow_incomplete=opts.allow_incomplete)
    identity = judge.cache_identity()
    cache: ReplyCache[list[str]] = ReplyCache(
        cache_dir_of(None) / "nuggets" / "replies.jsonl", identity, _read_cached, _record
    )
    keys = [reply_key(identity, it.query, list(it.texts), sha256_text(it.passage)) for it in items]
    tally = Tally(items=len(items))
    sent_before = getattr(judge, "requests_sent", None)
    lock = threading.Lock()

    with out.open("a", encoding="utf-8") as fh:

        def on_reply(i: int, o: Answer) -> None:
            it = items[i]
            if o.value is None or len(o.value) != len(it.texts):
                return
            rec = assignment_record(nuggets[it.qid], it.docid, it.passage, o.value)
            with lock:
                fh.write(dumps(rec.to_json()))  # nuggetizer's line, flushed: a kill keeps it
                fh.flush()

        def ask(batch: list[Item], stop: threading.Event) -> list[Answer]:
            return [judge.outcome(it, stop) for it in batch]

        try:
            ask_many(
                items, ask, on_reply, tally=tally, cache=cache, keys=keys, batch=1,
                concurrency=max(1, int(getattr(judge, "concurrency", 1))), progress=progress,
                phase="assigning nuggets to {n} passages",
            )  # fmt: skip
        finally:
            close = getattr(judge, "close", None)
            if callable(close):
                close()
    if sent_before is not None:
        tally.requests = judge.requests_sent - sent_before
    if tally.stopped or tally.interrupted:
        tally.failed = tally.items - tally.answered - tally.unparsable
    report = AssignReport(out, judge.name, tally, already=len(done), endpoint=sent_before is not None)
    report.cost_usd = tally.cost(opts.price_in, opts.price_out)
    report.seconds = clock() - start
    return report
