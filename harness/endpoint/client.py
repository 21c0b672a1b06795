"""An OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp's server, a hosted API):
the one client of every command that asks one (``judge auto --judge http`` asks UMBRELA's prompt,
:class:`harness.judging.umbrela.UmbrelaJudge`; ``synth generate`` asks for questions).

:meth:`ChatClient.ask` sends one user message and reads the reply's text with a ``parse`` the caller
gives; the request, its deadline, retries, size cap and key handling are the same for every use.

A hostile or broken endpoint must not stall or corrupt a run, so every request is bounded: one
deadline (``timeout``) for the whole exchange, connection, status line, headers and body alike, so
a server that drips its headers a byte at a time is cut as one that drips its body is (each socket
read and write is given only the time left, :class:`_DeadlineBackend`); a size cap (a reply over
1 MB is cut, after decompression too: ``gzip`` and ``deflate`` replies are decoded, the only ones
asked for); retries with exponential backoff for timeouts, dropped connections and 5xx;
``Retry-After`` honoured (up to a cap) on 429 and 503; and a reply ``parse`` reads nothing from is
asked again and then left unanswered, never guessed at. A refused connection, or an endpoint that
refuses the key or does not exist (401, 403, 404, 405), stops the run with one line naming the URL
without its credentials: every other request would fail the same way.

The key comes from an environment variable, goes only into the ``Authorization`` header, and is
registered with :func:`harness.errors.register_secret`, so no message can carry it. Credentials in
the URL are sent as basic auth, which uses the same header: a URL with credentials and a key is
refused rather than one of them silently dropped.
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpcore

from harness.errors import HarnessError, InputError, register_secret
from harness.io.inflate import ACCEPT_ENCODING, BodyError, Inflater

#: a reply larger than this is cut and the attempt counts as failed (after decompression too)
MAX_REPLY_BYTES = 1 << 20
#: the longest ``Retry-After`` honoured (seconds); a longer one is waited this long
MAX_RETRY_AFTER = 60.0
#: the longest deadline one request may be given (seconds): a day; more is a typo, not a plan
MAX_TIMEOUT = 86_400.0
#: a reply's ``usage`` token count above this is not believed (no model reads or writes 100M tokens
#: in one reply): the reply's usage is refused, not priced
MAX_USAGE_TOKENS = 100_000_000


def check_timeout(value: float) -> float:
    """``value`` as a request deadline in seconds; :class:`InputError` naming ``--timeout`` for nan,
    infinity, 0, negative or absurd (over :data:`MAX_TIMEOUT`) values."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise InputError(
            f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g} (one day), not {value!r}",
            field="--timeout",
        )
    return float(value)


class EndpointStopped(HarnessError):
    """The endpoint cannot answer anything (unreachable, key refused, no such path): stop the run.
    ``requests``: how many requests the pair being asked had sent (the summary counts them)."""

    requests: int = 0


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
class Answer:
    """One item's result after its retries: what the reply reader read (``value``; None: nothing
    usable), why not, how many requests, tokens spent."""

    value: Any = None
    failure: str | None = None  # "unparsable" or "failed: <why>"
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usage_refused: int = 0  # replies whose ``usage`` was not believable (not counted, not priced)


class _Attempt(Exception):
    """One attempt failed in a way worth retrying; ``wait`` is the server's Retry-After, if any."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.why, self.wait = why, wait


# ----------------------------------------------------------------------------- one deadline per request

_LOCAL = threading.local()  # .deadline: the time.monotonic() the current thread's request must end by


def _time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The socket timeout for one read or write: the smaller of httpcore's own and the time left
    before this thread's request deadline; ``expired`` raised when it has passed."""
    deadline = getattr(_LOCAL, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write gets only the time left before the request's deadline:
    httpcore gives each read the full read timeout, so a server sending one byte a second would
    otherwise hold a request for as long as it likes."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        t = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, t))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own synchronous sockets, each wrapped in :class:`_DeadlineStream`. The sync pool does
    its I/O in the calling thread, so the thread's deadline is the request's."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        t = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, t, local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        t = _time_left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, t, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# ----------------------------------------------------------------------------- the client


class ChatClient:
    """Asks one endpoint, at most ``concurrency`` requests at a time; thread-safe (one pool).
    :meth:`ask` sends one message and reads the reply with the caller's ``parse``."""

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
            raise InputError(f"not an http(s) URL: {public_url(url)}", field="--url")
        try:
            parts.port  # noqa: B018 - a port that is not a number raises here, before any request
        except ValueError:
            raise InputError(f"not a valid port in {public_url(url)}", field="--url") from None
        self.timeout = check_timeout(timeout)
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0):
            raise InputError(f"must be a finite number >= 0, not {temperature!r}", field="--temperature")
        has_credentials = bool(parts.username or parts.password)
        if has_credentials and api_key:
            raise InputError(
                "the URL carries credentials (user:password@) and --api-key-env gives a key: both would go "
                "in the one Authorization header; give one of them",
                field="--api-key-env",
            )
        self.url, self.model = endpoint(url), model
        self.public = public_url(self.url)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.retries, self.concurrency = retries, concurrency
        self._sleep = sleep
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        self._sent = 0
        self._stopped: EndpointStopped | None = None  # once the endpoint refused everything, nothing more is sent
        # the URL asked: credentials out of it (they go in a header), the query string kept
        target = urlsplit(self.url)
        netloc = target.netloc.rpartition("@")[2]
        self._target = urlunsplit((target.scheme, netloc, target.path, target.query, ""))
        headers = [(b"Content-Type", b"application/json"), (b"Accept", b"application/json"),
                   (b"Accept-Encoding", ACCEPT_ENCODING.encode())]  # fmt: skip
        if api_key:
            register_secret(api_key)
            headers.append((b"Authorization", f"Bearer {api_key}".encode("latin-1", "replace")))
        if has_credentials:  # credentials in the URL: sent as basic auth, never printed
            user, password = unquote(parts.username or ""), unquote(parts.password or "")
            register_secret(password)
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            register_secret(token)
            headers.append((b"Authorization", f"Basic {token}".encode()))
        self._headers = headers
        # no proxy from the environment (httpcore reads none): the URL given is the one asked
        self._pool = httpcore.ConnectionPool(
            max_connections=concurrency,
            max_keepalive_connections=concurrency,
            network_backend=_DeadlineBackend(),
        )

    @property
    def requests_sent(self) -> int:
        """Requests started so far (a stop or Ctrl-C included: they count as sent)."""
        with self._lock:
            return self._sent

    def identity(self, prompt_version: str) -> list:
        """What, beside the item asked about, decides a reply to ``prompt_version``'s prompt: the endpoint
        without credentials, the model and the sampling settings (a reply cache key's first part)."""
        return [self.public, self.model, self.temperature, self.max_tokens, prompt_version]

    def close(self) -> None:
        self._pool.close()

    def ask(
        self,
        content: str,
        parse: Callable[[str], Any],
        stop: threading.Event | None = None,
        *,
        extra_body: dict[str, Any] | None = None,
        parse_reply: Callable[[object], Any] | None = None,
    ) -> tuple[Answer, str | None]:
        """Send ``content`` as the user message until ``parse`` reads something other than None from
        a reply (in ``Answer.value``), or the retries are spent; also the text of the reply that
        parsed. :class:`EndpointStopped` (carrying the requests sent for this message in ``requests``)
        when the endpoint cannot answer anything. ``extra_body``: more request fields (``logprobs``);
        ``parse_reply``: read the whole reply object instead of its text (the token log-probabilities)."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **(extra_body or {}),
        }
        data = json.dumps(body).encode("ascii")  # \u escapes: lone surrogates stay valid JSON
        out = Answer()
        last = "failed"
        for attempt in range(self.retries + 1):
            if stop is not None and stop.is_set():
                break
            if self._stopped is not None:  # another thread's request found the endpoint refusing
                raise EndpointStopped(str(self._stopped))
            out.requests += 1
            try:
                reply = self._post(data)
            except _Attempt as e:
                last = f"failed: {e.why}"
                if attempt < self.retries:
                    self._sleep(self._backoff(attempt, e.wait))
                continue
            except EndpointStopped as e:
                e.requests = out.requests
                self._stopped = e
                raise
            _count_usage(out, reply)
            text = _content(reply)
            value = parse(text) if parse_reply is None else parse_reply(reply)
            if value is not None:
                out.value, out.failure = value, None
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
        """One request within one deadline (connect, status line, headers and body), its body decoded
        and capped, read as JSON (None when it is not JSON)."""
        with self._lock:
            self._sent += 1
        t = self.timeout
        _LOCAL.deadline = time.monotonic() + t
        try:
            with self._pool.stream(
                "POST", self._target, headers=self._headers, content=data,
                extensions={"timeout": {"connect": min(t, 10.0), "read": t, "write": t, "pool": t}},
            ) as r:  # fmt: skip
                headers = _headers(r.headers)
                _check_status(r.status, r.extensions.get("reason_phrase", b""), headers, self.public)
                body = _read_body(r.iter_stream(), headers)
        except httpcore.ConnectError:
            raise EndpointStopped(f"cannot connect to {self.public} (connection refused or no such host)") from None
        except httpcore.TimeoutException:
            raise _Attempt(f"no whole reply within {t:g} s (--timeout: the deadline of one request)") from None
        except (httpcore.NetworkError, httpcore.ProtocolError) as e:
            raise _Attempt(type(e).__name__) from None
        except httpcore.UnsupportedProtocol as e:
            raise EndpointStopped(f"{self.public}: {e}") from None
        finally:
            _LOCAL.deadline = None
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            return None  # not JSON: read as unparsable (asked again)


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Response headers by lower-case name (the last of a repeated one)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


def _check_status(status: int, reason: bytes, headers: dict[str, str], public: str) -> None:
    if status in (401, 403, 404, 405):
        raise EndpointStopped(
            f"{public} answered {status} {reason.decode('latin-1', 'replace')}"
            + (" (is the key right? --api-key-env)" if status in (401, 403) else "")
        )
    if status in (429, 503):
        raise _Attempt(f"HTTP {status}", _retry_after(headers.get("retry-after")))
    if status != 200:
        raise _Attempt(f"HTTP {status}")


def _read_body(chunks: Iterable[bytes], headers: dict[str, str]) -> bytes:
    """The body, decoded (gzip, deflate), cut past :data:`MAX_REPLY_BYTES` as sent or as decoded."""
    declared = headers.get("content-length", "").strip()
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        raise _Attempt("reply over 1 MB")
    try:
        body = Inflater(headers.get("content-encoding"), MAX_REPLY_BYTES)
        got = 0
        for chunk in chunks:
            got += len(chunk)
            if got > MAX_REPLY_BYTES:
                raise _Attempt("reply over 1 MB (cut)")
            body.feed(chunk)
        return body.finish()
    except BodyError as e:
        raise _Attempt(str(e)) from None


def _count_usage(out: Answer, reply: object) -> None:
    """Add the reply's ``usage`` tokens to ``out``; a count that is not an integer in
    0..:data:`MAX_USAGE_TOKENS` refuses the reply's whole usage (counted in ``usage_refused``)."""
    usage = reply.get("usage") if isinstance(reply, dict) else None
    if usage is None:
        return
    counts = [usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens")] if isinstance(usage, dict) else []
    if len(counts) == 2 and all(_plausible(c) for c in counts):
        out.tokens_in += counts[0]
        out.tokens_out += counts[1]
    else:
        out.usage_refused += 1


def _plausible(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_USAGE_TOKENS


def _content(reply: object) -> str:
    """``choices[0].message.content`` of a chat-completions reply, or "" where it has none."""
    try:
        content = reply["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent or
    unreadable, so the caller backs off exponentially. A hostile server controls every byte of it:
    the date parser raises ``OverflowError`` for a zone offset of twenty digits and ``timestamp()``
    for a year out of range, so every failure of reading it means "no Retry-After", never a stop."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        seconds = float(value)  # a thousand digits read as inf: the caller's cap bounds it
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
        left = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, IndexError, OSError):
        return None
    return max(0.0, left) if math.isfinite(left) else None
