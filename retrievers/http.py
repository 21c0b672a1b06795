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
"""

from __future__ import annotations

import json
import math
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import httpx
from pydantic import Field

from harness.errors import InputError, RetrieverError
from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase

#: Statuses worth retrying: the service is overloaded or restarting, not wrong.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SNIPPET_CHARS = 200


class HttpSpec(SpecBase):
    """A retrieval service over HTTP (POST {queries, k} -> {results}); the service indexes its own corpus."""

    type: Literal["http"] = "http"
    url: str = Field(description="endpoint that answers POST {queries, k}")
    batch_size: int = Field(32, ge=1, description="queries per request")
    timeout_s: float = Field(30.0, gt=0, description="per request")
    retries: int = Field(2, ge=0, description="extra attempts after a connection error, timeout, 429 or 5xx")
    backoff_s: float = Field(0.5, ge=0, description="wait before the first retry; doubles each retry")
    concurrency: int = Field(4, ge=1, description="requests in flight at once")
    headers: dict[str, str] = Field(default_factory=dict, description="sent with every request (auth tokens, ...)")
    allow_unknown_docs: bool = Field(False, description="score doc ids that are not in our corpus (as non-relevant)")

    def build(self, ctx: BuildContext) -> HttpRetriever:
        if not self.url.startswith(("http://", "https://")):
            raise InputError(f"{self.url!r} is not an http:// or https:// URL", field="url")
        return HttpRetriever(**self.model_dump(exclude={"type", "allow_unknown_docs"}))


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
    ) -> None:
        self.name = "http"
        self.url, self.batch_size, self.timeout_s = url, batch_size, timeout_s
        self.retries, self.backoff_s, self.concurrency = retries, backoff_s, concurrency
        self.headers = dict(headers or {})
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def params(self) -> dict[str, Any]:
        # header values may hold secrets: record which headers were sent, not their values
        return {
            "url": self.url,
            "batch_size": self.batch_size,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "concurrency": self.concurrency,
            "headers": sorted(self.headers),
        }

    @property
    def client(self) -> httpx.Client:
        """One pooled client, kept for every call (latency is measured per query: no reconnects)."""
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=self.timeout_s,
                    headers=self.headers,
                    limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
                )
                weakref.finalize(self, self._client.close)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def index(self, corpus: Sequence[Document]) -> None:
        """The service holds its own index."""
        return None

    def search(self, queries: Sequence[Query], k: int) -> dict[str, list[tuple[str, float]]]:
        batches = [list(queries[i : i + self.batch_size]) for i in range(0, len(queries), self.batch_size)]
        if len(batches) <= 1 or self.concurrency == 1:
            replies = [self._post(b, k) for b in batches]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                replies = list(pool.map(lambda b: self._post(b, k), batches))  # map keeps batch order
        out: dict[str, list[tuple[str, float]]] = {}
        for batch, reply in zip(batches, replies):
            out.update(self._parse(batch, reply))
        return out

    # ------------------------------------------------------------------ transport
    def _post(self, batch: list[Query], k: int) -> Any:
        payload = {"queries": [{"id": q.id, "text": q.text} for q in batch], "k": k}
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self.client.post(self.url, json=payload)
            except httpx.TimeoutException:
                last = f"no reply within {self.timeout_s:g} s (timeout_s)"
                continue
            except httpx.ConnectError as e:
                last = f"ConnectError: {e} (is the service running?)"
                continue
            except httpx.TransportError as e:
                last = f"{type(e).__name__}: {e}"
                continue
            if response.status_code in RETRY_STATUSES:
                last = f"HTTP {response.status_code}: {_snippet(response.text)}"
                continue
            if response.status_code >= 400:
                raise RetrieverError(f"{self.url} answered HTTP {response.status_code}: {_snippet(response.text)}")
            try:
                return response.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise RetrieverError(
                    f"{self.url} answered HTTP {response.status_code} with a body that is not JSON: "
                    f"{_snippet(response.text)}"
                ) from None
        tries = self.retries + 1
        raise RetrieverError(f"{self.url} failed {tries} time{'s' if tries > 1 else ''}; last: {last}")

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
