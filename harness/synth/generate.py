"""The generators: an OpenAI-compatible endpoint (``http``) and a sentence of the document (``extract``).

``http`` goes through the endpoint client of ``harness judge auto``
(:class:`harness.endpoint.client.ChatClient`: whole-reply deadline, size cap, retries with backoff,
``Retry-After`` on 429/503, a refused connection or key stops the run, the key only in the
``Authorization`` header) with this package's prompt and reply reader, fanned out by the same
:func:`harness.endpoint.fanout.ask_many`. Every reply that held questions is appended to the reply
cache as it arrives (keyed by the endpoint without credentials, model, temperature, max_tokens,
prompt version, style, questions asked and a hash of the passage): a second run sends no request for
them, and Ctrl-C loses only the replies in flight.

``extract`` asks nothing: each question is a span of one of the document's sentences (at most
:data:`SPAN_WORDS` words), chosen with the seed. It is the biased baseline by construction (every
word of the question is in its source), for comparison and tests.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.endpoint.client import Answer, EndpointStopped
from harness.endpoint.fanout import ReplyCache, Tally, ask_many
from harness.io.append_log import sha256_text
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


# ----------------------------------------------------------------------------- http


def tally_line(tally: Tally) -> str:
    """The summary line of the questions asked for."""
    refused = f" ({tally.usage_refused} replies' usage refused, not counted)" if tally.usage_refused else ""
    return (
        f"{tally.answered} of {tally.items} documents answered ({tally.from_cache} from the reply cache), "
        f"{tally.unparsable} replies with no ##query: line, {tally.failed} failed; {tally.spent()}{refused}"
    )


def _queries(rec: dict[str, Any]) -> tuple[list[str], str | None] | None:
    qs = rec["queries"]
    ok = isinstance(qs, list) and qs and all(isinstance(q, str) for q in qs)
    return (qs, rec.get("reply")) if ok else None


def reply_cache(client: Any, cache_dir: str | os.PathLike[str] | None = None) -> ReplyCache:
    """The questions ``client``'s endpoint gave, kept under ``<cache>/synth/replies.jsonl``: the
    questions are stored (they are what the next run writes), never the URL, the key or the passage."""
    return ReplyCache(
        cache_file(cache_dir), client.identity(P.PROMPT_VERSION), _queries,
        lambda v, o: {"queries": v[0], "reply": v[1]},
    )  # fmt: skip


def job_key(cache: ReplyCache, job: Job, k: int) -> str:
    """The cache key of one document's questions: the style, the count and a hash of the passage."""
    return cache.key(job.style, k, sha256_text(P.passage(job.title, job.text)))


def ask_one(client: Any, job: Job, k: int, stop: threading.Event) -> Answer:
    """One document's questions through ``client``: ``Answer.value`` is (questions, the reply's hash)."""
    asked = P.prompt(job.title, job.text, job.style, k)
    read = P.Reader(asked, k)  # only what the model added: an echo of the prompt is a failed reply
    out, text = client.ask(asked, read, stop)
    if out.failure == "unparsable" and read.echoed:
        out.failure = P.Reader.FAILURE
    if out.value is not None:
        out.value = (out.value, P.reply_hash(text or ""))
    return out


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while asking: what arrived is in the reply cache (the message says so)."""


def ask_all(
    jobs: Sequence[Job], k: int, client: Any, cache: ReplyCache | None, *, concurrency: int = 4, progress: Any = None
) -> tuple[list[Reply], Tally]:
    """Every job's reply: cached ones without a request, the rest through ``concurrency`` workers
    (:func:`~harness.endpoint.fanout.ask_many`), each reply cached as it arrives. A stop of the client
    (:class:`~harness.endpoint.client.EndpointStopped`: unreachable, key refused) is raised once the
    requests in flight end; Ctrl-C raises :class:`Interrupted`."""
    tally = Tally(items=len(jobs))
    replies: list[Reply | None] = [None] * len(jobs)

    def on_reply(i: int, o: Answer) -> None:
        qs, sha = o.value if o.value is not None else (None, None)
        replies[i] = Reply(qs[:k] if qs else None, reply_sha256=sha, failure=o.failure, requests=o.requests,
                           tokens_in=o.tokens_in, tokens_out=o.tokens_out, cached=o.requests == 0 and qs is not None)

    ask_many(
        jobs, lambda batch, stop: [ask_one(client, j, k, stop) for j in batch], on_reply, tally=tally, cache=cache,
        keys=[job_key(cache, j, k) for j in jobs] if cache is not None else None, concurrency=concurrency,
        progress=progress, phase="asking for questions on {n} documents",
    )  # fmt: skip
    if tally.interrupted:
        raise Interrupted(
            f"{tally.answered - tally.from_cache} new replies arrived and are kept in the reply cache; the same "
            "command asks only for the rest"
        )
    if tally.stopped:
        raise EndpointStopped(tally.stopped)
    return [r if r is not None else Reply(None, failure="failed: not asked") for r in replies], tally


def cache_file(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the replies are cached: ``<cache>/synth/replies.jsonl``."""
    from harness.paths import cache_dir_of

    return cache_dir_of(cache_dir) / "synth" / "replies.jsonl"
