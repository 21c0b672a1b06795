"""An OpenAI-compatible chat-completions endpoint as a relevance judge (vLLM, Ollama, llama.cpp's
server, a hosted API), asked UMBRELA's prompt (:mod:`harness.judging.umbrela`).

A hostile or broken endpoint must not stall or corrupt a run, so every request is bounded: a total
deadline (a reply that trickles in forever is cut), a size cap (a reply over 1 MB is cut), retries
with exponential backoff for timeouts, dropped connections and 5xx, ``Retry-After`` honoured (up to
a cap) on 429 and 503, and a reply without a readable ``##final score`` asked again and then left
ungraded, never read as 0. A refused connection, or an endpoint that refuses the key or does not
exist (401, 403, 404, 405), stops the run with one line naming the URL without its credentials:
every other request would fail the same way.

The key comes from an environment variable, goes only into the ``Authorization`` header, and is
registered with :func:`harness.errors.register_secret`, so no message can carry it.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from harness.errors import HarnessError, register_secret
from harness.judging import umbrela

#: a reply larger than this is cut and the attempt counts as failed
MAX_REPLY_BYTES = 1 << 20
#: the longest ``Retry-After`` honoured (seconds); a longer one is waited this long
MAX_RETRY_AFTER = 60.0


class JudgeStopped(HarnessError):
    """The endpoint cannot grade anything (unreachable, key refused, no such path): stop the run."""


def public_url(url: str) -> str:
    """``url`` without user, password, query string or fragment: what may be printed and cached."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def endpoint(url: str) -> str:
    """The chat-completions URL of a base URL (``http://host:8000/v1``) or of the full path."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit(parts._replace(path=path))


@dataclass
class Outcome:
    """One pair's result: the grade (None: ungraded), why not, how many requests, tokens spent."""

    grade: int | None
    failure: str | None = None  # "unparsable" or "failed: <why>"
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    value: Any = None  # what the reply reader read (:meth:`HttpJudge.ask`); the grade for a judge


class _Attempt(Exception):
    """One attempt failed in a way worth retrying; ``wait`` is the server's Retry-After, if any."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.why, self.wait = why, wait


class HttpJudge:
    """Grades (query, document) pairs through one endpoint; thread-safe (one pooled client)."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        retries: int = 3,
        concurrency: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HarnessError(f"--url: not an http(s) URL: {public_url(url)}")
        self.url, self.model = endpoint(url), model
        self.public = public_url(self.url)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.timeout, self.retries = timeout, retries
        self._sleep = sleep
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            register_secret(api_key)
            headers["Authorization"] = f"Bearer {api_key}"
        auth = None
        if parts.username:  # credentials in the URL: sent as basic auth, never printed
            register_secret(parts.password or "")
            auth = httpx.BasicAuth(parts.username, parts.password or "")
        self._client = httpx.Client(
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            follow_redirects=False,
            trust_env=False,  # no proxy from the environment: the URL given is the one asked
        )

    @property
    def name(self) -> str:
        """The judge as recorded per grade: model, prompt version, endpoint (no credentials)."""
        return f"llm:{self.model}:{umbrela.PROMPT_VERSION}@{self.public}"

    def cache_identity(self) -> list:
        """What, beside the query and the document, decides a reply (the cache key's first part)."""
        return [self.public, self.model, self.temperature, self.max_tokens, umbrela.PROMPT_VERSION]

    def close(self) -> None:
        self._client.close()

    def grade(self, query: str, title: str, text: str, stop: threading.Event | None = None) -> Outcome:
        """Ask until a grade comes back or the retries are spent; :class:`JudgeStopped` when the
        endpoint cannot grade anything."""
        out, _ = self.ask(umbrela.prompt(query, title, text), umbrela.parse, stop)
        return out

    def ask(
        self, content: str, parse: Callable[[str], Any], stop: threading.Event | None = None
    ) -> tuple[Outcome, str | None]:
        """Send ``content`` as the user message until ``parse`` reads something other than None from
        a reply (in ``Outcome.value``; ``Outcome.grade`` too when it is an int), or the retries are
        spent; also the text of the reply that parsed. The request, retry and stop machinery of
        :meth:`grade`, for any prompt and reply reader (``harness synth generate`` asks for questions)."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        data = json.dumps(body).encode("ascii")  # \u escapes: lone surrogates stay valid JSON
        out = Outcome(None)
        last = "failed"
        for attempt in range(self.retries + 1):
            if stop is not None and stop.is_set():
                break
            out.requests += 1
            try:
                reply = self._post(data)
            except _Attempt as e:
                last = f"failed: {e.why}"
                if attempt < self.retries:
                    self._sleep(self._backoff(attempt, e.wait))
                continue
            usage = reply.get("usage") if isinstance(reply, dict) else None
            if isinstance(usage, dict):
                out.tokens_in += _int(usage.get("prompt_tokens"))
                out.tokens_out += _int(usage.get("completion_tokens"))
            text = _content(reply)
            value = parse(text)
            if value is not None:
                out.value, out.failure = value, None
                out.grade = value if isinstance(value, int) else None
                return out, text
            last = "unparsable"
        out.failure = last
        return out, None

    def _backoff(self, attempt: int, wait: float | None) -> float:
        if wait is not None:
            return min(max(wait, 0.0), MAX_RETRY_AFTER)
        with self._lock:
            jitter = self._rng.random()
        return min(0.5 * 2**attempt * (1 + jitter), MAX_RETRY_AFTER)

    def _post(self, data: bytes) -> object:
        """One request, its whole reply read within the deadline and the size cap, as JSON."""
        deadline = time.monotonic() + self.timeout
        try:
            with self._client.stream("POST", self.url, content=data) as r:
                if r.status_code in (401, 403, 404, 405):
                    raise JudgeStopped(
                        f"{self.public} answered {r.status_code} {r.reason_phrase}"
                        + (" (is the key right? --api-key-env)" if r.status_code in (401, 403) else "")
                    )
                if r.status_code in (429, 503):
                    raise _Attempt(f"HTTP {r.status_code}", _retry_after(r.headers.get("Retry-After")))
                if r.status_code >= 500:
                    raise _Attempt(f"HTTP {r.status_code}")
                if r.status_code != 200:
                    raise _Attempt(f"HTTP {r.status_code}")
                size = int(r.headers.get("Content-Length") or 0)
                if size > MAX_REPLY_BYTES:
                    raise _Attempt("reply over 1 MB")
                chunks, got = [], 0
                for chunk in r.iter_raw():
                    got += len(chunk)
                    if got > MAX_REPLY_BYTES:
                        raise _Attempt("reply over 1 MB (cut)")
                    if time.monotonic() > deadline:
                        raise _Attempt(f"reply still coming after {self.timeout:g} s (cut)")
                    chunks.append(chunk)
        except httpx.ConnectError:
            raise JudgeStopped(f"cannot connect to {self.public} (connection refused or no such host)") from None
        except httpx.TimeoutException:
            raise _Attempt(f"no answer within {self.timeout:g} s") from None
        except (httpx.TransportError, httpx.DecodingError) as e:
            raise _Attempt(type(e).__name__) from None
        try:
            return json.loads(b"".join(chunks))
        except (ValueError, RecursionError):
            return None  # not JSON: read as unparsable (asked again)


def _content(reply: object) -> str:
    """``choices[0].message.content`` of a chat-completions reply, or "" where it has none."""
    try:
        content = reply["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


def _int(x: object) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else 0


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
