"""Schedule a retriever graph: build, index, search (or transform), time; one node at a time.

:func:`execute` yields one :class:`Outcome` per node *as it finishes*, so the caller can store each
run durably before the next node starts: a crash, a kill or a late error then costs at most the
node in flight. It scores nothing and writes nothing (:func:`harness.engine.score` scores;
:class:`harness.results.store.RunStore` writes).

A node's own code runs in a worker thread with a deadline. Anything it raises, ``SystemExit``,
``KeyboardInterrupt`` and ``GeneratorExit`` included, fails that node only (and the nodes built on
it): those come from a team's code, not from the user, whose Ctrl-C arrives in the main thread and
stops the whole run (every finished node is already stored by then).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import defaults, progress
from harness.efficiency import Cost, measure, time_each
from harness.engine.graph import Graph, Node
from harness.errors import HarnessError, RetrieverError, scrub
from harness.model import GoldenDataset
from harness.outcome import Outcome
from harness.protocol import Cancellable, HasParams, PreparesQueries, ReportsCost, Retriever, Stage
from harness.run import Run
from harness.validate import validate_output

log = logging.getLogger("harness")

#: A node that runs longer than this is failed (see :data:`harness.defaults.TIMEOUT_S`).
DEFAULT_TIMEOUT_S = defaults.TIMEOUT_S

#: qps of a retriever is the best of up to this many batched searches while their total stays
#: under the budget (stages are not repeated: a repeat would read their own cache)
_QPS_REPEATS = 5
_QPS_BUDGET_S = 1.0


@dataclass
class ScheduleSettings:
    """How every node is run and timed."""

    depth: int = defaults.DEPTH
    seed: int = defaults.SEED
    latency_queries: int = defaults.LATENCY_QUERIES
    warmup_queries: int = defaults.WARMUP_QUERIES
    timeout_s: float | None = DEFAULT_TIMEOUT_S


class TimeoutExceeded(RetrieverError):
    pass


def execute(
    graph: Graph,
    dataset: GoldenDataset,
    settings: ScheduleSettings | None = None,
    *,
    reuse: Mapping[str, Outcome] | None = None,
) -> Iterator[Outcome]:
    """Run every node of ``graph`` once, dependencies first, yielding each outcome as it finishes.

    ``reuse`` maps node names to outcomes read back from a results folder (``--resume``): those
    nodes are not run again, and the nodes built on them get their stored runs as inputs.
    """
    settings = settings or ScheduleSettings()
    reuse = dict(reuse or {})
    seed_everything(settings.seed)
    sample = latency_sample(dataset, settings.latency_queries, settings.seed)
    doc_ids = np.asarray(dataset.doc_ids, dtype=object)
    done: dict[str, Outcome] = {}
    reporter = progress.current()
    reporter.start(len(graph))
    for i, name in enumerate(graph.order, start=1):
        node = graph[name]
        reporter.node(i, len(graph), name)
        if name in reuse:
            out = reuse[name]
            out.reused = True
            log.info("[%d/%d] %s: reusing the stored run (same config hash)", *reporter.numbered(i, len(graph)), name)
        else:
            failed = [d for d in node.inputs if not done[d].ok]
            if failed:
                out = Outcome(name, error=f"not run: it builds on {failed[0]!r}, which failed")
            else:
                # the display (when there is one) already says so
                log.log(
                    logging.DEBUG if reporter.active else logging.INFO,
                    "[%d/%d] running %s",
                    *reporter.numbered(i, len(graph)),
                    name,
                )
                t0 = time.perf_counter()
                out = _run_node(node, dataset, settings, done, sample, doc_ids)
                out.seconds = time.perf_counter() - t0
            if out.error:
                log.error("retriever %s failed: %s", name, out.error)
        done[name] = out
        reporter.node_done(name, out.ok, out.seconds)
        yield out


def _run_node(
    node: Node,
    dataset: GoldenDataset,
    settings: ScheduleSettings,
    done: Mapping[str, Outcome],
    sample: list[Any],
    doc_ids: np.ndarray,
) -> Outcome:
    component: list[Any] = []
    try:
        return _execute(node, dataset, settings, done, sample, doc_ids, component)
    except TimeoutExceeded as e:
        _cancel(component)
        return Outcome(node.name, error=str(e))
    except HarnessError as e:
        return Outcome(node.name, error=str(e))
    except KeyboardInterrupt:
        raise  # the user's Ctrl-C, in the main thread: stop (finished runs are stored)
    except BaseException as e:  # a team's code: SystemExit, GeneratorExit... fail this row only
        log.debug("retriever %s failed:\n%s", node.name, "".join(traceback.format_exception(e)))
        return Outcome(node.name, error=describe(e))


def describe(e: BaseException, who: str = "the retriever") -> str:
    """``Type: message (at file:line)``: the innermost frame, where the team's code (``who``) raised."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    text = str(e)
    if isinstance(e, SystemExit):
        text = f"{who} called sys.exit({e.code!r})"
    return scrub(f"{type(e).__name__}: {text}{where}" if text else f"{type(e).__name__}{where}")


def _cancel(component: list[Any]) -> None:
    for obj in component:
        if isinstance(obj, Cancellable):
            try:
                obj.cancel()
            except Exception as e:  # cancelling is best effort; the row has already failed
                log.debug("cancel() failed: %s", e)


def _execute(
    node: Node,
    ds: GoldenDataset,
    settings: ScheduleSettings,
    done: Mapping[str, Outcome],
    sample: list[Any],
    doc_ids: np.ndarray,
    component: list[Any],
) -> Outcome:
    k, queries, timeout = settings.depth, ds.queries, settings.timeout_s
    what = f"retriever {node.name!r}"
    deadline = None if timeout is None else time.monotonic() + timeout
    reporter = progress.current()
    reporter.phase("loading")
    obj = call_with_deadline(node.make, deadline, f"{what} (build)", timeout)
    component.append(obj)
    is_stage = bool(node.inputs)
    if is_stage and not isinstance(obj, Stage):
        raise RetrieverError(f"{what} builds on {node.inputs} but has no index()/transform() methods")
    if not is_stage and not isinstance(obj, Retriever):
        raise RetrieverError(f"{what} has no index(corpus) and search(queries, k) methods")
    cost = Cost(n_queries=len(queries))
    reporter.phase("indexing")
    with measure() as m_index:
        call_with_deadline(lambda: obj.index(ds.corpus), deadline, f"{what} index()", timeout)
    cost.index_seconds = m_index.seconds
    inputs = [done[d].run for d in node.inputs]
    allow_unknown = node.allow_unknown_docs or bool(getattr(obj, "allow_unknown_docs", False))

    def call(qs: Sequence[Any]) -> Run:
        if is_stage:
            return stage_answer(obj, inputs, qs, k, doc_ids, node.name, allow_unknown_docs=allow_unknown)
        return validate_output(obj.search(qs, k), qs, k, doc_ids, node.name, allow_unknown_docs=allow_unknown)

    def timed_phase() -> tuple[Run, Any, np.ndarray]:
        if not is_stage and isinstance(obj, PreparesQueries):  # query-only work (encoding), timed by itself
            obj.prepare_queries(queries)
        for q in queries[: settings.warmup_queries]:
            call([q])
        searching = "searching"
        reporter.phase(searching, total=len(queries))
        with gc_paused(), measure() as m_search:
            run = call(queries)
        if reporter.current_phase() == searching:  # a stage may have opened its own ("scoring pairs")
            reporter.advance(len(queries))
        if not is_stage:
            # a fast retriever's batch takes milliseconds, where one scheduler hiccup halves its
            # qps: repeat it (timeit's way) within a small budget and keep the best time
            spent = m_search.seconds
            for _ in range(_QPS_REPEATS - 1):
                if spent >= _QPS_BUDGET_S:
                    break
                with gc_paused(collect=False), measure() as again:
                    call(queries)
                spent += again.seconds
                m_search.seconds = min(m_search.seconds, again.seconds)
                m_search.peak_rss_mb = max(m_search.peak_rss_mb, again.peak_rss_mb)
        reporter.phase("latency", total=len(sample))
        lat = time_each(lambda i: call([sample[i]]), len(sample), after=lambda _: reporter.advance(1))
        return run, m_search, lat

    run, m_search, lat = call_with_deadline(timed_phase, deadline, f"{what} search()", timeout)
    cost.search_seconds = m_search.seconds
    cost.latencies_s = lat
    cost.peak_rss_mb = max(m_index.peak_rss_mb, m_search.peak_rss_mb)
    if isinstance(obj, ReportsCost):
        # a step of the row too (ann recall reads a connected store's vectors): its memory counts
        with measure() as m_extra:
            cost.extra = dict(obj.efficiency_extra(k))
        cost.peak_rss_mb = max(cost.peak_rss_mb, m_extra.peak_rss_mb)
    params = dict(obj.params()) if isinstance(obj, HasParams) else {}
    # the component is not kept: its index and model are freed before scoring starts (at 100k x 384
    # a flat index alone is 154 MB that would otherwise sit under every later node and the report)
    return Outcome(node.name, run=run, cost=cost, params=params)


def stage_answer(
    stage: Any,
    inputs: Sequence[Run],
    queries: Sequence[Any],
    k: int,
    doc_ids: np.ndarray,
    name: str,
    *,
    allow_unknown_docs: bool = False,
) -> Run:
    """A stage's run over its inputs' runs, as ``harness run`` computes every stage: each input run
    restricted to the queries asked, ``transform``, the answer checked and cut to ``k``
    (:func:`harness.validate.validate_output`). One place, so a stage streamed by ``harness stream``
    (:mod:`harness.stream.composed`) is the same computation as the stage of a run."""
    ids = [q.id for q in queries]
    result = stage.transform([r.subset(ids) for r in inputs], queries, k)
    return validate_output(result, queries, k, doc_ids, name, allow_unknown_docs=allow_unknown_docs)


def call_with_deadline(fn: Callable[[], Any], deadline: float | None, what: str, limit_s: float | None = None) -> Any:
    """Run ``fn`` in a worker thread; past ``deadline`` give up on it (the caller cancels what it can).

    The worker is a daemon thread: one that never returns does not keep the process alive at exit.
    Whatever ``fn`` raises, BaseException included, is re-raised here as it was.
    """
    box: dict[str, Any] = {}
    current = progress.current()

    def target() -> None:
        try:
            with progress.use(current):
                box["value"] = fn()
        except BaseException as e:
            box["error"] = e

    t = threading.Thread(target=target, daemon=True, name=f"harness-{what}")
    t.start()
    t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if t.is_alive():
        limit = f"{limit_s:g} s" if limit_s is not None else "the time limit"
        raise TimeoutExceeded(f"{what} did not finish within {limit} (timeout_s)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@contextmanager
def gc_paused(collect: bool = True) -> Iterator[None]:
    """No garbage-collection pause inside a timed region (as timeit does); the collection, when
    asked for, happens before the clock starts."""
    was = gc.isenabled()
    if collect:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def latency_sample(dataset: GoldenDataset, n: int, seed: int) -> list[Any]:
    """The queries timed one at a time: the same seeded sample for every node, so latencies of a
    pipeline's parts add up query by query."""
    rng = random.Random(seed)
    total = len(dataset.queries)
    return [dataset.queries[i] for i in sorted(rng.sample(range(total), min(n, total)))]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):  # a torch without a CPU generator must not stop the run
            torch.manual_seed(seed)
