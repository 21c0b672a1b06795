"""Asking about many items at once: :func:`ask_many`, the one fan-out of ``judge auto`` (pairs) and
``synth generate`` (documents), with the one reply cache (:class:`ReplyCache`) and the one tally
(:class:`Tally`).

Items go out in batches (one item each for an endpoint; a judge that grades many pairs per call gets
many) through a thread pool, at most ``concurrency * 2`` batches queued. Every usable answer is
cached as it arrives and handed to the caller (``on_reply``), so Ctrl-C or a stop loses only the
batches in flight: the same command asks only for the rest. A stop of the endpoint
(:class:`~harness.endpoint.client.EndpointStopped`: unreachable, key refused) lets the requests in
flight end, sends nothing more and is reported in ``Tally.stopped``; Ctrl-C in ``Tally.interrupted``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from harness.endpoint.client import Answer, EndpointStopped
from harness.io.append_log import AppendLog, sha256_text

T = TypeVar("T")
V = TypeVar("V")


def reply_key(identity: Sequence[Any], *parts: Any) -> str:
    """sha256 of the asker's identity (what, beside the item, decides the answer: endpoint, model,
    sampling settings, prompt version; a judge's name) and of the item's parts (texts as their own
    sha256 where they are long). Two answers with one key were asked the same question."""
    return sha256_text(json.dumps([*identity, *parts], ensure_ascii=False))


class ReplyCache(Generic[V]):
    """Answers already received (:class:`~harness.io.append_log.AppendLog`: one JSON line per answer,
    appended as they arrive, a killed run keeps them). Keys are hashes: no URL or key is stored.

    ``read`` turns a stored record into its value (None: skipped), ``record`` a value into the
    record stored: the formats of the files earlier versions wrote, which stay readable."""

    def __init__(
        self,
        path: Path,
        identity: Sequence[Any],
        read: Callable[[dict[str, Any]], V | None],
        record: Callable[[V, Answer], dict[str, Any]],
    ) -> None:
        self.path, self.identity, self._record = path, list(identity), record
        self._log: AppendLog[V] = AppendLog(path, read)

    def key(self, *parts: Any) -> str:
        return reply_key(self.identity, *parts)

    def get(self, key: str) -> V | None:
        return self._log.get(key)

    def put(self, key: str, value: V, outcome: Answer) -> None:
        self._log.append(key, value, self._record(value, outcome))


@dataclass
class Tally:
    """What asking cost and gave, per item: the summary line of a command and its provenance."""

    items: int = 0
    answered: int = 0  # a usable answer, cached ones included
    from_cache: int = 0
    unparsable: int = 0  # replies never held what the reader looks for
    failed: int = 0  # no usable reply (timeouts, errors, cut replies) after the retries
    retried: int = 0  # items that needed more than one request
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usage_refused: int = 0  # replies whose token counts were not believable: neither counted nor priced
    failures: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None  # why the endpoint stopped the run (EndpointStopped)
    interrupted: bool = False  # Ctrl-C

    def add(self, o: Answer) -> None:
        """One item's outcome: answered, unparsable, or failed (and why)."""
        self.requests += o.requests
        self.tokens_in += o.tokens_in
        self.tokens_out += o.tokens_out
        self.usage_refused += o.usage_refused
        self.retried += o.requests > 1
        if o.value is not None:
            self.answered += 1
        elif o.failure == "unparsable":
            self.unparsable += 1
        else:
            self.failed += 1
            why = (o.failure or "failed").removeprefix("failed: ")
            self.failures[why] = self.failures.get(why, 0) + 1

    def cost(self, price_in: float | None, price_out: float | None) -> float | None:
        """USD for the tokens at the given prices per 1M tokens (None when no price is given)."""
        if price_in is None and price_out is None:
            return None
        return (self.tokens_in * (price_in or 0.0) + self.tokens_out * (price_out or 0.0)) / 1e6

    def spent(self) -> str:
        """``N requests, T tokens in, O out``: the tail of every summary line."""
        return f"{self.requests} requests, {self.tokens_in} tokens in, {self.tokens_out} out"


def ask_many(
    items: Sequence[T],
    ask: Callable[[list[T], threading.Event], list[Answer]],
    on_reply: Callable[[int, Answer], None],
    *,
    tally: Tally,
    cache: ReplyCache | None = None,
    keys: Sequence[str | None] | None = None,
    batch: int = 1,
    concurrency: int = 4,
    progress: Any = None,
    on_wait: Callable[[], None] | None = None,
    phase: str = "asking about {n} items",
) -> Tally:
    """Each item's answer: from ``cache`` under ``keys[i]`` without asking, the rest through ``ask``
    (a batch of items and the stop event -> one :class:`Answer` per item), ``concurrency`` batches
    at a time. ``on_reply(i, outcome)`` runs in the calling thread for every item answered, cached or
    not (``outcome.requests == 0`` for a cached one); ``on_wait`` after every wait for a batch (at
    most a second apart: periodic saves); ``phase`` the progress display's label. Items a stop or Ctrl-C
    left unasked are not reported."""
    keys = keys if keys is not None else [None] * len(items)
    todo: list[int] = []
    for i in range(len(items)):
        hit = cache.get(keys[i]) if cache is not None and keys[i] is not None else None
        if hit is None:
            todo.append(i)
            continue
        tally.from_cache += 1
        tally.answered += 1
        on_reply(i, Answer(hit))
    if progress is not None:
        progress.phase(phase.format(n=len(todo)), len(todo))
    batches = iter([todo[s : s + batch] for s in range(0, len(todo), batch)])
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ask")
    pending: dict[Future, list[int]] = {}

    def submit() -> None:
        while len(pending) < concurrency * 2 and not stop.is_set():
            b = next(batches, None)
            if b is None:
                return
            pending[pool.submit(ask, [items[i] for i in b], stop)] = b

    try:
        submit()
        while pending:
            done, _ = wait(list(pending), timeout=1.0, return_when=FIRST_COMPLETED)
            for f in done:
                b = pending.pop(f)
                try:
                    outcomes = f.result()
                except EndpointStopped as e:
                    tally.stopped = tally.stopped or str(e)
                    tally.requests += e.requests
                    stop.set()
                    continue
                for i, o in zip(b, outcomes):
                    tally.add(o)
                    if o.value is not None and cache is not None and keys[i] is not None:
                        cache.put(keys[i], o.value, o)
                    on_reply(i, o)
                if progress is not None:
                    progress.advance(len(b))
            if on_wait is not None:
                on_wait()
            submit()
    except KeyboardInterrupt:
        tally.interrupted = True
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    return tally
