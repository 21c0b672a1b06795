"""Cost measurement: wall time, peak resident memory, latency percentiles (bm25s's benchmark
helper, generalised). Latency comes from single-query calls after a warm-up; throughput from the
batched call, so neither flatters the other."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil


@dataclass
class Measurement:
    seconds: float = 0.0
    peak_rss_mb: float = 0.0


class _PeakSampler(threading.Thread):
    def __init__(self, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process()
        self.interval = interval
        self.peak = self.proc.memory_info().rss
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        return self.peak


@contextmanager
def measure() -> Iterator[Measurement]:
    """Time a block and sample the process's peak RSS while it runs."""
    m = Measurement()
    sampler = _PeakSampler()
    sampler.start()
    t0 = time.perf_counter()
    try:
        yield m
    finally:
        m.seconds = time.perf_counter() - t0
        m.peak_rss_mb = sampler.stop() / 2**20


def time_each(fn: Callable[[int], object], n: int, after: Callable[[int], object] | None = None) -> np.ndarray:
    """Seconds of ``fn(i)`` for i in range(n), each timed alone; ``after(i)`` (progress) runs outside the timing."""
    out = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out[i] = time.perf_counter() - t0
        if after is not None:
            after(i)
    return out


@dataclass
class Cost:
    """One component's own cost; composed components add their parts' (see ``total``)."""

    index_seconds: float = 0.0
    search_seconds: float = 0.0
    n_queries: int = 0
    latencies_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    peak_rss_mb: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Everything, latencies included, so a stored run's cost re-enters a later summary
        exactly (``--resume`` gives the same table as one uninterrupted run)."""
        return {
            "index_seconds": self.index_seconds,
            "search_seconds": self.search_seconds,
            "n_queries": self.n_queries,
            "latencies_s": self.latencies_s.tolist(),
            "peak_rss_mb": self.peak_rss_mb,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cost:
        return cls(
            index_seconds=float(data.get("index_seconds", 0.0)),
            search_seconds=float(data.get("search_seconds", 0.0)),
            n_queries=int(data.get("n_queries", 0)),
            latencies_s=np.asarray(data.get("latencies_s", []), dtype=np.float64),
            peak_rss_mb=float(data.get("peak_rss_mb", 0.0)),
            extra=dict(data.get("extra") or {}),
        )

    @staticmethod
    def total(own: list[Cost], n_queries: int) -> dict[str, float]:
        """Efficiency of a pipeline from the costs of every component it runs (each counted once):
        index time and batched search time add up; per-query latency adds up query by query (the
        same sample of queries is timed for every component); memory is the largest peak."""
        index_s = sum(c.index_seconds for c in own)
        search_s = sum(c.search_seconds for c in own)
        lat = [c.latencies_s for c in own if c.latencies_s.size]
        per_query = np.sum(np.vstack(lat), axis=0) if lat and len({x.size for x in lat}) == 1 else np.zeros(0)
        out = {
            "index_seconds": index_s,
            "search_seconds": search_s,
            "latency_ms_p50": float(np.percentile(per_query, 50) * 1000) if per_query.size else None,
            "latency_ms_p95": float(np.percentile(per_query, 95) * 1000) if per_query.size else None,
            "latency_ms_p99": float(np.percentile(per_query, 99) * 1000) if per_query.size else None,
            "qps": (n_queries / search_s) if search_s > 0 else None,
            "peak_rss_mb": max((c.peak_rss_mb for c in own), default=0.0),
        }
        for c in own:
            for key, value in c.extra.items():
                have = out.get(key)
                if value is None and key in out:
                    continue  # a component that does not do this work (bm25 embeds nothing) hides no figure
                if key.endswith("_seconds") and isinstance(have, (int, float)) and isinstance(value, (int, float)):
                    out[key] = have + value  # work of several components adds up, as index time does
                else:
                    out[key] = value
        if out.get("precomputed"):  # a run file's lookup is not the search that made its rankings: no figure
            for key in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99", "qps"):
                out[key] = None
        return out
