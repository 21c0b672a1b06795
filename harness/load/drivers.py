"""Load generators: a closed loop (N clients, each waits for its answer) and an open loop (Poisson
arrivals at a fixed rate, latency from each request's *scheduled* send time).

Why two: a closed loop measures what a retriever sustains with N requests in flight (throughput and
latency at that concurrency, Little's law: ``in flight = QPS x latency``). It cannot show overload:
when the service stalls, its clients stall with it and stop sending, so the requests that would have
waited are never issued and never timed ("coordinated omission"). An open loop keeps sending on
schedule whatever the service does; each latency runs from when the request *should* have gone out,
so a backlog shows as latency that grows for as long as the overload lasts.

Both take ``send(query)``: one request, raising on failure (:class:`TimeoutError`, or an error whose
message says the request timed out, counts as a timeout; anything else as an error). Latencies are
``time.perf_counter`` seconds; percentiles are exact (numpy over every latency; at a few thousand
requests per level no histogram is needed).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import psutil

#: what a timed-out request's error message says (the http retriever's, socket timeouts, ...)
TIMEOUT_WORDS = ("timed out", "timeout", "no reply within")


@dataclass
class Level:
    """One load level: what was offered and what came back.

    ``qps`` counts successful answers per second of the measurement window. Latency percentiles are
    over answered requests and timeouts (a timeout enters at the time it was given up on, a lower
    bound, so overload is never hidden by dropping the slowest requests); fast errors are left out
    of them (a service that fails at once must not look fast) and counted in ``errors``.
    """

    mode: str  # "closed" or "open"
    concurrency: int | None = None
    rate: float | None = None
    duration_s: float = 0.0
    requests: int = 0
    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    qps: float = 0.0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    #: process CPU seconds per wall second while the level ran (in-process retrievers: cores used)
    cpu_cores: float | None = None
    first_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.mode == "closed":
            out.pop("rate")
        else:
            out.pop("concurrency")
        if not self.extra:
            out.pop("extra")
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
    if isinstance(error, TimeoutError):
        return True
    text = str(error).lower()
    return any(w in text for w in TIMEOUT_WORDS)


class _Cpu:
    """Process CPU seconds over a wall interval (user + system, every thread)."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        t = self.proc.cpu_times()
        self.cpu0, self.wall0 = t.user + t.system, time.perf_counter()

    def cores(self) -> float:
        t = self.proc.cpu_times()
        wall = time.perf_counter() - self.wall0
        return (t.user + t.system - self.cpu0) / wall if wall > 0 else 0.0


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
    arrives, for ``warmup_s`` (not recorded) then ``duration_s``.

    Counted: requests *sent* inside the window; ``qps`` is the answers that arrived inside the
    window per second. A request answered later than ``timeout_s`` counts as a timeout (its latency
    still enters the percentiles); one still in flight ``timeout_s`` after the window is abandoned
    (its thread is a daemon) and counted as a timeout.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    order = query_order(len(queries), 1 << 16, seed)
    lock = threading.Lock()
    counter = [0]
    start = time.perf_counter() + 0.01
    t0 = start + warmup_s
    t_end = t0 + duration_s
    # per client: (sent, done, ok, error) rows; lists owned by one thread each, merged at the end
    records: list[list[tuple[float, float, int, str | None]]] = [[] for _ in range(concurrency)]
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
            status, err = 0, None
            try:
                send(q)
            except Exception as e:
                status, err = (2 if is_timeout(e) else 1), f"{type(e).__name__}: {e}"
            done = time.perf_counter()
            inflight[c] = None
            if status == 0 and timeout_s is not None and done - sent > timeout_s:
                status = 2  # answered, but later than a caller would have waited
            if sent >= t0:
                mine.append((sent, done, status, err))

    threads = [
        threading.Thread(target=client, args=(c,), daemon=True, name=f"harness-load-{c}") for c in range(concurrency)
    ]
    while time.perf_counter() < start:
        time.sleep(0.001)
    cpu: _Cpu | None = None
    for t in threads:
        t.start()
    time.sleep(max(0.0, t0 - time.perf_counter()))
    cpu = _Cpu()
    grace = t_end + (timeout_s if timeout_s is not None else 60.0)
    for t in threads:
        t.join(max(0.0, grace - time.perf_counter()))
    cores = cpu.cores()
    now = time.perf_counter()
    rows = [r for rs in records for r in rs]
    stuck = [s for s in inflight if s is not None and s >= t0]
    sent = np.array([r[0] for r in rows]) if rows else np.zeros(0)
    done = np.array([r[1] for r in rows]) if rows else np.zeros(0)
    status = np.array([r[2] for r in rows], dtype=np.int64) if rows else np.zeros(0, dtype=np.int64)
    lat = np.concatenate([done - sent, [now - s for s in stuck]]) if stuck else done - sent
    counted = np.concatenate([status != 1, np.ones(len(stuck), dtype=bool)]) if stuck else status != 1
    ok_in_window = int(((status == 0) & (done <= t_end)).sum())
    errors = [r[3] for r in rows if r[2] == 1]
    level = Level(
        mode="closed",
        concurrency=concurrency,
        duration_s=duration_s,
        requests=len(rows) + len(stuck),
        ok=int((status == 0).sum()),
        errors=int((status == 1).sum()),
        timeouts=int((status == 2).sum()) + len(stuck),
        qps=ok_in_window / duration_s if duration_s > 0 else 0.0,
        cpu_cores=cores,
        first_error=errors[0] if errors else next((r[3] for r in rows if r[3]), None),
        **percentiles_ms(lat[counted]),
    )
    return level


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
                status[i] = 2 if is_timeout(e) else 1
                if status[i] == 1 and not first_error:
                    first_error.append(f"{type(e).__name__}: {e}")
            done[i] = time.perf_counter()
            if status[i] == 0 and timeout_s is not None and done[i] - abs_sched[i] > timeout_s:
                status[i] = 2  # answered, but later than a caller would have waited

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
    lat = np.where(unfinished, now - abs_sched, done - abs_sched)
    counted = status != 1
    answered = (status == 0) & ~unfinished
    last = float(np.nanmax(done[answered])) if answered.any() else now
    window = max(last - start, duration_s) if answered.any() else duration_s
    return Level(
        mode="open",
        rate=float(rate),
        duration_s=duration_s,
        requests=n,
        ok=int(answered.sum()),
        errors=int((status == 1).sum()),
        timeouts=int((status == 2).sum()),
        qps=float(answered.sum()) / window if window > 0 else 0.0,
        cpu_cores=cores,
        first_error=first_error[0] if first_error else None,
        extra={"workers": workers},
        **percentiles_ms(lat[counted]),
    )
