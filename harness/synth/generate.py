"""The generators: an OpenAI-compatible endpoint (``http``) and a sentence of the document (``extract``).

``http`` goes through the client of ``harness judge auto`` (:class:`harness.judging.llm.HttpJudge`:
whole-reply deadline, size cap, retries with backoff, ``Retry-After`` on 429/503, a refused
connection or key stops the run, the key only in the ``Authorization`` header) with this package's
prompt and reply reader (:meth:`HttpJudge.ask`). Every reply that held questions is appended to a
reply cache as it arrives (keyed by the endpoint without credentials, model, temperature,
max_tokens, prompt version, style, questions asked and a hash of the passage): a second run sends
no request for them, and Ctrl-C loses only the replies in flight.

``extract`` asks nothing: each question is a span of one of the document's sentences (at most
:data:`SPAN_WORDS` words), chosen with the seed. It is the biased baseline by construction (every
word of the question is in its source), for comparison and tests.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.io.append_log import AppendLog, sha256_text
from harness.synth import prompt as P
from harness.synth.draw import rng

log = logging.getLogger("harness")

#: the longest question ``extract`` makes (words of a sentence, from its start)
SPAN_WORDS = 24
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_EXTRACT = 3  # the seed purpose of extract's choices (draw.py uses 1 and 2)


@dataclass
class Job:
    """One document to ask about: its position, id, text, and the style of its questions."""

    position: int
    doc_id: str
    title: str
    text: str
    style: str


@dataclass
class Reply:
    """What came back for one job: its questions (None: none usable), the raw reply's hash, why not."""

    queries: list[str] | None
    reply_sha256: str | None = None
    failure: str | None = None
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached: bool = False


@dataclass
class Tally:
    """Counts for the summary line and ``synth.json``."""

    jobs: int = 0
    answered: int = 0
    from_cache: int = 0
    unparsable: int = 0  # replies that never held a ##query: line
    failed: int = 0  # no usable reply after the retries
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"{self.answered} of {self.jobs} documents answered ({self.from_cache} from the reply cache), "
            f"{self.unparsable} replies with no ##query: line, {self.failed} failed; {self.requests} requests, "
            f"{self.tokens_in} tokens in, {self.tokens_out} out"
        )


# ----------------------------------------------------------------------------- extract


def sentences(text: str) -> list[str]:
    """The text cut after ``.``, ``?`` or ``!`` followed by whitespace (the pieces as written)."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def extract(job: Job, k: int, seed: int) -> Reply:
    """``k`` sentence spans of the document (of 3 words or more where it has such sentences), each
    cut to :data:`SPAN_WORDS` words, chosen by the seed and the document's position."""
    parts = sentences(job.text) or sentences(job.title)
    long_enough = [s for s in parts if len(s.split()) >= 3] or parts
    if not long_enough:
        return Reply(None, failure="no sentence")
    stream = rng(seed, _EXTRACT, job.position)
    order = sorted(range(len(long_enough)), key=lambda i: (stream.random(), i))
    spans = [" ".join(long_enough[i].split()[:SPAN_WORDS]) for i in order[:k]]
    raw = "\n".join(f"##query: {s}" for s in spans)
    return Reply(spans, reply_sha256=P.reply_hash(raw))


# ----------------------------------------------------------------------------- reply cache


def _queries(rec: dict[str, Any]) -> tuple[list[str], str | None] | None:
    qs = rec["queries"]
    ok = isinstance(qs, list) and qs and all(isinstance(q, str) for q in qs)
    return (qs, rec.get("reply")) if ok else None


class QueryCache:
    """Questions an endpoint gave (:class:`~harness.io.append_log.AppendLog`: one JSON line per reply,
    appended as they arrive, a killed run keeps them). Keys are hashes; the questions are stored (they
    are what the next run writes), never the URL, the key or the passage."""

    def __init__(self, path: Path, identity: list) -> None:
        self.path, self.identity = path, identity
        self._log: AppendLog[tuple[list[str], str | None]] = AppendLog(path, _queries)

    def key(self, job: Job, k: int) -> str:
        doc = sha256_text(P.passage(job.title, job.text))
        return sha256_text(json.dumps([*self.identity, job.style, k, doc], ensure_ascii=False))

    def get(self, key: str) -> tuple[list[str], str | None] | None:
        return self._log.get(key)

    def put(self, key: str, queries: list[str], reply_sha256: str | None) -> None:
        self._log.append(key, (queries, reply_sha256), {"queries": queries, "reply": reply_sha256})


# ----------------------------------------------------------------------------- http


def cache_identity(client: Any) -> list:
    """What, beside the passage, style and count, decides a reply (the cache key's first part)."""
    return [client.public, client.model, client.temperature, client.max_tokens, P.PROMPT_VERSION]


def ask_one(client: Any, job: Job, k: int, stop: threading.Event) -> Reply:
    """One document's questions through ``client`` (:meth:`HttpJudge.ask`)."""
    out, text = client.ask(P.prompt(job.title, job.text, job.style, k), lambda r: P.parse(r, k), stop)
    reply = Reply(out.value, failure=out.failure, requests=out.requests)
    reply.tokens_in, reply.tokens_out = out.tokens_in, out.tokens_out
    if text is not None:
        reply.reply_sha256 = P.reply_hash(text)
    return reply


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while asking: what arrived is in the reply cache (the message says so)."""


def ask_all(
    jobs: Sequence[Job], k: int, client: Any, cache: QueryCache | None, *, concurrency: int = 4, progress: Any = None
) -> tuple[list[Reply], Tally]:
    """Every job's reply: cached ones without a request, the rest through ``concurrency`` workers,
    each reply cached as it arrives. A stop of the client (:class:`~harness.judging.llm.JudgeStopped`:
    unreachable, key refused) is raised once the requests in flight end (the queued ones see the
    stop and send nothing); Ctrl-C raises :class:`Interrupted`."""
    from harness.judging.llm import JudgeStopped

    tally = Tally(jobs=len(jobs))
    keys = [cache.key(j, k) if cache is not None else "" for j in jobs]
    hits = [cache.get(key) if cache is not None else None for key in keys]
    replies = [None if h is None else Reply(h[0][:k], reply_sha256=h[1], cached=True) for h in hits]
    tally.from_cache = sum(r is not None for r in replies)
    missing = [i for i, r in enumerate(replies) if r is None]
    if progress is not None:
        progress.phase(f"asking for questions on {len(missing)} documents", len(missing))
    stop = threading.Event()
    stopped: list[JudgeStopped] = []
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="synth")
    try:
        asked = {pool.submit(ask_one, client, jobs[i], k, stop): i for i in missing}
        for fut in as_completed(asked):
            i = asked[fut]
            error = fut.exception()
            if isinstance(error, JudgeStopped):
                stopped.append(error)
                stop.set()
                continue
            if error is not None:
                raise error
            reply = replies[i] = fut.result()
            if reply.queries and cache is not None:
                cache.put(keys[i], reply.queries, reply.reply_sha256)
            _count(tally, reply)
            if progress is not None:
                progress.advance(1)
    except KeyboardInterrupt:
        raise Interrupted(
            f"{tally.answered} new replies arrived and are kept in the reply cache; the same command asks "
            "only for the rest"
        ) from None
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    if stopped:
        raise stopped[0]
    tally.answered += tally.from_cache
    return [r if r is not None else Reply(None, failure="failed: not asked") for r in replies], tally


def _count(tally: Tally, reply: Reply) -> None:
    """Add one reply to the tally: answered, a reply with no ##query: line, or failed (and why)."""
    tally.requests += reply.requests
    tally.tokens_in += reply.tokens_in
    tally.tokens_out += reply.tokens_out
    if reply.queries:
        tally.answered += 1
        return
    if reply.failure == "unparsable":
        tally.unparsable += 1
        return
    tally.failed += 1
    reason = (reply.failure or "failed").removeprefix("failed: ")
    tally.failures[reason] = 1 + tally.failures.get(reason, 0)


def cache_file(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the replies are cached: ``<cache>/synth/replies.jsonl``."""
    from harness.paths import cache_dir_of

    return cache_dir_of(cache_dir) / "synth" / "replies.jsonl"
