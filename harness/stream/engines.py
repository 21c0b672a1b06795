"""The retrievers of a stream: built from the config, refused before any work when they cannot change,
and written to through the mutable protocol (:class:`harness.protocol.Mutable`).

A write and a search of one engine never overlap: the harness holds one lock per engine around each
call (in-process indexes such as FAISS are not safe to search while they are written), so the search
latency measured while writing includes waiting for a write batch in progress, as a caller of a
single-writer index waits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import retriever_types
from harness.errors import InputError
from harness.model import Document, Query
from harness.protocol import Closeable, HasExactSpec, Mutable, Settles, Updatable
from harness.registry import BuildContext, SpecBase
from harness.run import Run


@dataclass
class StreamedRetriever:
    """One retriever of the stream and the lock its writes and searches take turns on."""

    name: str
    spec: SpecBase
    obj: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def index(self, docs: Sequence[Document]) -> None:
        with self.lock:
            self.obj.index(docs)

    def search(self, queries: Sequence[Query], k: int) -> tuple[Run, dict[str, int]]:
        """The answer as a run cut to ``k``, and per query the rows that repeated a document id (two
        versions of one document both served: stale)."""
        with self.lock:
            raw = self.obj.search(queries, k)
        repeats = _repeats(raw)
        return Run.coerce(raw, name=self.name).cut(k), repeats

    def write(self, op: str, docs: Sequence[Document]) -> None:
        with self.lock:
            if op == "insert":
                self.obj.add(docs)
            elif op == "delete":
                self.obj.delete([d.id for d in docs])
            elif isinstance(self.obj, Updatable):
                self.obj.update(docs)
            else:
                self.obj.delete([d.id for d in docs])
                self.obj.add(docs)

    def settle(self) -> float:
        """The engine's own maintenance (``settle()``: LanceDB optimize, pgvector VACUUM...); seconds."""
        t0 = time.perf_counter()
        if isinstance(self.obj, Settles):
            with self.lock:
                self.obj.settle()
        return time.perf_counter() - t0

    def close(self) -> None:
        if isinstance(self.obj, Closeable):
            with contextlib.suppress(Exception):
                self.obj.close()


def _repeats(raw: Any) -> dict[str, int]:
    if isinstance(raw, Run) or not isinstance(raw, Mapping):
        return {}  # a Run holds each document once per query
    out: dict[str, int] = {}
    for qid, rows in raw.items():
        ids = list(rows) if isinstance(rows, Mapping) else [r[0] for r in rows]
        extra = len(ids) - len(set(ids))
        if extra:
            out[str(qid)] = extra
    return out


def _fixed(type_name: str) -> str | None:
    """Why a type answers from something the harness does not write (a run file, a service), or None."""
    t = retriever_types.TYPES.get(type_name)
    return t.fixed if t is not None else None


def check_changeable(specs: Mapping[str, SpecBase]) -> None:
    """Refuse, before anything is built, the retrievers whose type cannot change and the composed rows
    (docs/streaming.md: a composed row streams once each of its parts does; not yet)."""
    for name, spec in specs.items():
        why = _fixed(spec.type)
        if why is not None:
            raise InputError(
                f"retriever {name!r} ({spec.type}) {why}: harness stream writes to its retrievers, which "
                "need add(docs) and delete(ids)",
                field=f"retrievers.{name}",
            )
        if getattr(spec, "mode", "build") == "connect":
            raise InputError(
                f"retriever {name!r} ({spec.type}) connects to a team's store, which the harness only reads: "
                "harness stream writes (mode: build)",
                field=f"retrievers.{name}.mode",
            )
        parts = spec.inputs()
        if parts:
            fixed = [p for p in parts if specs.get(p) is not None and _fixed(specs[p].type)]
            what = f"its part {fixed[0]!r} cannot change" if fixed else "composed rows are not streamed yet"
            raise InputError(
                f"retriever {name!r} ({spec.type}) builds on {', '.join(parts)}: {what}; stream its parts",
                field=f"retrievers.{name}",
            )


def build_engines(specs: Mapping[str, SpecBase], ctx: BuildContext) -> dict[str, StreamedRetriever]:
    """Each retriever built (nothing indexed yet), refused with one line when it lacks ``add`` and
    ``delete`` (a ``python`` class without them), the others closed again first."""
    check_changeable(specs)
    built: dict[str, StreamedRetriever] = {}
    try:
        for name, spec in specs.items():
            obj = spec.build(ctx)
            built[name] = StreamedRetriever(name, spec, obj)
            if not isinstance(obj, Mutable):
                inner = getattr(obj, "inner", obj)
                raise InputError(
                    f"retriever {name!r} ({spec.type}: {type(inner).__qualname__}) has no add(docs) and "
                    "delete(ids): harness stream writes to its retrievers (docs/streaming.md)",
                    field=f"retrievers.{name}",
                )
    except BaseException:
        for e in built.values():
            e.close()
        raise
    return built


def exact_reference(engine: StreamedRetriever, ctx: BuildContext, docs: Sequence[Document]) -> StreamedRetriever:
    """A fresh index over exactly ``docs`` to score the engine against: the spec's own exact search
    (``exact_spec()``: dense's flat index over the same embeddings, a brute-force inner product) or,
    without one, the same spec built anew (BM25: an index built fresh over the visible set)."""
    spec = engine.spec
    ref_spec = (spec.exact_spec() if isinstance(spec, HasExactSpec) else None) or spec
    ref = StreamedRetriever(f"{engine.name}[exact]", ref_spec, ref_spec.build(ctx))
    ref.index(docs)
    return ref
