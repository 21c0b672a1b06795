"""The retrievers of a stream: built from the config, refused before any work when they cannot change,
and written to through the mutable protocol (:class:`harness.protocol.Mutable`).

A write and a search of one engine never overlap: the harness holds one lock per engine around each
call (in-process indexes such as FAISS are not safe to search while they are written), so the search
latency measured while writing includes waiting for a write batch in progress, as a caller of a
single-writer index waits.

Every call into a retriever (``index``, ``add``, ``delete``, ``update``, ``search``, ``settle``) runs
as ``harness run`` runs a row's code: in a worker thread with the config's ``timeout_s`` as its limit
(:func:`harness.engine.schedule.call_with_deadline`), and every answer of ``search`` is checked as
``harness run`` checks it (:func:`harness.validate.validate_output`: pairs of a corpus id and a real
number). Whatever goes wrong there (an exception, ``sys.exit``, a hang past the limit, an unusable
answer) is a :class:`RowFailed` naming the retriever and the call: that row stops, the others go on.

A composed row (``hybrid``, ``rerank``, ``mmr``, ``colbert`` with ``of:``) is one engine too: a
:class:`harness.stream.composed.ComposedIndex` over copies of its own parts, under one lock, so every
figure of a row is measured for it as for any other.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness import retriever_types
from harness.engine.schedule import TimeoutExceeded, call_with_deadline, describe
from harness.errors import HarnessError, InputError, RetrieverError
from harness.model import Document, Query
from harness.protocol import Closeable, HasExactSpec, HasStreamProblem, Settles, StreamsCopy
from harness.registry import BuildContext, SpecBase
from harness.run import Run
from harness.stream import answers, composed, writes
from harness.validate import validate_output


class RowFailed(RetrieverError):
    """A call into one retriever failed (raised, exited, hung past ``timeout_s``, answered something
    unusable): that retriever's row stops, the stream goes on with the others."""


@dataclass
class StreamedRetriever:
    """One retriever of the stream and the lock its writes and searches take turns on.

    ``doc_ids`` (the corpus ids, in order) checks every answer; ``timeout_s`` bounds every call."""

    name: str
    spec: SpecBase
    obj: Any
    doc_ids: np.ndarray = field(default_factory=lambda: np.asarray([], dtype=object))
    timeout_s: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: what the row streams when not its own store (a connected vector database: a copy of the team's
    #: collection, :class:`harness.protocol.StreamsCopy`); recorded in ``stream.json`` as ``team_copy``
    copy: str | None = None

    def _call(self, what: str, fn: Any) -> Any:
        """``fn()`` (one call into the retriever, ``what``) under the lock and within ``timeout_s``;
        any failure of it is a :class:`RowFailed` naming the retriever and the call."""
        with self.lock:
            deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
            try:
                return call_with_deadline(fn, deadline, f"retriever {self.name!r} {what}", self.timeout_s)
            except KeyboardInterrupt:
                raise  # the user's Ctrl-C (a team's own KeyboardInterrupt too, as harness run treats it)
            except TimeoutExceeded:
                raise RowFailed(
                    f"retriever {self.name!r}: {what} did not finish within {self.timeout_s:g} s (timeout_s)"
                ) from None
            except HarnessError as e:
                raise RowFailed(f"retriever {self.name!r}: {what} failed: {e}") from None
            except BaseException as e:  # a team's code: SystemExit, GeneratorExit... fail this row only
                raise RowFailed(f"retriever {self.name!r}: {what} raised {describe(e)}") from None

    def index(self, docs: Sequence[Document]) -> None:
        self._call("index()", lambda: self.obj.index(docs))

    def search(
        self, queries: Sequence[Query], k: int, seconds: list[float] | None = None
    ) -> tuple[Run, dict[str, int]]:
        """The answer as a run cut to ``k``, and per query the rows that repeated a document id (two
        versions of one document both served: stale). The answer is checked as ``harness run`` checks
        one (ids of the corpus, real-number scores, only the queries asked). ``seconds`` gets the
        retriever's own time (the call alone: no thread hand-over, no check)."""

        def timed() -> Any:
            t0 = time.perf_counter()
            raw = self.obj.search(queries, k)
            if seconds is not None:
                seconds.append(time.perf_counter() - t0)
            return answers.materialised(raw)

        raw = self._call("search()", timed)
        repeats = answers.repeats(raw)
        if isinstance(self.obj, composed.ComposedIndex):  # a part's repeated rows are the row's stale ones too
            repeats = answers.summed(repeats, self.obj.last_repeats)
        try:
            run = validate_output(raw, queries, k, self.doc_ids, self.name)
        except RetrieverError as e:
            text = str(e).removeprefix(f"retriever {self.name!r}: ").removeprefix(f"retriever {self.name!r} ")
            text = text if text.startswith("search()") else f"search() {text}"
            raise RowFailed(f"retriever {self.name!r}: {text}") from None
        return run, repeats

    def write(self, op: str, docs: Sequence[Document]) -> None:
        writes.apply(self.obj, op, docs, self._call)

    def settle(self) -> float:
        """The engine's own maintenance (``settle()``: LanceDB optimize, pgvector VACUUM...); seconds."""
        t0 = time.perf_counter()
        if isinstance(self.obj, Settles):
            self._call("settle()", self.obj.settle)
        return time.perf_counter() - t0

    def close(self) -> None:
        """Best effort, and bounded: a retriever that failed may hang in ``close()`` too."""
        if isinstance(self.obj, Closeable):
            deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
            with contextlib.suppress(Exception):
                call_with_deadline(self.obj.close, deadline, f"retriever {self.name!r} close()", self.timeout_s)


def _fixed(type_name: str) -> str | None:
    """Why a type answers from something the harness does not write (a run file, a service), or None."""
    t = retriever_types.TYPES.get(type_name)
    return t.fixed if t is not None else None


def _unchangeable(spec: SpecBase) -> bool:
    """A row the stream cannot write: a type answering from a run file or a service, or a team's store
    that is only read (``mode: connect``)."""
    return _fixed(spec.type) is not None or getattr(spec, "mode", "build") == "connect"


def check_changeable(specs: Mapping[str, SpecBase]) -> None:
    """Refuse, before anything is built, the retrievers that cannot change, and a composed row any of
    whose parts (at any depth) cannot: a composed row streams through its parts (:mod:`.composed`)."""
    for name, spec in specs.items():
        why = _fixed(spec.type)
        if why is not None:
            raise InputError(
                f"retriever {name!r} ({spec.type}) {why}: harness stream writes to its retrievers, which "
                "need add(docs) and delete(ids)",
                field=f"retrievers.{name}",
            )
        if getattr(spec, "mode", "build") == "connect":
            # a vector database streams a copy of the team's collection (StreamsCopy); anything else is refused
            problem = (
                spec.stream_problem()
                if isinstance(spec, HasStreamProblem)
                else "connects to a team's store, which the harness only reads: harness stream writes (mode: build)"
            )
            if problem is not None:
                raise InputError(f"retriever {name!r} ({spec.type}) {problem}", field=f"retrievers.{name}.mode")
        parts = spec.inputs()
        if parts:
            nodes = composed.nodes_of(name, specs)
            fixed = [p for p, s in nodes.items() if p != name and _unchangeable(s)]
            if fixed:
                # a connected store streams only as a row of its own (over a copy the row prepares itself)
                why = "" if _fixed(nodes[fixed[0]].type) else " inside a composed row (mode: connect streams alone)"
                raise InputError(
                    f"retriever {name!r} ({spec.type}) builds on {', '.join(parts)}: its part {fixed[0]!r} cannot "
                    f"change{why}; stream its parts",
                    field=f"retrievers.{name}",
                )


def build_engines(
    specs: Mapping[str, SpecBase], ctx: BuildContext, doc_ids: Sequence[str], timeout_s: float | None
) -> dict[str, StreamedRetriever]:
    """Each retriever built (nothing indexed yet), refused with one line when it lacks ``add`` and
    ``delete`` (a ``python`` class without them) or its constructor fails, the others closed again
    first. ``doc_ids`` checks their answers, ``timeout_s`` bounds each call (:class:`StreamedRetriever`)."""
    check_changeable(specs)
    ids = np.asarray(list(doc_ids), dtype=object)
    built: dict[str, StreamedRetriever] = {}
    try:
        for name, spec in specs.items():
            if spec.inputs():  # a composed row: its own copies of its parts, written, and its stages
                nodes = composed.nodes_of(name, specs)
                obj = composed.build(name, nodes, lambda n, s: _build(n, s, ctx), ids, ctx.depth)
            else:
                obj = _build(name, spec, ctx)
            built[name] = StreamedRetriever(name, spec, obj, ids, timeout_s)
            who = writes.unwritable(name, spec.type, obj)
            if who is not None:
                raise InputError(
                    f"retriever {who} has no add(docs) and delete(ids): harness stream writes to its retrievers "
                    "(docs/streaming.md)",
                    field=f"retrievers.{name}",
                )
            if isinstance(obj, StreamsCopy):
                built[name].copy = _prepare(name, spec, obj, doc_ids)
    except BaseException:
        for e in built.values():
            e.close()
        raise
    return built


def _build(name: str, spec: SpecBase, ctx: BuildContext) -> Any:
    """``spec.build(ctx)``; a team's constructor failing is one line naming the retriever (exit 2, before
    any work), not an internal error."""
    try:
        return spec.build(ctx)
    except (HarnessError, KeyboardInterrupt):
        raise
    except BaseException as e:
        raise InputError(f"retriever {name!r} ({spec.type}): building it raised {describe(e)}",
                         field=f"retrievers.{name}") from None  # fmt: skip


def reference_spec(spec: SpecBase) -> SpecBase:
    """The spec of a retriever's exact reference: its own exact search (``exact_spec()``: dense's flat
    index over the same embeddings, a brute-force inner product) or, without one, the same spec (BM25: an
    index built fresh over the visible set)."""
    return (spec.exact_spec() if isinstance(spec, HasExactSpec) else None) or spec


def _prepare(name: str, spec: SpecBase, obj: StreamsCopy, doc_ids: Sequence[str]) -> str | None:
    """``obj.prepare_stream(doc_ids)``, before any work: what it refuses is one line naming the retriever
    and the field (exit 2), and so is anything else it raises."""
    try:
        return obj.prepare_stream(doc_ids)
    except InputError as e:
        where = f"retrievers.{name}.{e.field}" if e.field else f"retrievers.{name}"
        raise InputError(f"retriever {name!r} ({spec.type}): {e.message}", field=where) from None
    except (HarnessError, KeyboardInterrupt):
        raise
    except BaseException as e:
        raise InputError(f"retriever {name!r} ({spec.type}): reading the team's store raised {describe(e)}",
                         field=f"retrievers.{name}") from None  # fmt: skip


def exact_reference(engine: StreamedRetriever, ctx: BuildContext, docs: Sequence[Document]) -> StreamedRetriever:
    """A fresh index over exactly ``docs`` to score the engine against (:func:`reference_spec`); for a
    composed row, the same stages applied to its parts' exact references (each built fresh over ``docs``).
    Its calls are the row's too: a failure of them fails the row (:class:`RowFailed`). A row streaming a
    copy of a team's collection (:class:`harness.protocol.StreamsCopy`) gives its own: exact search over
    the vectors the copy was handed (the team's for documents untouched since the load, the model's after)."""
    spec = engine.spec
    ref_spec = reference_spec(spec)
    ref = StreamedRetriever(f"{engine.name}[exact]", ref_spec, None, engine.doc_ids, engine.timeout_s)
    row = engine.obj

    def make() -> Any:
        if not isinstance(row, composed.ComposedIndex):
            return ref_spec.build(ctx)
        nodes = {n: s if s.inputs() else reference_spec(s) for n, s in row.specs.items()}
        return composed.build(row.row, nodes, lambda _, s: s.build(ctx), row.doc_ids, row.depth)

    held = row.exact_reference() if isinstance(row, StreamsCopy) else None
    # a streamed copy: exact search over the vectors it was handed (the team's, then the model's)
    ref.obj = held if held is not None else ref._call("building its exact reference", make)
    try:
        ref.index(docs)
    except BaseException:
        ref.close()
        raise
    return ref
