"""``type: http`` (:mod:`retrievers.http`) against a real server on 127.0.0.1: a service that
trickles its reply, one that never answers, a gzip bomb, secrets in headers; and the process always
exits (scenarios run in a child interpreter under a hard timeout)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from harness import benchmark
from harness.config import load_config
from harness.errors import RetrieverError
from harness.model import Query
from harness.registry import BuildContext
from retrievers.http import HttpRetriever, HttpSpec
from tests.conftest import LocalServer, run_harness

REPO = Path(__file__).resolve().parent.parent


class Server(LocalServer):
    def __init__(self, handle: Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]) -> None:
        super().__init__(Handler)
        self.handle_post = handle
        self.stop = threading.Event()
        self.sent = 0
        self.headers_seen: list[dict[str, str]] = []


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.headers_seen.append(dict(self.headers))
        with suppress(BrokenPipeError, ConnectionResetError):  # the client gave up: what these tests want
            self.server.handle_post(self, payload)

    def log_message(self, *args: object) -> None:
        pass


def answer(payload: dict[str, Any]) -> bytes:
    return json.dumps({"results": {q["id"]: [{"id": "d1", "score": 1.0}] for q in payload["queries"]}}).encode()


def trickle(h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
    """A valid reply, one byte every 0.2 s (a whole minute for this body)."""
    body = answer(payload).ljust(300)
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.flush()
    for i in range(len(body)):
        if h.server.stop.wait(0.2):
            return
        h.wfile.write(body[i : i + 1])
        h.wfile.flush()
        h.server.sent += 1


def hang(h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
    """Reads the request, never answers."""
    h.server.stop.wait(600)


def ok(h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
    body = answer(payload)
    h.send_response(200)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@cache
def gzip_bomb() -> bytes:
    """About 4 MB of gzip that inflates to 4 GiB of zeros (a valid member: header, deflate, CRC, size).
    After a full flush deflate starts afresh, so one compressed MiB repeats byte for byte."""
    mib = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    c.compress(mib)
    c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(4096):
        crc = zlib.crc32(mib, crc)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + block * 4096 + c.flush() + struct.pack("<II", crc, 0)


def small_bomb() -> bytes:
    """64 MiB of zeros in ~64 kB of gzip."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(bytes(64 << 20)) + c.flush()


def sender(body: bytes, encoding: str = "gzip") -> Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]:
    def send(h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", encoding)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for i in range(0, len(body), 1 << 16):
            if h.server.stop.is_set():
                return
            h.wfile.write(body[i : i + (1 << 16)])
            h.server.sent += min(1 << 16, len(body) - i)

    return send


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(handle: Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]) -> Server:
        s = Server(handle)
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop.set()
        s.shutdown()
        s.server_close()


def build(url: str, **kw: Any) -> HttpRetriever:
    spec = HttpSpec.model_validate({"type": "http", "url": url, "retries": 0, **kw})
    return spec.build(BuildContext(cache_dir=".", show_progress=False))


QS = [Query(id="q1", text="hello")]


# --------------------------------------------------------------------------- deadlines
def test_trickling_reply_fails_at_the_total_deadline(serve) -> None:
    s = serve(trickle)
    with pytest.raises(RetrieverError, match=r"no reply within 1 s \(timeout_s: the total time"):
        build(s.url, timeout_s=1).search(QS, 3)
    assert s.sent < 300, "gave up while the service was still trickling (a per-read timeout never would)"


def test_hanging_service_fails_at_the_deadline_and_retries_are_bounded(serve) -> None:
    s = serve(hang)
    with pytest.raises(RetrieverError, match=r"failed 2 times; last: no reply within 0.5 s"):
        build(s.url, timeout_s=0.5, retries=1, backoff_s=0).search(QS, 3)
    assert len(s.headers_seen) == 2


def test_cancel_aborts_in_flight_requests_and_later_calls(serve) -> None:
    s = serve(hang)
    r = build(s.url, timeout_s=300, batch_size=1, concurrency=4)
    threading.Timer(0.5, r.cancel).start()
    with pytest.raises(RetrieverError, match="cancelled"):
        r.search([Query(id=f"q{i}", text="x") for i in range(8)], 3)
    with pytest.raises(RetrieverError, match="cancelled"):
        r.search(QS, 3)
    assert r._cancelled.is_set()


# --------------------------------------------------------------------------- size caps
def test_gzip_reply_inflating_past_the_cap_fails(serve) -> None:
    s = serve(sender(small_bomb()))
    with pytest.raises(RetrieverError, match=r"over max_response_mb \(1 MiB\): the reply inflates past it"):
        build(s.url, max_response_mb=1).search(QS, 3)


def test_plain_reply_over_the_cap_fails(serve) -> None:
    s = serve(sender(b" " * (2 << 20), encoding="identity"))
    with pytest.raises(RetrieverError, match=r"over max_response_mb \(1 MiB\): Content-Length"):
        build(s.url, max_response_mb=1).search(QS, 3)


def test_gzip_reply_under_the_cap_is_read(serve) -> None:
    s = serve(lambda h, p: sender(zlib.compress(answer(p), wbits=31))(h, p))
    assert build(s.url).search(QS, 3) == {"q1": [("d1", 1.0)]}
    s2 = serve(lambda h, p: sender(zlib.compress(answer(p)), encoding="deflate")(h, p))
    assert build(s2.url).search(QS, 3) == {"q1": [("d1", 1.0)]}


def test_unknown_content_encoding_is_refused(serve) -> None:
    s = serve(sender(b"{}", encoding="br"))
    with pytest.raises(RetrieverError, match="Content-Encoding 'br'"):
        build(s.url).search(QS, 3)


# --------------------------------------------------------------------------- the process exits
def run_script(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A scenario in its own interpreter: a hang here is a test failure (TimeoutExpired), not a stuck suite."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
    )


@pytest.mark.slow
def test_4gib_gzip_bomb_fails_fast_without_the_memory(serve) -> None:
    s = serve(sender(gzip_bomb()))
    proc = run_script(f"""
        import resource
        from harness.errors import RetrieverError
        from harness.model import Query
        from retrievers.http import HttpRetriever
        try:
            HttpRetriever({s.url!r}, retries=0).search([Query(id="q1", text="x")], 3)
        except RetrieverError as e:
            print("ERROR", e)
        # VmHWM: this interpreter's own peak (ru_maxrss survives exec, so it would report the parent's)
        hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
        print("MAXRSS_KB", int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "over max_response_mb (64 MiB)" in proc.stdout, proc.stdout
    maxrss_mb = int(proc.stdout.split("MAXRSS_KB")[1].split()[0]) / 1024
    assert maxrss_mb < 1024, f"peak RSS {maxrss_mb:.0f} MiB: the bomb was inflated in memory"
    assert s.sent < len(gzip_bomb()), "stopped reading at the cap"


@pytest.mark.slow
def test_process_exits_after_a_run_level_timeout_on_a_trickling_service(serve) -> None:
    """Row 3: a benchmark whose http retriever trickles, with a run-level timeout_s: the row fails,
    bm25's stays, and the interpreter exits (no worker thread joined at shutdown)."""
    s = serve(trickle)
    proc = run_script(f"""
        from harness import benchmark
        res = benchmark("demo", {{"bm25": {{"type": "bm25"}},
                                  "slow": {{"type": "http", "url": {s.url!r}, "timeout_s": 300, "batch_size": 1}}}},
                        metrics=["ndcg@10"], depth=10, latency_queries=1, timeout_s=20, show_progress=False)
        print("SUMMARY", sorted(res.summary))
        print("FAILURE", res.failures.get("slow"))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SUMMARY ['bm25']" in proc.stdout, proc.stdout
    assert "FAILURE" in proc.stdout and "None" not in proc.stdout.split("FAILURE")[1], proc.stdout


def test_process_exits_with_requests_still_in_flight(serve) -> None:
    s = serve(hang)
    proc = run_script(f"""
        import threading
        from harness.model import Query
        from retrievers.http import HttpRetriever
        r = HttpRetriever({s.url!r}, timeout_s=600, retries=0, batch_size=1, concurrency=4)
        t = threading.Thread(target=lambda: r.search([Query(id=f"q{{i}}", text="x") for i in range(8)], 3), daemon=True)
        t.start()
        t.join(1.0)
        print("abandoned", t.is_alive())
    """)
    assert proc.returncode == 0, proc.stderr
    assert "abandoned True" in proc.stdout


# --------------------------------------------------------------------------- secrets
def test_header_values_are_sent_never_written(serve, tiny_dataset, monkeypatch) -> None:
    s = serve(ok)
    token = "Bearer s3cr3t-token-XYZ"
    results = benchmark(
        tiny_dataset,
        {"svc": {"type": "http", "url": s.url, "headers": {"Authorization": token, "X-Team": "search"}}},
        metrics=["ndcg@10"],
        depth=10,
        latency_queries=1,
        show_progress=False,
    )
    assert s.headers_seen and all(h["Authorization"] == token for h in s.headers_seen)
    dumped = results.model_dump_json()
    assert "s3cr3t" not in dumped
    assert '"Authorization":"<set>"' in dumped.replace(" ", "")


def test_env_secret_in_a_config_is_expanded_sent_and_never_written(serve, tmp_path, monkeypatch) -> None:
    s = serve(ok)
    monkeypatch.setenv("TEAM_TOKEN", "tok-from-env-9876")
    (tmp_path / "c.yaml").write_text(
        f"retrievers:\n  svc:\n    type: http\n    url: {s.url}\n"
        "    headers: {Authorization: 'Bearer ${TEAM_TOKEN}'}\n"
    )
    cfg = load_config(tmp_path / "c.yaml")
    spec = cfg.specs()["svc"]
    assert spec.reveal()["headers"] == {"Authorization": "Bearer tok-from-env-9876"}
    r = spec.build(BuildContext(cache_dir=tmp_path))
    r.search(QS, 3)
    assert s.headers_seen[-1]["Authorization"] == "Bearer tok-from-env-9876"
    for dump in (cfg.model_dump(mode="json"), spec.model_dump(mode="json"), spec.model_dump(), r.params()):
        assert "tok-from-env" not in json.dumps(dump, default=str), dump
    assert spec.model_dump(mode="json")["headers"] == {"Authorization": "<set>"}


def test_a_service_echoing_the_token_does_not_put_it_in_the_error(serve) -> None:
    def echo(h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        body = f"bad token {h.headers['Authorization']}".encode()
        h.send_response(401)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    s = serve(echo)
    with pytest.raises(RetrieverError) as e:
        build(s.url, headers={"Authorization": "Bearer echo-me-1234"}).search(QS, 3)
    assert "HTTP 401" in str(e.value) and "echo-me-1234" not in str(e.value)


def test_bad_header_values_are_config_errors(tmp_path) -> None:
    (tmp_path / "c.yaml").write_text(
        'retrievers:\n  svc:\n    type: http\n    url: http://127.0.0.1:9/x\n    headers: {Authorization: "a\\nb"}\n'
    )
    with pytest.raises(Exception, match="line break") as e:
        load_config(tmp_path / "c.yaml")
    assert "a\nb" not in str(e.value)


def test_free_port_refuses(serve) -> None:  # a sanity check of the fixtures: nothing listens
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RetrieverError, match="ConnectError"):
        build(f"http://127.0.0.1:{port}/x", timeout_s=5).search(QS, 3)


@pytest.mark.slow
def test_harness_run_writes_no_secret_anywhere(serve, tmp_path) -> None:
    """Row 1 end to end: the token reaches the service, and no file the run writes holds it."""
    s = serve(lambda h, p: ok(h, p))
    token = "tok-e2e-5f1c9a77"
    (tmp_path / "c.yaml").write_text(
        "dataset: demo\nlatency_queries: 2\nretrievers:\n  bm25: {type: bm25}\n"
        f"  svc:\n    type: http\n    url: {s.url}\n    headers: {{Authorization: 'Bearer ${{E2E_TOKEN}}'}}\n"
        "    allow_unknown_docs: true\n"
    )
    proc = run_harness(
        "run", "--config", "c.yaml", "--out", "out", "--no-progress", cwd=tmp_path, env={"E2E_TOKEN": token}
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert s.headers_seen and s.headers_seen[-1]["Authorization"] == f"Bearer {token}"
    assert token not in proc.stdout + proc.stderr
    files = [f for f in (tmp_path / "out").rglob("*") if f.is_file()]
    assert files
    for f in files:
        assert token.encode() not in f.read_bytes(), f
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "${E2E_TOKEN}" in json.dumps(res) or "<set>" in json.dumps(res)
