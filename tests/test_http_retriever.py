"""``type: http``: a real server on 127.0.0.1 (ephemeral port) in a thread; every request is counted,
so retry loops are shown to be bounded."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from harness import benchmark
from harness.errors import RetrieverError
from harness.model import Query
from harness.registry import BuildContext
from retrievers.http import HttpRetriever, HttpSpec
from tests.conftest import LocalServer, send_json

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

Behaviour = Callable[[dict[str, Any], int], tuple[int, bytes]]


def ranking_for(text: str) -> list[dict[str, Any]]:
    """A deterministic ranking derived from the query text (so every batch is checkable)."""
    n = len(text)
    return [{"id": f"d{(n + i) % 6 + 1}", "score": 1.0 / (i + 1) + n * 1e-3} for i in range(3)]


def answer(payload: dict[str, Any], _: int) -> tuple[int, bytes]:
    results = {q["id"]: ranking_for(q["text"])[: payload["k"]] for q in payload["queries"]}
    return 200, json.dumps({"results": results}).encode()


class Service(LocalServer):
    def __init__(self) -> None:
        super().__init__(Handler)
        self.behaviour: Behaviour = answer
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Service

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append((dict(self.headers), payload))
            n = len(self.server.requests)
        status, body = self.server.behaviour(payload, n)
        with suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            send_json(self, body, status)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[Service]:
    server = Service()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def queries(n: int) -> list[Query]:
    return [Query(id=f"q{i:02d}", text="x" * (i + 1)) for i in range(n)]


def retriever(url: str, **kw: Any) -> HttpRetriever:
    spec = HttpSpec.model_validate({"type": "http", "url": url, "backoff_s": 0.01, **kw})
    return spec.build(BuildContext(cache_dir=".", show_progress=False))


def test_batches_concurrency_and_order(service: Service) -> None:
    # later batches answer first: the result must still follow the query order
    def slow_first(payload: dict[str, Any], n: int) -> tuple[int, bytes]:
        time.sleep(0.05 if payload["queries"][0]["id"] == "q00" else 0)
        return answer(payload, n)

    service.behaviour = slow_first
    r = retriever(service.url, batch_size=4, concurrency=3, headers={"Authorization": "Bearer t0k"})
    qs = queries(10)
    out = r.search(qs, 2)
    assert list(out) == [q.id for q in qs]
    assert out == {q.id: [(h["id"], h["score"]) for h in ranking_for(q.text)[:2]] for q in qs}
    sizes = sorted(len(p["queries"]) for _, p in service.requests)
    assert sizes == [2, 4, 4]
    assert all(p["k"] == 2 for _, p in service.requests)
    assert all(h.get("Authorization") == "Bearer t0k" for h, _ in service.requests)
    assert "t0k" not in json.dumps(r.params()), "header values must not be recorded"


def test_retries_then_succeeds(service: Service) -> None:
    service.behaviour = lambda payload, n: (503, b"warming up") if n <= 2 else answer(payload, n)
    out = retriever(service.url, retries=2).search(queries(1), 3)
    assert len(service.requests) == 3
    assert out["q00"]


def test_500_gives_up_after_retries(service: Service) -> None:
    service.behaviour = lambda payload, n: (500, b'{"detail": "index shard 3 is gone"}')
    with pytest.raises(RetrieverError) as e:
        retriever(service.url, retries=2).search(queries(1), 3)
    assert len(service.requests) == 3, "retries + 1 attempts, no more"
    message = str(e.value)
    assert service.url in message and "HTTP 500" in message and "index shard 3 is gone" in message


def test_client_error_is_not_retried(service: Service) -> None:
    service.behaviour = lambda payload, n: (404, b"no such endpoint")
    with pytest.raises(RetrieverError, match="HTTP 404: no such endpoint"):
        retriever(service.url, retries=5).search(queries(1), 3)
    assert len(service.requests) == 1


def test_timeout_is_retried_and_bounded(service: Service) -> None:
    def too_slow(payload: dict[str, Any], n: int) -> tuple[int, bytes]:
        time.sleep(0.5)
        return answer(payload, n)

    service.behaviour = too_slow
    with pytest.raises(RetrieverError, match=r"failed 2 times; last: no reply within 0.1 s"):
        retriever(service.url, timeout_s=0.1, retries=1).search(queries(1), 3)
    assert len(service.requests) == 2


def test_connection_refused() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/search"
    with pytest.raises(RetrieverError, match=r"failed 3 times; last: ConnectError: .* \(is the service running\?\)"):
        retriever(url, retries=2).search(queries(1), 3)


@pytest.mark.parametrize(
    "body, pattern",
    [
        (b"<html>oops</html>", r"not JSON: <html>oops</html>"),
        (b'{"hits": []}', r'wrong shape: expected \{"results"'),
        (b'{"results": []}', r'wrong shape: expected \{"results"'),
        (b'{"results": {"q00": {"id": "d1"}}}', r"query 'q00': expected a list of \{id, score\}, got dict"),
        (b'{"results": {"q00": [["d1", 1.0]]}}', r"query 'q00', hit 0: expected \{\"id\""),
        (b'{"results": {"q00": [{"id": "d1"}]}}', r"query 'q00', hit 0"),
        (b'{"results": {"q00": [{"id": "d1", "score": NaN}]}}', r"doc 'd1': score nan is not a finite number"),
        (b'{"results": {"q00": [{"id": "d1", "score": "1"}]}}', r"score '1' is not a finite number"),
        (b'{"results": {"q00": [{"id": null, "score": 1}]}}', r"id None is not a string"),
        (b'{"results": {}}', r"no results for query 'q00'"),
        (b'{"results": {"q00": [], "q99": []}}', r"query 'q99', which this request did not ask"),
    ],
)
def test_wrong_shapes(service: Service, body: bytes, pattern: str) -> None:
    service.behaviour = lambda payload, n: (200, body)
    with pytest.raises(RetrieverError, match=pattern) as e:
        retriever(service.url).search(queries(1), 3)
    assert service.url in str(e.value)
    assert len(service.requests) == 1, "a wrong answer is not retried"


def test_spec_validation() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        HttpSpec.model_validate({"type": "http", "url": "http://x", "batch_size": 0})
    with pytest.raises(ValueError, match="url"):
        HttpSpec.model_validate({"type": "http"})
    # the URL is checked with the config (syntax only), before any retriever runs
    for bad in ("ftp://x", "http://", "http://host:notaport/x", "http://a b/"):
        with pytest.raises(ValueError, match="url"):
            HttpSpec.model_validate({"type": "http", "url": bad})


def test_in_a_benchmark_a_failing_service_fails_only_itself(service: Service, tiny_dataset) -> None:
    good = Service()
    threading.Thread(target=good.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        service.behaviour = lambda payload, n: (502, b"bad gateway")
        results = benchmark(
            tiny_dataset,
            {
                "bm25": {"type": "bm25"},
                "down": {"type": "http", "url": service.url, "retries": 1, "backoff_s": 0.01},
                "up": {"type": "http", "url": good.url, "batch_size": 2},
            },
            metrics=["ndcg@10"],
            depth=10,
            latency_queries=2,
            show_progress=False,
        )
    finally:
        good.shutdown()
        good.server_close()
    assert set(results.summary) == {"bm25", "up"}
    assert "HTTP 502" in results.failures["down"] and service.url in results.failures["down"]
    assert len(service.requests) == 2
