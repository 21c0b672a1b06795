"""A retriever behind an HTTP service: ``{type: http, url: ..., batch_size: 32, ...}``.

Wire format (JSON, one POST per batch of queries)::

    request:  {"queries": [{"id": "q1", "text": "..."}, ...], "k": 100}
    response: {"results": {"q1": [{"id": "doc7", "score": 12.3}, ...], ...}}

The service indexes its own corpus, so ``index`` does nothing. Batches go out concurrently
(``concurrency`` threads sharing one connection pool) and are put back together in query order,
so the run does not depend on which reply came first. Connection errors, timeouts and 5xx/429
replies are retried with exponential backoff; anything else, or running out of retries, is a
:class:`~harness.errors.RetrieverError` naming the URL, the status and the start of the body, and
fails this retriever only.

Deadlines that hold against a hostile or broken service:

- ``timeout_s`` is the *total* time of one attempt (connect, send, and reading the whole body), not
  a per-read timeout: a service that trickles one byte a second fails at ``timeout_s``.
- ``max_response_mb`` caps the body as received *and* after decompression (the body is inflated
  here, in bounded steps), so a 4 MB gzip that inflates to 4 GiB fails at the cap without the memory.
- :meth:`HttpRetriever.cancel` aborts what is in flight and makes every later call fail at once.
  Requests run on daemon threads, so nothing an abandoned request leaves behind keeps the
  interpreter alive at exit.
- Header values are secrets: they are sent, never written (results record ``"<set>"``).
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import Field, field_validator

from harness.errors import RetrieverError
from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase, redact_value

#: Statuses worth retrying: the service is overloaded or restarting, not wrong.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SNIPPET_CHARS = 200
#: Bytes read from the socket at a time.
CHUNK = 64 * 1024
#: The most one inflation step may produce: peak memory is the cap plus one step, not twice the cap.
INFLATE_STEP = 1024 * 1024

T = TypeVar("T")


class HttpSpec(SpecBase):
    """A retrieval service over HTTP (POST {queries, k} -> {results}); the service indexes its own corpus."""

    type: Literal["http"] = "http"
    url: str = Field(description="endpoint that answers POST {queries, k}")
    batch_size: int = Field(32, ge=1, le=100_000, description="queries per request")
    timeout_s: float = Field(
        30.0,
        gt=0,
        le=86_400,
        allow_inf_nan=False,
        description="total per request: connect, send and read the whole reply",
    )
    retries: int = Field(2, ge=0, le=100, description="extra attempts after a connection error, timeout, 429 or 5xx")
    backoff_s: float = Field(
        0.5, ge=0, le=3600, allow_inf_nan=False, description="wait before the first retry; doubles each retry"
    )
    concurrency: int = Field(4, ge=1, le=1024, description="requests in flight at once")
    max_response_mb: float = Field(
        64.0, gt=0, le=65_536, allow_inf_nan=False, description="largest reply accepted, in MiB, after decompression"
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="sent with every request (auth tokens, ...); values are secret: never written",
        json_schema_extra={"secret": True},
    )
    allow_unknown_docs: bool = Field(False, description="score doc ids that are not in our corpus (as non-relevant)")

    @field_validator("url")
    @classmethod
    def _url_syntax(cls, v: str) -> str:
        """Checked with the config, before any retriever runs (syntax only: no request is made)."""
        try:
            parts = urlsplit(v)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as e:
            raise ValueError(f"{v!r} is not a valid URL ({e})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{v!r} is not an http:// or https:// URL with a host")
        if any(c.isspace() or ord(c) < 32 for c in v):
            raise ValueError(f"{v!r} contains whitespace or control characters")
        return v

    @field_validator("headers")
    @classmethod
    def _header_syntax(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not name or any(c.isspace() or ord(c) < 33 or c == ":" for c in name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name")
            if any(c in value for c in "\r\n\0"):
                # the value is secret: say which header, never what it holds
                raise ValueError(f"header {name!r}: the value contains a line break or NUL")
        return v

    def build(self, ctx: BuildContext) -> HttpRetriever:
        return HttpRetriever(**self.reveal(exclude={"type", "allow_unknown_docs"}))


class _Abort(Exception):
    """One attempt ended without a usable reply; ``retry`` says whether another attempt may help."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class HttpRetriever:
    """``Retriever`` that forwards batches of queries to a service."""

    def __init__(
        self,
        url: str,
        batch_size: int = 32,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        concurrency: int = 4,
        headers: dict[str, str] | None = None,
        max_response_mb: float = 64.0,
    ) -> None:
        self.name = "http"
        self.url, self.batch_size, self.timeout_s = url, batch_size, timeout_s
        self.retries, self.backoff_s, self.concurrency = retries, backoff_s, concurrency
        self.max_response_bytes = int(max_response_mb * 1024 * 1024)
        self.headers = dict(headers or {})
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def params(self) -> dict[str, Any]:
        # header values may hold secrets: record which headers were sent, not their values
        return {
            "url": redact_value(self.url),  # a URL from ${ENV} is recorded as its template
            "batch_size": self.batch_size,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "concurrency": self.concurrency,
            "max_response_mb": self.max_response_bytes / (1024 * 1024),
            "headers": sorted(self.headers),
        }

    @property
    def client(self) -> httpx.Client:
        """One pooled client, kept for every call (latency is measured per query: no reconnects)."""
        with self._lock:
            if self._cancelled.is_set():
                raise RetrieverError(f"{self.url}: cancelled")
            if self._client is None:
                self._client = httpx.Client(
                    timeout=self.timeout_s,
                    headers={**self.headers, "Accept-Encoding": "gzip, deflate"},
                    limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
                )
                weakref.finalize(self, self._client.close)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                client, self._client = self._client, None
                with suppress(Exception):  # a request still in flight on another thread: its thread ends it
                    client.close()

    def cancel(self) -> None:
        """Abort requests in flight and fail every later call at once (the run gave up on us)."""
        self._cancelled.set()
        self.close()

    def index(self, corpus: Sequence[Document]) -> None:
        """The service holds its own index."""
        return None

    def search(self, queries: Sequence[Query], k: int) -> dict[str, list[tuple[str, float]]]:
        batches = [list(queries[i : i + self.batch_size]) for i in range(0, len(queries), self.batch_size)]
        if len(batches) <= 1 or self.concurrency == 1:
            replies = [self._post(b, k) for b in batches]
        else:
            replies = self._parallel(lambda b: self._post(b, k), batches, min(self.concurrency, len(batches)))
        out: dict[str, list[tuple[str, float]]] = {}
        for batch, reply in zip(batches, replies):
            out.update(self._parse(batch, reply))
        return out

    # ------------------------------------------------------------------ transport
    def _parallel(self, fn: Callable[[Any], T], items: list[Any], workers: int) -> list[T]:
        """``[fn(x) for x in items]`` on ``workers`` daemon threads, in order; the first error wins.

        Not a ``ThreadPoolExecutor``: its threads are joined when the interpreter exits, so one stuck
        request would keep the process alive after the run gave up on it.
        """
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(items)):
            todo.put(i)
        results: list[Any] = [None] * len(items)
        errors: list[BaseException] = []
        finished = threading.Semaphore(0)

        def work() -> None:
            while not errors and not self._cancelled.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    break
                try:
                    results[i] = fn(items[i])
                except BaseException as e:  # reported by the caller's thread
                    errors.append(e)
                    break
            finished.release()

        for n in range(workers):
            threading.Thread(target=work, daemon=True, name=f"harness-http-{n}").start()
        done = 0
        while done < workers:
            if finished.acquire(timeout=0.05):
                done += 1
            elif errors or self._cancelled.is_set():
                break  # the workers still running end on their own deadline; they are daemons
        if errors:
            raise errors[0]
        if self._cancelled.is_set():
            raise RetrieverError(f"{self.url}: cancelled")
        return results

    def _post(self, batch: list[Query], k: int) -> Any:
        payload = {"queries": [{"id": q.id, "text": q.text} for q in batch], "k": k}
        body = json.dumps(payload).encode()
        last = ""
        for attempt in range(self.retries + 1):
            if attempt and self._cancelled.wait(self.backoff_s * 2 ** (attempt - 1)):
                break
            if self._cancelled.is_set():
                break
            try:
                return self._attempt(body)
            except _Abort as e:
                if not e.retry:
                    raise RetrieverError(str(e)) from None
                last = str(e)
        if self._cancelled.is_set():
            raise RetrieverError(f"{self.url}: cancelled" + (f" (last: {last})" if last else ""))
        tries = self.retries + 1
        raise RetrieverError(f"{self.url} failed {tries} time{'s' if tries > 1 else ''}; last: {last}")

    def _attempt(self, body: bytes) -> Any:
        """One request on a daemon thread, waited for until the total deadline (or a cancel)."""
        box: dict[str, Any] = {}
        done = threading.Event()
        try:
            client = self.client  # made before the clock starts: building its TLS context takes ~0.3 s
        except RetrieverError:
            raise _Abort("cancelled", retry=False) from None
        deadline = time.monotonic() + self.timeout_s

        def run() -> None:
            try:
                box["value"] = self._exchange(client, body, deadline)
            except BaseException as e:
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=run, daemon=True, name="harness-http-request").start()
        while not done.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if self._cancelled.is_set():
                raise _Abort("cancelled", retry=False)
            if time.monotonic() >= deadline:
                # the request thread sees the deadline between reads and ends itself; it is a daemon
                raise _Abort(self._timeout_message(), retry=True)
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _timeout_message(self) -> str:
        return f"no reply within {self.timeout_s:g} s (timeout_s: the total time of one request, body included)"

    def _exchange(self, client: httpx.Client, body: bytes, deadline: float) -> Any:
        def left() -> float:
            rem = deadline - time.monotonic()
            if rem <= 0:
                raise _Abort(self._timeout_message(), retry=True)
            if self._cancelled.is_set():
                raise _Abort("cancelled", retry=False)
            return rem

        try:
            request = client.build_request(
                "POST",
                self.url,
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=httpx.Timeout(left()),
            )
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise _Abort(self._timeout_message(), retry=True) from None
        except httpx.ConnectError as e:
            raise _Abort(f"ConnectError: {e} (is the service running?)", retry=True) from None
        except (httpx.TransportError, RuntimeError) as e:  # RuntimeError: the client was closed (cancel)
            if self._cancelled.is_set():
                raise _Abort("cancelled", retry=False) from None
            raise _Abort(f"{type(e).__name__}: {e}", retry=True) from None
        try:
            raw = self._read_body(response, left)
        finally:
            response.close()
        status = response.status_code
        text = raw.decode("utf-8", errors="replace")
        if status in RETRY_STATUSES:
            raise _Abort(f"HTTP {status}: {_snippet(text)}", retry=True)
        if status >= 400:
            raise _Abort(f"{self.url} answered HTTP {status}: {_snippet(text)}", retry=False)
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise _Abort(
                f"{self.url} answered HTTP {status} with a body that is not JSON: {_snippet(text)}", retry=False
            ) from None

    def _read_body(self, response: httpx.Response, left: Callable[[], float]) -> bytearray:
        """The whole body, inflated here in bounded steps, within the deadline and the size cap."""
        cap = self.max_response_bytes
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "x-gzip"):
            inflater: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            inflater = zlib.decompressobj()
        elif encoding in ("identity", ""):
            inflater = None
        else:
            raise _Abort(f"{self.url} answered with Content-Encoding {encoding!r} (gzip or deflate only)", retry=False)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _Abort(self._too_big(f"Content-Length {int(declared)}"), retry=False)
        out = bytearray()
        received = 0
        try:
            for chunk in response.iter_raw(CHUNK):  # as received: each socket read is bounded by the time left
                left()
                received += len(chunk)
                if received > cap:
                    raise _Abort(self._too_big(f"more than {cap} bytes received"), retry=False)
                if inflater is None:
                    out += chunk
                else:
                    data = chunk
                    while data:
                        out += inflater.decompress(data, min(cap + 1 - len(out), INFLATE_STEP))
                        if len(out) > cap:
                            raise _Abort(self._too_big("the reply inflates past it"), retry=False)
                        data = inflater.unconsumed_tail
                        left()
                if len(out) > cap:
                    raise _Abort(self._too_big(f"more than {cap} bytes"), retry=False)
            if inflater is not None:
                out += inflater.flush()
                if len(out) > cap:
                    raise _Abort(self._too_big("the reply inflates past it"), retry=False)
        except httpx.TimeoutException:
            raise _Abort(self._timeout_message(), retry=True) from None
        except zlib.error as e:
            raise _Abort(f"{self.url} sent a {encoding} body that does not decompress: {e}", retry=False) from None
        except (httpx.TransportError, RuntimeError) as e:
            if self._cancelled.is_set():
                raise _Abort("cancelled", retry=False) from None
            raise _Abort(f"{type(e).__name__} while reading the reply: {e}", retry=True) from None
        return out  # json.loads reads a bytearray: no second copy of a large reply

    def _too_big(self, what: str) -> str:
        return (
            f"{self.url}: the reply is over max_response_mb ({self.max_response_bytes / 2**20:g} MiB): {what}; "
            "raise max_response_mb if it is really that large"
        )

    def _parse(self, batch: list[Query], reply: Any) -> dict[str, list[tuple[str, float]]]:
        """The ``results`` of one reply, checked against the wire format; every asked query must be there."""

        def bad(what: str) -> RetrieverError:
            return RetrieverError(f"{self.url} answered in the wrong shape: {what} (reply: {_snippet(reply)})")

        results = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(results, dict):
            raise bad('expected {"results": {query_id: [{"id": ..., "score": ...}, ...]}}')
        asked = {q.id for q in batch}
        out: dict[str, list[tuple[str, float]]] = {}
        for qid, hits in results.items():
            if qid not in asked:
                raise bad(f"results for query {qid!r}, which this request did not ask")
            if not isinstance(hits, list):
                raise bad(f"query {qid!r}: expected a list of {{id, score}}, got {type(hits).__name__}")
            ranking: list[tuple[str, float]] = []
            for pos, hit in enumerate(hits):
                if not isinstance(hit, dict) or "id" not in hit or "score" not in hit:
                    raise bad(f'query {qid!r}, hit {pos}: expected {{"id": ..., "score": ...}}, got {hit!r}')
                doc, score = hit["id"], hit["score"]
                if not isinstance(doc, (str, int)) or isinstance(doc, bool):
                    raise bad(f"query {qid!r}, hit {pos}: id {doc!r} is not a string")
                if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                    raise bad(f"query {qid!r}, doc {doc!r}: score {score!r} is not a finite number")
                ranking.append((str(doc), float(score)))
            out[qid] = ranking
        missing = [q.id for q in batch if q.id not in out]
        if missing:
            raise bad(f"no results for query {missing[0]!r} ({len(missing)} missing; send [] when nothing matches)")
        return out


def _snippet(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"
