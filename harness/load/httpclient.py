"""The load client for HTTP services: worker processes, each driving its share of the connections
with one ``epoll`` loop over raw keep-alive sockets.

Why not one pooled ``httpx`` client and a thread per request in flight: against a loopback service
that answers in 0.07 ms, that client reached ~2,300 queries/s at concurrency 1 and *fell* to ~1,300
at 16 (its threads take turns on the GIL, and each request costs ~0.5 ms of Python), so a fast
vector database would have been reported at the harness's speed. Here a request costs one
``send``, one ``recv``, a look-up of the reply's head and a check of its JSON (about 10 us of CPU
against nginx; a head or body byte-identical to the last one is not parsed again, see
:class:`ReplyCheck`), and the connections are spread over one process per core, so the client's
ceiling sits well above the rates asked of a vector database (docs/load.md has the figures against
nginx and wrk).

Each worker measures its own CPU time over the measured window; :func:`client_load` turns that into
the client's CPU share and its CPU time per request, so a level where the client, not the service,
was the limit says so (``client.saturated``) instead of printing the client's ceiling as the
service's.

Outcomes are classified by kind, never by message text: a request with no complete reply within
``timeout_s`` (the client gives up and closes the connection) is a timeout; a reply other than 200,
a reply that is not JSON or lacks the query's results, and a connection refused or closed before
the reply are errors, counted per kind. ``https`` URLs are not handled here (the threaded ``httpx``
client drives them; :func:`supports`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from harness.load.drivers import Level, open_window, poisson_schedule, query_order, summarise, summarise_closed

OK, ERROR, TIMEOUT = 0, 1, 2
#: a level where the client's processes used this share of their cores, or more, was client-bound
SATURATED_CPU = 0.90
#: ... or where the client's own CPU time per request exceeded this share of the mean latency
SATURATED_SHARE = 0.10


def supports(url: str) -> bool:
    """Plain ``http://`` URLs (TLS stays with the threaded httpx client)."""
    return urlsplit(url).scheme == "http"


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and the bytes of each one (pre-encoded once: no per-request encoding)."""

    host: str
    port: int
    requests: tuple[bytes, ...]  # one full HTTP request per query, in query order
    ids: tuple[str, ...]  # the query id each reply must carry results for

    @classmethod
    def build(cls, url: str, headers: dict[str, str], bodies: Sequence[bytes], ids: Sequence[str]) -> Endpoint:
        parts = urlsplit(url)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = host if parts.port is None else f"{host}:{port}"
        fixed = {"Host": netloc, "Content-Type": "application/json", "Connection": "keep-alive", **headers}
        head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items() if k.lower() != "content-length")
        reqs = tuple(
            f"POST {target} HTTP/1.1\r\n{head}Content-Length: {len(b)}\r\n\r\n".encode("latin-1") + b for b in bodies
        )
        return cls(host, port, reqs, tuple(ids))


class BadReply(Exception):
    """The reply is not HTTP/1.x as this client reads it."""


#: parsed reply heads kept (a service's heads repeat: only its Date line changes, once a second)
_HEADS_KEPT = 64
_heads: dict[bytes, tuple[int, int | None, bool, bool]] = {}


def _parse_head(head: bytes) -> tuple[int, int | None, bool, bool]:
    """``(status, Content-Length or None, chunked, server closes)`` of a reply's head (the bytes
    before its blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0].split(" ", 2)
    if len(first) < 2 or not first[0].startswith("HTTP/1.") or not first[1].isdigit():
        raise BadReply(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    status, close = int(first[1]), first[0] == "HTTP/1.0"
    length, chunked = None, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            if not value.strip().isdigit():
                raise BadReply(f"Content-Length {value.strip()[:40]!r}")
            length = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            close = value.strip().lower() == "close"
    return status, length, chunked, close


def parse_reply(buf: bytes | bytearray, eof: bool = False) -> tuple[int, int, bytes, bool] | None:
    """``(bytes consumed, status, body, server closes)`` of the first complete reply in ``buf``, or
    None while incomplete. Content-Length, chunked, and read-to-close (HTTP/1.0 style) bodies.

    A head is parsed once and its reading kept (by its exact bytes; a head that is not HTTP raises
    every time): a service's heads differ only in their Date line, so the per-request cost is one
    dictionary look-up instead of a line-by-line parse, with the same answer."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end])
    known = _heads.get(head)
    if known is None:
        known = _parse_head(head)
        if len(_heads) >= _HEADS_KEPT:
            _heads.clear()
        _heads[head] = known
    status, length, chunked, close = known
    start = end + 4
    if chunked:
        body, pos = bytearray(), start
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            try:
                size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
            except ValueError:
                raise BadReply("bad chunk size") from None
            if size == 0:
                trailer = buf.find(b"\r\n\r\n", eol)
                if trailer < 0:
                    return None
                return trailer + 4, status, bytes(body), close
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2 : eol + 2 + size]
            pos = eol + 2 + size + 2
    if length is not None:
        if len(buf) < start + length:
            return None
        return start + length, status, bytes(buf[start : start + length]), close
    if not eof:
        return None
    return len(buf), status, bytes(buf[start:]), True


_NOT_AN_OBJECT = object()  # a body that is not a JSON object (the reading a ReplyCheck remembers)


class ReplyCheck:
    """:func:`check_reply` with the last body's reading remembered.

    Decoding the reply's JSON was most of the client's CPU per request (90 us of a 3 KB body on a
    busy core), and a service answering from a cache, or a null one, sends byte-identical bodies.
    The body is compared in full with the last one (a ``memcmp``, ~0.1 us; a different body is
    decoded), so a reply that differs in any byte is checked afresh: the verdict is always
    :func:`check_reply`'s."""

    __slots__ = ("body", "results")

    def __init__(self) -> None:
        self.body: bytes | None = None
        self.results: Any = _NOT_AN_OBJECT

    def __call__(self, status: int, body: bytes, qid: str) -> str | None:
        """None for a good reply, else the error's kind."""
        if status != 200:
            return f"HTTP {status}"
        if body != self.body:
            try:
                results = json.loads(body).get("results")
            except (ValueError, AttributeError):
                results = _NOT_AN_OBJECT
            self.body, self.results = body, results
        results = self.results
        if results is _NOT_AN_OBJECT:
            return "reply not a JSON object"
        if not isinstance(results, dict) or qid not in results:
            return "reply without the query's results"
        return None


def check_reply(status: int, body: bytes, qid: str) -> str | None:
    """None for a good reply, else the error's kind."""
    return ReplyCheck()(status, body, qid)


class _Conn:
    __slots__ = ("buf", "deadline", "fd", "qi", "sent", "sock")

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.fd = -1
        self.buf = bytearray()
        self.qi = -1  # query index in flight, -1 when idle
        self.sent = 0.0  # send time (closed loop) or scheduled time (open loop): latency's origin
        self.deadline = 0.0


class _Recorder:
    """Outcomes of one worker's level: window rows as arrays, warm-up ones as counts."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.sent: list[float] = []
        self.done: list[float] = []
        self.status: list[int] = []
        self.kinds: dict[str, int] = {}
        self.first_error: str | None = None
        self.first_is_timeout = False
        self.warm_sent = 0
        self.warm_failed = 0
        self.resolved = 0  # requests finished (recorded) so far, warm-up ones included

    def add(self, sent: float, done: float, status: int, kind: str | None, detail: str | None) -> None:
        self.resolved += 1
        if sent < self.t0:
            self.warm_sent += 1
            self.warm_failed += status != OK
            if status != OK:
                self.kinds.setdefault(f"warm-up: {kind}", 0)
                self.kinds[f"warm-up: {kind}"] += 1
            return
        self.sent.append(sent)
        self.done.append(done)
        self.status.append(status)
        if status != OK:
            key = kind or "error"
            self.kinds[key] = self.kinds.get(key, 0) + 1
            # an error (it says what went wrong) is worth more than a timeout (which only says when)
            if self.first_error is None or (status == ERROR and self.first_is_timeout):
                self.first_error = f"{key}: {detail}" if detail else key
                self.first_is_timeout = status == TIMEOUT

    def result(self, cpu_s: float, wall_s: float) -> dict[str, Any]:
        return {
            "sent": np.asarray(self.sent, dtype=np.float64),
            "done": np.asarray(self.done, dtype=np.float64),
            "status": np.asarray(self.status, dtype=np.int8),
            "kinds": self.kinds,
            "first_error": self.first_error,
            "warm_sent": self.warm_sent,
            "warm_failed": self.warm_failed,
            "cpu_s": cpu_s,
            "wall_s": wall_s,
        }


def _poller() -> tuple[Any, float, int]:
    """``(poller, its timeout unit per second, the readable event)``: ``epoll`` where there is one
    (Linux), else ``poll`` (macOS, the BSDs), whose timeout is in milliseconds."""
    if hasattr(select, "epoll"):
        return select.epoll(), 1.0, select.EPOLLIN
    return select.poll(), 1000.0, select.POLLIN


class _Loop:
    """One worker's connections for one level (closed or open loop), on one ``epoll``.

    Kept off the per-request path: no scan of every connection per wake-up (the idle ones are a
    list, filled as requests finish; timeouts are looked for only once the earliest deadline of a
    request in flight, kept as a lower bound, has passed), no ``selectors`` key objects, and a reply
    that arrives whole is parsed from the bytes ``recv`` returned, without a copy into a buffer."""

    def __init__(self, ep: Endpoint, timeout_s: float, rec: _Recorder, n_conns: int) -> None:
        self.ep, self.timeout_s, self.rec = ep, timeout_s, rec
        self.poll, self.per_s, self.readable_event = _poller()
        self.by_fd: dict[int, _Conn] = {}
        self.conns = [_Conn() for _ in range(n_conns)]
        self.idle = list(self.conns)  # the connections with no request in flight, in no order
        self.due = math.inf  # no request in flight has a deadline earlier than this
        self.check = ReplyCheck()

    def connect(self, c: _Conn) -> None:
        s = socket.create_connection((self.ep.host, self.ep.port), timeout=self.timeout_s)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        c.sock, c.buf, c.fd = s, bytearray(), s.fileno()
        self.by_fd[c.fd] = c
        self.poll.register(c.fd, self.readable_event)

    def drop(self, c: _Conn) -> None:
        if c.sock is not None:
            self.poll.unregister(c.fd)
            del self.by_fd[c.fd]
            c.sock.close()
            c.sock = None

    def send(self, c: _Conn, qi: int, origin: float) -> bool:
        """Send query ``qi`` on idle ``c`` (connecting if needed); False (and the failure recorded)
        when the connection cannot be made or written."""
        c.qi, c.sent, c.deadline = qi, origin, origin + self.timeout_s
        if c.deadline < self.due:
            self.due = c.deadline
        try:
            if c.sock is None:
                self.connect(c)
            c.sock.sendall(self.ep.requests[qi])  # type: ignore[union-attr]  # small: fits the socket buffer
        except TimeoutError:
            self.finish(c, time.perf_counter(), TIMEOUT, "timeout", "connect")
            return False
        except OSError as e:
            self.finish(c, time.perf_counter(), ERROR, type(e).__name__, str(e))
            return False
        return True

    def finish(
        self, c: _Conn, done: float, status: int, kind: str | None, detail: str | None = None, keep: bool = False
    ) -> None:
        """Record ``c``'s request; the connection is kept only after a complete reply (``keep``): a
        timed-out or broken one is closed and the next request opens a new one."""
        self.rec.add(c.sent, done, status, kind, detail)
        c.qi = -1
        self.idle.append(c)
        if not keep:
            self.drop(c)

    def readable(self, c: _Conn, now: float) -> None:
        """Read what arrived on ``c``; a complete reply finishes (records) its request."""
        try:
            data = c.sock.recv(65536)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError as e:
            if c.qi >= 0:
                self.finish(c, now, ERROR, type(e).__name__, str(e))
            else:
                self.drop(c)
            return
        if c.qi < 0:  # the server closed an idle connection (or sent junk): reconnect when next needed
            self.drop(c)
            return
        eof = not data
        if c.buf:
            c.buf += data
            buf: bytes | bytearray = c.buf
        else:
            buf = data  # the usual case: a whole reply in one read, parsed where it lies
        try:
            parsed = parse_reply(buf, eof)
        except BadReply as e:
            self.finish(c, now, ERROR, "bad HTTP reply", str(e))
            return
        if parsed is None:
            if eof:
                self.finish(c, now, ERROR, "connection closed before the reply")
            elif buf is data:
                c.buf += data
            return
        used, status, body, close = parsed
        if buf is c.buf:
            del c.buf[:used]
        elif used < len(buf):  # more than one reply's bytes (a server that sent ahead)
            c.buf += buf[used:]
        kind = self.check(status, body, self.ep.ids[c.qi])
        detail = body[:200].decode("utf-8", "replace") if kind else None
        self.finish(c, now, OK if kind is None else ERROR, kind, detail, keep=not close)

    def expire(self, now: float) -> None:
        """Time out the requests past their deadline (a scan only once the earliest may be)."""
        if now < self.due:
            return
        due = math.inf
        for c in self.conns:
            if c.qi >= 0:
                if now >= c.deadline:
                    self.finish(c, now, TIMEOUT, "timeout", f"no reply within {self.timeout_s:g} s")
                elif c.deadline < due:
                    due = c.deadline
        self.due = due

    def pump(self, until: float) -> None:
        """Wait until a reply arrives, ``until``, or the earliest deadline; read what arrived and
        time out what is overdue. Replies read in one wake-up share its time stamp."""
        wake = until if until < self.due else self.due
        events = self.poll.poll(max(0.0, wake - time.perf_counter()) * self.per_s)
        now = time.perf_counter()
        by_fd = self.by_fd
        for fd, _ in events:
            c = by_fd.get(fd)
            if c is not None:
                self.readable(c, now)
        self.expire(time.perf_counter())

    def busy(self) -> bool:
        """A request is in flight."""
        return len(self.idle) < len(self.conns)

    def close(self) -> None:
        for c in self.conns:
            self.drop(c)
        if hasattr(self.poll, "close"):
            self.poll.close()


def run_closed(
    ep: Endpoint, n_conns: int, order: np.ndarray, t_start: float, t0: float, t_end: float, timeout_s: float
) -> dict[str, Any]:
    """``n_conns`` connections, each sending its next query as soon as its answer arrives, from
    ``t_start``; rows sent from ``t0`` are recorded, none are sent from ``t_end``."""
    rec = _Recorder(t0)
    loop = _Loop(ep, timeout_s, rec, n_conns)
    for c in loop.conns:  # connections are opened before the level, as a warm pool would be
        with contextlib.suppress(OSError):  # the first send tries again, and records the failure
            loop.connect(c)
    queue = order.tolist()
    nq, pos = len(queue), 0
    while time.perf_counter() < t_start:
        time.sleep(min(0.001, max(0.0, t_start - time.perf_counter())))
    cpu0, wall0 = None, None
    clock = time.perf_counter
    while True:
        now = clock()
        if cpu0 is None and now >= t0:
            cpu0, wall0 = time.process_time(), now
        until = now + timeout_s
        if now < t_end:
            until = t_end
            ready, loop.idle = loop.idle, []
            for c in ready:  # each idle connection tries once per wake-up
                loop.send(c, queue[pos % nq], clock())
                pos += 1
            if loop.idle:  # a send failed (and was recorded): try again at once
                until = now
        elif not loop.busy():
            break
        loop.pump(until)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    loop.close()
    if cpu0 is None:
        cpu0, wall0 = cpu1, wall1
    return rec.result(cpu1 - cpu0, wall1 - wall0)  # type: ignore[operator]


def run_open(ep: Endpoint, max_conns: int, sched: np.ndarray, queries: np.ndarray, timeout_s: float) -> dict[str, Any]:
    """Arrivals at absolute times ``sched`` (query ``queries[i]``), sent on at most ``max_conns``
    connections; latency from the scheduled time; an arrival still waiting, or unanswered,
    ``timeout_s`` after its scheduled time is a timeout."""
    rec = _Recorder(-np.inf)
    loop = _Loop(ep, timeout_s, rec, max_conns)
    at, qs = sched.tolist(), queries.tolist()
    n, nxt = len(at), 0
    waiting: deque[int] = deque()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while rec.resolved < n:
        now = time.perf_counter()
        while nxt < n and at[nxt] <= now:
            waiting.append(nxt)
            nxt += 1
        while waiting and now - at[waiting[0]] >= timeout_s:  # waited too long for a connection
            i = waiting.popleft()
            rec.add(at[i], now, TIMEOUT, "timeout", "no free connection in time")
        if waiting and loop.idle:
            ready, loop.idle = loop.idle, []
            for c in ready:  # each idle connection takes at most one arrival per wake-up
                if waiting:
                    i = waiting.popleft()
                    loop.send(c, qs[i], at[i])
                else:
                    loop.idle.append(c)
        until = at[nxt] if nxt < n else now + timeout_s
        if waiting:
            # a send failed (its connection is idle again): the next waiting one goes at once
            until = now if loop.idle else min(until, at[waiting[0]] + timeout_s)
        loop.pump(until)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    loop.close()
    return rec.result(cpu1 - cpu0, wall1 - wall0)


def serve(read_fd: int, write_fd: int) -> None:
    """A worker process's life: receive the endpoint, then run each level it is sent and answer with
    its outcomes, until told to stop (or the parent goes away: end of file)."""
    from multiprocessing.connection import Connection

    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        ep = inbox.recv()
        outbox.send("ready")
        while True:
            msg = inbox.recv()
            if msg is None:
                return
            kind, args = msg
            try:
                outbox.send(("ok", run_closed(ep, *args) if kind == "closed" else run_open(ep, *args)))
            except Exception as e:  # reported in the parent as the level's failure, never a hang
                outbox.send(("failed", f"{type(e).__name__}: {e}"))
    except EOFError:
        return


class ClientPool:
    """``processes`` worker processes (started once per target), each holding the endpoint's requests.

    Workers are plain ``python -m harness.load.httpclient`` children talking over two pipes, not
    ``multiprocessing`` processes: a spawned ``multiprocessing`` child re-imports the caller's main
    script, which breaks any script that calls :func:`~harness.load.run_load` without a
    ``__main__`` guard, and forking a process that holds threads (torch, FAISS) is unsafe."""

    def __init__(self, ep: Endpoint, processes: int | None = None) -> None:
        from multiprocessing.connection import Connection

        self.n = max(1, processes or os.cpu_count() or 1)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.inboxes: list[Connection] = []
        self.outboxes: list[Connection] = []
        # the child imports harness from where this process did (a script may have put it on sys.path)
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)}
        for _ in range(self.n):
            down_r, down_w = os.pipe()
            up_r, up_w = os.pipe()
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.load.httpclient", str(down_r), str(up_w)],
                pass_fds=(down_r, up_w),
                stdin=subprocess.DEVNULL,
                env=env,
            )
            os.close(down_r)
            os.close(up_w)
            self.procs.append(proc)
            self.outboxes.append(Connection(down_w, readable=False))
            self.inboxes.append(Connection(up_r, writable=False))
        for box in self.outboxes:
            box.send(ep)
        for box in self.inboxes:  # started and holding the requests: the first level's clock may start
            if box.recv() != "ready":
                raise RuntimeError("a load client process did not start")

    def _run(self, jobs: list[tuple[str, tuple[Any, ...]]]) -> list[dict[str, Any]]:
        for box, job in zip(self.outboxes, jobs):
            box.send(job)
        out = []
        for box, _ in zip(self.inboxes, jobs):
            try:
                status, res = box.recv()
            except EOFError:
                raise RuntimeError("a load client process exited during the level") from None
            if status != "ok":
                raise RuntimeError(f"load client process failed: {res}")
            out.append(res)
        return out

    def closed(
        self, concurrency: int, order: np.ndarray, warmup_s: float, duration_s: float, timeout_s: float
    ) -> tuple[list[dict[str, Any]], float, float]:
        """Outcomes per worker, and the window's ``t0`` and ``t_end``."""
        w = min(self.n, concurrency)
        t_start = time.perf_counter() + 0.05
        t0 = t_start + warmup_s
        t_end = t0 + duration_s
        jobs = [
            ("closed", (concurrency // w + (i < concurrency % w), order[i::w], t_start, t0, t_end, timeout_s))
            for i in range(w)
        ]
        return self._run(jobs), t0, t_end

    def open(
        self, rate_sched: np.ndarray, queries: np.ndarray, max_conns: int, timeout_s: float
    ) -> tuple[list[dict[str, Any]], float]:
        """Outcomes per worker, and the schedule's start (arrival ``i`` goes to worker ``i mod W``)."""
        w = min(self.n, max_conns)
        start = time.perf_counter() + 0.05
        jobs = [
            ("open", (max_conns // w + (i < max_conns % w), start + rate_sched[i::w], queries[i::w], timeout_s))
            for i in range(w)
        ]
        return self._run(jobs), start

    def close(self) -> None:
        for box in self.outboxes:
            try:
                box.send(None)
                box.close()
            except OSError:
                pass
        for proc, box in zip(self.procs, self.inboxes):
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            box.close()


def client_load(parts: Sequence[dict[str, Any]], requests: int, mean_ms: float | None) -> dict[str, Any]:
    """The client's own load over a level: its worker processes' CPU share (each is one thread, so
    1.0 is a full core) and CPU time per request (user and system: the kernel's loopback work on its
    sends included), and whether it was the bottleneck: a process at >= 90% of its core, or CPU per
    request above 10% of the mean latency (by Little's law the mean, not the median, is what the
    level's throughput is made of)."""
    cpu = sum(p["cpu_s"] for p in parts)
    share = max((p["cpu_s"] / p["wall_s"] for p in parts if p["wall_s"] > 0), default=0.0)
    per_req_ms = cpu / requests * 1000 if requests else None
    why = []
    if share >= SATURATED_CPU:
        why.append(f"a client process used {share:.0%} of its core")
    if per_req_ms is not None and mean_ms and per_req_ms > SATURATED_SHARE * mean_ms:
        why.append(
            f"client CPU {per_req_ms * 1000:.0f} us per request is {per_req_ms / mean_ms:.0%} of the mean latency"
        )
    return {
        "processes": len(parts),
        "cpu_share": share,
        "cpu_us_per_request": None if per_req_ms is None else per_req_ms * 1000,
        "saturated": bool(why),
        "why": "; ".join(why) or None,
    }


def _merge(parts: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int], str | None]:
    """The workers' rows as one level's: sent, done, status, counts per kind, the first error."""
    sent = np.concatenate([p["sent"] for p in parts])
    done = np.concatenate([p["done"] for p in parts])
    status = np.concatenate([p["status"] for p in parts]).astype(np.int64)
    kinds: dict[str, int] = {}
    for p in parts:
        for k, v in p["kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    first = next((p["first_error"] for p in parts if p["first_error"]), None)
    return sent, done, status, kinds, first


class HttpLoad:
    """The closed and open loops of :mod:`harness.load.drivers`, driven by a :class:`ClientPool`
    against one endpoint; each returns the same :class:`~harness.load.drivers.Level`, with the
    client's own load in ``client``."""

    def __init__(self, ep: Endpoint, processes: int | None = None) -> None:
        self.ep = ep
        self.pool = ClientPool(ep, processes)

    def closed_loop(
        self, concurrency: int, duration_s: float, *, warmup_s: float, timeout_s: float, seed: int
    ) -> Level:
        order = query_order(len(self.ep.ids), 1 << 16, seed)
        parts, t0, t_end = self.pool.closed(concurrency, order, warmup_s, duration_s, timeout_s)
        sent, done, status, kinds, first = _merge(parts)
        lv = summarise_closed(
            concurrency, duration_s, t0, t_end, sent, done, status,
            kinds=kinds,
            first_error=first,
            warmup_requests=sum(p["warm_sent"] for p in parts),
            warmup_failed=sum(p["warm_failed"] for p in parts),
        )
        lv.client = client_load(parts, lv.requests, lv.mean_ms)
        return lv

    def open_loop(self, rate: float, duration_s: float, *, seed: int, timeout_s: float, workers: int) -> Level:
        sched = poisson_schedule(rate, duration_s, seed)
        order = query_order(len(self.ep.ids), len(sched), seed + 1)
        parts, start = self.pool.open(sched, order, workers, timeout_s)
        sent, done, status, kinds, first = _merge(parts)
        lv = summarise(
            "open",
            rate=float(rate),
            duration_s=duration_s,
            measured_s=open_window(done - start, duration_s),
            lat=done - sent,
            status=status,
            kinds=kinds,
            first_error=first,
            extra={"workers": workers},
        )
        lv.client = client_load(parts, lv.requests, lv.mean_ms)
        return lv

    def close(self) -> None:
        self.pool.close()


if __name__ == "__main__":  # a worker process (ClientPool starts it)
    from harness.load import httpclient as _module  # the package's copy, whose classes the parent pickled

    _module.serve(int(sys.argv[1]), int(sys.argv[2]))
