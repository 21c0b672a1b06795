"""Load generators: a closed loop (N clients, each waits for its answer) and an open loop (Poisson
arrivals at a fixed rate, latency from each request's *scheduled* send time).

Why two: a closed loop measures what a retriever sustains with N requests in flight (throughput and
latency at that concurrency, Little's law: ``in flight = QPS x latency``). It cannot show overload:
when the service stalls, its clients stall with it and stop sending, so the requests that would have
waited are never issued and never timed ("coordinated omission"). An open loop keeps sending on
schedule whatever the service does; each latency runs from when the request *should* have gone out,
so a backlog shows as latency that grows for as long as the overload lasts.

Both take ``send(query)``: one request, raising on failure. Outcomes are classified by the
exception's kind, never its message: :class:`TimeoutError` (``socket.timeout`` is one; the http
target raises it for its client's timeouts) is a timeout, anything else an error, counted per kind.
Failures (errors and timeouts) are counted apart and left out of the latency percentiles, with
their share shown: a fast 500 must not make a service look fast. Latencies are
``time.perf_counter`` seconds; percentiles are exact (numpy over every answered request's latency).
HTTP services are driven by :mod:`harness.load.httpclient` (worker processes), whose outcomes are
summarised here by the same :func:`summarise`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class Level:
    """One load level: what was offered and what came back.

    ``qps`` counts successful answers per second of the measured window (``measured_s``: from the
    window's start until its last request finished, or its nominal end if later). Latency
    percentiles are over answered requests only; errors and timeouts are counted apart (``errors``,
    ``timeouts``, per kind in ``error_kinds``, their share in ``failed_share``): a service that
    fails at once must not look fast, nor a timeout pass for a latency. Requests sent during the
    level's warm-up are not measured but their failures are counted (``warmup_requests``,
    ``warmup_failed``), so a service that hangs in warm-up does not show as a level with nothing wrong.
    """

    mode: str  # "closed" or "open"
    concurrency: int | None = None
    rate: float | None = None
    duration_s: float = 0.0
    measured_s: float = 0.0
    requests: int = 0
    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    failed_share: float = 0.0
    qps: float = 0.0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    #: process CPU seconds per wall second while the level ran (in-process retrievers: cores used)
    cpu_cores: float | None = None
    first_error: str | None = None
    error_kinds: dict[str, int] = field(default_factory=dict)
    warmup_requests: int = 0
    warmup_failed: int = 0
    #: HTTP targets: the load client's own CPU and whether it, not the service, was the limit
    client: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.mode == "closed":
            out.pop("rate")
        else:
            out.pop("concurrency")
        for key in ("extra", "client"):
            if not out[key]:
                out.pop(key)
        return out

    @property
    def label(self) -> str:
        return f"c={self.concurrency}" if self.mode == "closed" else f"rate={self.rate:g}/s"


def percentiles_ms(latencies_s: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    """p50/p95/p99/max/mean in milliseconds (numpy's linear interpolation); None when empty."""
    lat = np.asarray(latencies_s, dtype=np.float64)
    if not lat.size:
        return dict.fromkeys(("p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms"))
    p50, p95, p99 = np.percentile(lat, [50, 95, 99]) * 1000
    return {
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "max_ms": float(lat.max() * 1000),
        "mean_ms": float(lat.mean() * 1000),
    }


def is_timeout(error: BaseException) -> bool:
    """A timeout is an exception of that kind (whatever its message, or the URL in it, says)."""
    return isinstance(error, TimeoutError)


def kind_of(error: BaseException) -> str:
    """The name an error is counted under: ``timeout``, or the exception's type."""
    return "timeout" if is_timeout(error) else type(error).__name__


def summarise(
    mode: str,
    *,
    duration_s: float,
    measured_s: float,
    lat: np.ndarray,
    status: np.ndarray,
    kinds: dict[str, int],
    first_error: str | None,
    warmup_requests: int = 0,
    warmup_failed: int = 0,
    concurrency: int | None = None,
    rate: float | None = None,
    cpu_cores: float | None = None,
    extra: dict[str, Any] | None = None,
) -> Level:
    """A :class:`Level` from every measured request's latency and status (0 ok, 1 error, 2
    timeout): percentiles over the answered ones, failures counted apart."""
    n = int(status.size)
    ok = status == 0
    n_ok = int(ok.sum())
    return Level(
        mode=mode,
        concurrency=concurrency,
        rate=rate,
        duration_s=duration_s,
        measured_s=measured_s,
        requests=n,
        ok=n_ok,
        errors=int((status == 1).sum()),
        timeouts=int((status == 2).sum()),
        failed_share=(n - n_ok) / n if n else 0.0,
        qps=n_ok / measured_s if measured_s > 0 else 0.0,
        cpu_cores=cpu_cores,
        first_error=first_error,
        error_kinds=dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        warmup_requests=warmup_requests,
        warmup_failed=warmup_failed,
        extra=extra or {},
        **percentiles_ms(lat[ok]),
    )


class _Cpu:
    """Process CPU seconds over a wall interval (user + system, every thread).

    Read from ``CLOCK_PROCESS_CPUTIME_ID`` (``time.process_time``), not ``/proc/<pid>/stat``: the
    kernel rebuilds that file's user and system times from tick samples scaled to the real runtime,
    and over a half-second window their sum jumps (two GIL-bound threads read 1.0 to 1.3 cores there,
    once 4.6 cores on a 2-core machine); the clock is the scheduler's own nanosecond count."""

    def __init__(self) -> None:
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()

    def cores(self) -> float:
        wall = time.perf_counter() - self.wall0
        return (time.process_time() - self.cpu0) / wall if wall > 0 else 0.0


def summarise_closed(
    concurrency: int,
    duration_s: float,
    t0: float,
    t_end: float,
    sent: np.ndarray,
    done: np.ndarray,
    status: np.ndarray,
    **rest: Any,
) -> Level:
    """A closed-loop level from its requests' send and completion times: the measured window runs to
    the later of the level's end and the last completion (a request sent in time is waited for), and a
    request's latency is its completion minus its send. One place for the in-process driver and the
    HTTP client's worker processes, so both report a level the same way."""
    return summarise(
        "closed",
        concurrency=concurrency,
        duration_s=duration_s,
        measured_s=max(t_end, float(done.max()) if done.size else t_end) - t0,
        lat=done - sent,
        status=status,
        **rest,
    )

def query_order(n_queries: int, n: int, seed: int) -> np.ndarray:
    """``n`` query positions drawn uniformly with replacement, seeded: every level and retriever
    gets the same stream."""
    return np.random.default_rng(seed).integers(0, n_queries, size=n)


def closed_loop(
    send: Callable[[Any], Any],
    queries: Sequence[Any],
    concurrency: int,
    duration_s: float,
    *,
    warmup_s: float = 0.0,
    timeout_s: float | None = None,
    seed: int = 0,
) -> Level:
    """``concurrency`` client threads, each sending its next query as soon as the previous answer
    arrives, for ``warmup_s`` (not measured) then ``duration_s``.

    Measured: requests *sent* inside the window; ``qps`` is their answers per second of the measured
    window (until the last of them finished). A request answered later than ``timeout_s`` counts as
    a timeout; one still in flight ``timeout_s`` after the window is abandoned (its thread is a
    daemon) and counted as a timeout (of the warm-up, if it was sent then).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    order = query_order(len(queries), 1 << 16, seed)
    lock = threading.Lock()
    counter = [0]
    start = time.perf_counter() + 0.01
    t0 = start + warmup_s
    t_end = t0 + duration_s
    # per client: (sent, done, status, kind, message) rows; lists owned by one thread each, merged at the end
    records: list[list[tuple[float, float, int, str | None, str | None]]] = [[] for _ in range(concurrency)]
    inflight: list[float | None] = [None] * concurrency

    def client(c: int) -> None:
        mine = records[c]
        while True:
            with lock:
                i = counter[0]
                counter[0] += 1
            sent = time.perf_counter()
            if sent >= t_end:
                return
            inflight[c] = sent
            q = queries[int(order[i % len(order)])]
            status, kind, err = 0, None, None
            try:
                send(q)
            except Exception as e:
                status, kind, err = (2 if is_timeout(e) else 1), kind_of(e), f"{type(e).__name__}: {e}"
            done = time.perf_counter()
            inflight[c] = None
            if status == 0 and timeout_s is not None and done - sent > timeout_s:
                status, kind = 2, "timeout"  # answered, but later than a caller would have waited
            mine.append((sent, done, status, kind, err))

    threads = [
        threading.Thread(target=client, args=(c,), daemon=True, name=f"harness-load-{c}") for c in range(concurrency)
    ]
    while time.perf_counter() < start:
        time.sleep(0.001)
    for t in threads:
        t.start()
    time.sleep(max(0.0, t0 - time.perf_counter()))
    cpu = _Cpu()
    grace = t_end + (timeout_s if timeout_s is not None else 60.0)
    for t in threads:
        t.join(max(0.0, grace - time.perf_counter()))
    cores = cpu.cores()
    now = time.perf_counter()
    all_rows = [r for rs in records for r in rs]
    stuck = [s for s in inflight if s is not None]
    warm = [r for r in all_rows if r[0] < t0]
    rows = [r for r in all_rows if r[0] >= t0] + [(s, now, 2, "timeout", None) for s in stuck if s >= t0]
    warm_failed = sum(r[2] != 0 for r in warm) + sum(s < t0 for s in stuck)
    kinds: dict[str, int] = {}
    for r in rows:
        if r[2]:
            kinds[r[3] or "error"] = kinds.get(r[3] or "error", 0) + 1
    for r in warm:
        if r[2]:
            kinds[f"warm-up: {r[3]}"] = kinds.get(f"warm-up: {r[3]}", 0) + 1
    if any(s < t0 for s in stuck):
        kinds["warm-up: timeout"] = kinds.get("warm-up: timeout", 0) + sum(s < t0 for s in stuck)
    sent = np.array([r[0] for r in rows], dtype=np.float64)
    done = np.array([r[1] for r in rows], dtype=np.float64)
    status = np.array([r[2] for r in rows], dtype=np.int64)
    return summarise_closed(
        concurrency, duration_s, t0, t_end, sent, done, status,
        kinds=kinds,
        first_error=next((r[4] for r in rows if r[2] == 1), None) or next((r[4] or r[3] for r in rows if r[2]), None),
        warmup_requests=len(warm) + sum(s < t0 for s in stuck),
        warmup_failed=warm_failed,
        cpu_cores=cores,
    )


def poisson_schedule(rate: float, duration_s: float, seed: int) -> np.ndarray:
    """Send times (seconds from the start) of a Poisson process at ``rate`` over ``duration_s``:
    exponential gaps, seeded."""
    if rate <= 0:
        raise ValueError("rate must be > 0")
    rng = np.random.default_rng(seed)
    n = int(rate * duration_s * 1.2 + 10 * math.sqrt(rate * duration_s) + 10)
    times = np.cumsum(rng.exponential(1.0 / rate, size=n))
    while times[-1] < duration_s:  # vanishingly rare: draw more
        times = np.concatenate([times, times[-1] + np.cumsum(rng.exponential(1.0 / rate, size=n))])
    return times[times < duration_s]


def open_loop(
    send: Callable[[Any], Any],
    queries: Sequence[Any],
    rate: float,
    duration_s: float,
    *,
    seed: int = 0,
    timeout_s: float | None = 10.0,
    workers: int = 64,
) -> Level:
    """Poisson arrivals at ``rate`` per second for ``duration_s``; ``workers`` threads send them.

    A worker takes the next request in schedule order, waits for its send time (if still ahead) and
    sends it; latency is ``answer time - scheduled send time``, so time a request spent waiting for a
    free worker or a slow service counts. After the last arrival the requests still queued or in
    flight get ``timeout_s`` to finish (bounded duration); the rest are timeouts, at the time they
    had waited by then.
    """
    if workers < 1:
        raise ValueError("workers must be >= 1")
    sched = poisson_schedule(rate, duration_s, seed)
    order = query_order(len(queries), len(sched), seed + 1)
    n = len(sched)
    done = np.full(n, np.nan)
    status = np.zeros(n, dtype=np.int64)
    kind = np.full(n, "", dtype=object)
    first_error: list[str] = []
    lock = threading.Lock()
    counter = [0]
    start = time.perf_counter() + 0.05
    abs_sched = start + sched
    hard_end = start + duration_s + (timeout_s if timeout_s is not None else 60.0)

    def worker() -> None:
        while True:
            with lock:
                i = counter[0]
                counter[0] += 1
            if i >= n:
                return
            wait = abs_sched[i] - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if time.perf_counter() >= hard_end:
                return  # past the drain limit: never sent, a timeout
            try:
                send(queries[int(order[i])])
            except Exception as e:
                status[i], kind[i] = (2 if is_timeout(e) else 1), kind_of(e)
                if status[i] == 1 and not first_error:
                    first_error.append(f"{type(e).__name__}: {e}")
            done[i] = time.perf_counter()
            if status[i] == 0 and timeout_s is not None and done[i] - abs_sched[i] > timeout_s:
                status[i], kind[i] = 2, "timeout"  # answered, but later than a caller would have waited

    threads = [threading.Thread(target=worker, daemon=True, name=f"harness-open-{w}") for w in range(workers)]
    for t in threads:
        t.start()
    cpu = _Cpu()
    for t in threads:
        t.join(max(0.0, hard_end - time.perf_counter()))
    cores = cpu.cores()
    now = time.perf_counter()
    unfinished = np.isnan(done)
    status[unfinished] = 2
    kind[unfinished] = "timeout"
    return summarise(
        "open",
        rate=float(rate),
        duration_s=duration_s,
        measured_s=open_window(done[~unfinished] - start, duration_s),
        lat=np.where(unfinished, now - abs_sched, done - abs_sched),
        status=status,
        kinds={k: int(v) for k, v in zip(*np.unique(kind[status != 0], return_counts=True))},
        first_error=first_error[0] if first_error else None,
        cpu_cores=cores,
        extra={"workers": workers},
    )


def open_window(done_from_start: np.ndarray, duration_s: float) -> float:
    """An open loop's measured window: from the first arrival until the last request finished, or
    the arrivals' span if that is later."""
    return max(float(done_from_start.max()), duration_s) if done_from_start.size else duration_s
