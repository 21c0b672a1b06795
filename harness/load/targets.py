"""What a load level sends requests to: a retriever built and indexed in this process (driven by
threads), or an HTTP service (through one pooled ``httpx`` client, as a real caller would).

An in-process retriever answers on the caller's thread, so N client threads are N requests in
flight only where its search releases the GIL (FAISS, torch, numpy's BLAS, bm25s's numpy kernels);
pure-Python search code takes turns. :func:`gil_probe` measures which it is (throughput at 1 and 2
threads, and the CPU the process used) so the table can say when concurrency figures are bounded
by the interpreter rather than the retriever.

Serving mode: a retriever may define ``serving_mode()``; it is called before any level runs, to turn
off what would flatter repeated queries (``dense`` stops memoising query embeddings: each request
encodes its query, as a real request would).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.efficiency import measure
from harness.errors import InputError, redact_urls
from harness.load.drivers import closed_loop
from harness.model import GoldenDataset, Query
from harness.protocol import Closeable, Retriever, Serving
from harness.registry import BuildContext, SpecBase

#: closed-loop throughput at 2 threads over 1 thread below this: the threads took turns
SCALES_ABOVE = 1.3
#: on a busy machine only this much gain counts as parallel (scheduler shares alone give ~1.3x)
CLEARLY_PARALLEL = 1.7
#: process CPU (cores) at or below this while 2 threads ran: one core's worth, i.e. the GIL
ONE_CORE = 1.15
#: the whole machine's CPU at or above this while 2 threads ran: no free core, nothing to conclude
BUSY_PERCENT = 90.0
#: load client processes for an HTTP service at most (each holds the query set and ~30 MB)
MAX_CLIENT_PROCESSES = 16


@dataclass
class Target:
    """One retriever as a load test sees it: ``send(query)`` answers one query at depth k."""

    name: str
    kind: str  # "in-process" or "http"
    send: Callable[[Query], Any]
    close: Callable[[], None] = lambda: None
    index_seconds: float | None = None
    obj: Any = None
    spec: SpecBase | None = None
    notes: list[str] = field(default_factory=list)
    #: HTTP services: the multi-process load client the levels run on (``send`` serves warm-up)
    load: Any = None


def http_target(name: str, spec: SpecBase, k: int, pool: int, queries: Sequence[Query] = ()) -> Target:
    """POST ``{"queries": [one], "k": k}`` to the spec's URL; a non-200 reply or one without the
    query's results is an error. ``send`` (warm-up, and ``https`` levels) goes through one pooled
    ``httpx`` client of ``pool`` connections; the levels of a plain ``http`` URL run on
    :class:`~harness.load.httpclient.HttpLoad`'s worker processes, so the client is not the limit."""
    import httpx

    from harness.load.httpclient import Endpoint, HttpLoad, supports

    raw = spec.reveal()
    url, headers = raw["url"], dict(raw.get("headers") or {})
    shown = redact_urls(url)  # error messages name the service, never its credentials
    timeout = float(raw.get("timeout_s", 30.0))
    client = httpx.Client(
        timeout=timeout,
        headers=headers,
        limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
    )

    def body(q: Query) -> bytes:
        return json.dumps({"queries": [{"id": q.id, "text": q.text}], "k": k}).encode()

    def send(q: Query) -> Any:
        try:
            r = client.post(url, content=body(q), headers={"Content-Type": "application/json"})
        except httpx.TimeoutException as e:
            raise TimeoutError(f"{shown}: timed out ({type(e).__name__})") from None
        if r.status_code != 200:
            raise RuntimeError(f"{shown}: HTTP {r.status_code}: {r.text[:200]}")
        results = r.json().get("results")
        if not isinstance(results, dict) or q.id not in results:
            raise RuntimeError(f"{shown}: reply has no results for {q.id!r}")
        return results

    load = None
    if queries and supports(url):
        # one process per core, no more than the most requests ever in flight, nor more than MAX_CLIENT_PROCESSES
        procs = min(os.cpu_count() or 1, pool, MAX_CLIENT_PROCESSES)
        ep = Endpoint.build(url, headers, [body(q) for q in queries], [q.id for q in queries])
        load = HttpLoad(ep, procs)

    def close() -> None:
        client.close()
        if load is not None:
            load.close()

    return Target(name, "http", send, close=close, spec=spec, load=load)


def in_process_target(name: str, spec: SpecBase, ctx: BuildContext, dataset: GoldenDataset, k: int) -> Target:
    """Build and index the retriever (timed: ``index_seconds``), then put it in serving mode."""
    obj = spec.build(ctx)
    if not isinstance(obj, Retriever):
        raise InputError(f"retriever {name!r} has no index(corpus) and search(queries, k) methods", field=name)
    with measure() as m:
        obj.index(dataset.corpus)
    if isinstance(obj, Serving):
        obj.serving_mode()

    def send(q: Query) -> Any:
        return obj.search([q], k)

    return Target(
        name,
        "in-process",
        send,
        close=obj.close if isinstance(obj, Closeable) else (lambda: None),
        index_seconds=m.seconds,
        obj=obj,
        spec=spec,
    )


def refuse_composed(name: str, spec: SpecBase) -> None:
    """Exit 2 for a retriever that builds on others (hybrid, rerank, mmr): load drives one that
    answers a query on its own. :func:`harness.load.core.run_load` asks it of every retriever named
    before it builds any, so a config is refused before minutes of measuring the others."""
    if spec.inputs():
        raise InputError(
            f"retriever {name!r} builds on {', '.join(spec.inputs())}: load drives retrievers that answer a "
            "query on their own (serve the pipeline over HTTP and load that, or name the others with --retrievers)",
            field="retrievers",
        )


def build_target(name: str, spec: SpecBase, ctx: BuildContext, dataset: GoldenDataset, k: int, pool: int) -> Target:
    refuse_composed(name, spec)
    if spec.type == "http":
        return http_target(name, spec, k, pool, dataset.queries)
    return in_process_target(name, spec, ctx, dataset, k)


def gil_probe(target: Target, queries: Sequence[Query], seconds: float = 1.0, seed: int = 0) -> dict[str, Any]:
    """Closed-loop throughput at 1 and 2 threads, and the CPU the process used at 2: does a second
    thread add throughput? ``verdict``: ``parallel`` (it does), ``inconclusive`` (it does not, but
    the machine had no free core), ``gil`` (it does not, and the
    process used about one core: the threads took turns on the interpreter), ``cpu-bound`` (it does
    not, but the process used more than one core: the machine's cores, not the GIL, are the limit).
    """
    import psutil

    one = closed_loop(target.send, queries, 1, seconds, warmup_s=0.2, seed=seed)
    psutil.cpu_percent(interval=None)
    two = closed_loop(target.send, queries, 2, seconds, warmup_s=0.2, seed=seed)
    machine_busy = psutil.cpu_percent(interval=None)
    scaling = two.qps / one.qps if one.qps > 0 else None
    cores = two.cpu_cores or 0.0
    ncpu = os.cpu_count() or 1
    busy = ncpu < 2 or (machine_busy >= BUSY_PERCENT and cores < ncpu - 0.5)
    if scaling is not None and scaling >= (CLEARLY_PARALLEL if busy else SCALES_ABOVE):
        verdict = "parallel"
    elif busy:
        # other processes held the cores: the OS gives 2 threads 2 shares of a contended CPU, which
        # moves throughput either way whatever the GIL does
        verdict = "inconclusive"
    elif cores <= ONE_CORE:
        verdict = "gil"
    else:
        verdict = "cpu-bound"
    return {
        "qps_1": one.qps,
        "qps_2": two.qps,
        "scaling_1_to_2": scaling,
        "cpu_cores_at_2": cores,
        "machine_cores": ncpu,
        "machine_cpu_percent": machine_busy,
        "verdict": verdict,
    }


def gil_note(probe: dict[str, Any] | None) -> str | None:
    """One sentence for the table, or None when threads add throughput."""
    if not probe or probe.get("verdict") == "parallel":
        return None
    s = probe.get("scaling_1_to_2")
    how = f"2 threads give {s:.2f}x the throughput of 1" if s is not None else "no throughput at 1 thread"
    if probe["verdict"] == "inconclusive":
        return (
            f"threads not measured: {how}, but the machine's cores were {probe.get('machine_cpu_percent', 0):.0f}% "
            "busy (other processes), so whether it holds the GIL cannot be told here"
        )
    if probe["verdict"] == "gil":
        return (
            f"holds the GIL: {how}, on {probe['cpu_cores_at_2']:.2f} cores: in-process concurrency here means "
            "requests taking turns, not in parallel (serve it from several processes)"
        )
    return (
        f"CPU-bound: {how}, using {probe['cpu_cores_at_2']:.2f} of {probe['machine_cores']} cores: the machine, "
        "not the GIL, limits concurrency"
    )


def warm(target: Target, queries: Sequence[Query], n: int = 5, budget_s: float = 30.0) -> dict[str, Any]:
    """A few requests before anything is timed (connections opened, lazy models loaded). A failure
    is counted, not raised: the caller reports it for this retriever and goes on with the others.
    Warming stops at the first timeout (a hung service would otherwise cost ``n`` timeouts) and
    after ``budget_s``."""
    from harness.load.drivers import is_timeout, kind_of

    out: dict[str, Any] = {"requests": 0, "ok": 0, "errors": 0, "timeouts": 0, "first_error": None}
    t0 = time.perf_counter()
    for q in list(queries)[:n]:
        out["requests"] += 1
        try:
            target.send(q)
            out["ok"] += 1
        except Exception as e:
            out["timeouts" if is_timeout(e) else "errors"] += 1
            out["first_error"] = out["first_error"] or f"{kind_of(e)}: {e}"
            if is_timeout(e):
                break
        if time.perf_counter() - t0 > budget_s:
            break
    return out
