"""A composed row streamed (``hybrid``, ``rerank``, ``mmr``, ``colbert`` with ``of:``): its parts take the
writes, its stages are applied at every search, exactly as ``harness run`` applies them.

A composed row holds no index of its own: only its parts (the retrievers it builds on, at any depth:
``rerank`` of ``hybrid`` of ``bm25`` and ``dense``) have one to change. :class:`ComposedIndex` gives the row
the mutable protocol the stream writes through: a write goes to every part, one after another; a search
asks every part at the run's depth (checked as ``harness run`` checks a node's answer), then each stage in
dependency order over its inputs' runs with the engine's own code
(:func:`harness.engine.schedule.stage_answer`), and cuts the row's run to the ``k`` asked. A probe's
"found in the top ``k``" is then about the row's real answer, not a stage applied to ten candidates.

The row builds copies of its own parts (from their specs), as every row of a stream plays the runbook on
its own: its writes never slow another row's searches, and each part, a row of the config too, keeps
figures of its own beside it.

A stage that reads documents (``rerank``'s texts, ``mmr``'s embeddings, a ``colbert`` stage's token
vectors) is indexed again over the documents visible now at the first search after a write: it sees an
updated document's new text and never a deleted one, which a stage indexed once over the initial load
would not (it would score an old text, or fail on a document it never saw).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.engine.graph import Graph, Node
from harness.engine.schedule import describe, stage_answer
from harness.errors import HarnessError, InputError, RetrieverError
from harness.model import Document, Query
from harness.protocol import Closeable, Settles, Stage
from harness.registry import SpecBase
from harness.run import Run
from harness.stream import answers, writes
from harness.validate import validate_output

#: builds one node of the row (its name, its spec): the caller's constructor, naming the node when it fails
Make = Callable[[str, SpecBase], Any]


def nodes_of(row: str, specs: Mapping[str, SpecBase]) -> dict[str, SpecBase]:
    """The specs ``row`` computes from: itself and every node it builds on, each once, dependencies first."""
    graph = Graph(Node(n, make=lambda: None, inputs=s.inputs()) for n, s in specs.items())
    return {n: specs[n] for n in graph.closure(row)}


class ComposedIndex:
    """A composed row as one mutable retriever: writes to its parts, searches through its stages.

    ``specs`` are the row's nodes, dependencies first (:func:`nodes_of`), ``objs`` the built objects by
    name; the parts are the nodes without inputs. ``depth`` is the run's: every part and stage answers to
    it whatever ``k`` a search asks, as in ``harness run``. ``doc_ids`` checks every node's answer."""

    def __init__(
        self, row: str, specs: Mapping[str, SpecBase], objs: Mapping[str, Any], doc_ids: np.ndarray, depth: int
    ) -> None:
        self.row, self.specs, self.objs = row, dict(specs), dict(objs)
        self.doc_ids, self.depth = doc_ids, depth
        self.parts = [n for n, s in self.specs.items() if not s.inputs()]
        self.stages = [n for n, s in self.specs.items() if s.inputs()]
        self._docs: dict[str, Document] = {}
        self._written = 0  # writes so far; a stage is indexed again when it saw fewer
        self._indexed: dict[str, int] = {}
        #: per query, the rows its parts repeated in the last search (one id twice: a stale version served)
        self.last_repeats: dict[str, int] = {}

    def _call(self, node: str, what: str, fn: Callable[[], Any]) -> Any:
        """One call into node ``node``; a failure names it (the row's own call is named by the caller)."""
        try:
            return fn()
        except KeyboardInterrupt:
            raise
        except HarnessError as e:
            raise RetrieverError(f"its part {node!r} {what}: {e}") from None
        except BaseException as e:  # a team's code: fail this row only, naming where
            raise RetrieverError(f"its part {node!r} {what} raised {describe(e)}") from None

    # ------------------------------------------------------------------ the mutable protocol
    def index(self, docs: Sequence[Document]) -> None:
        for name in self.parts:
            obj = self.objs[name]
            self._call(name, "index()", lambda obj=obj: obj.index(docs))
        self._docs = {d.id: d for d in docs}
        self._written += 1

    def _write(self, op: str, docs: Sequence[Document]) -> None:
        for name in self.parts:
            obj = self.objs[name]
            writes.apply(obj, op, docs, lambda what, fn, name=name: self._call(name, what, fn))
        if op == "delete":
            for d in docs:
                self._docs.pop(d.id, None)
        else:
            self._docs.update((d.id, d) for d in docs)
        self._written += 1

    def add(self, docs: Sequence[Document]) -> None:
        self._write("insert", docs)

    def delete(self, ids: Sequence[str]) -> None:
        self._write("delete", [self._docs[i] for i in ids if i in self._docs])

    def update(self, docs: Sequence[Document]) -> None:
        self._write("update", docs)

    def settle(self) -> None:
        """Each part's own maintenance (a stage has none: it is indexed again after writes)."""
        for name in self.parts:
            obj = self.objs[name]
            if isinstance(obj, Settles):
                self._call(name, "settle()", obj.settle)

    def close(self) -> None:
        for obj in self.objs.values():
            if isinstance(obj, Closeable):
                with contextlib.suppress(Exception):  # best effort: the row is done with it
                    obj.close()

    def written_parts(self) -> list[Any]:
        """The objects that take the writes (:mod:`harness.stream.encoding` reads their encoders)."""
        return [self.objs[n] for n in self.parts]

    # ------------------------------------------------------------------ search
    def search(self, queries: Sequence[Query], k: int) -> Run:
        """The row's run as ``harness run`` computes it, over the documents visible now, cut to ``k``."""
        depth = max(k, self.depth)
        runs: dict[str, Run] = {}
        repeated: list[dict[str, int]] = []
        for name in self.parts:
            obj = self.objs[name]
            raw = self._call(name, "search()", lambda obj=obj: answers.materialised(obj.search(queries, depth)))
            repeated.append(answers.repeats(raw))
            runs[name] = self._call(
                name, "search()", lambda raw=raw, name=name: validate_output(raw, queries, depth, self.doc_ids, name)
            )
        self.last_repeats = answers.summed(*repeated)
        for name in self.stages:
            obj = self.objs[name]
            if self._indexed.get(name) != self._written:  # the documents as they are now
                visible = list(self._docs.values())
                self._call(name, "index()", lambda obj=obj, visible=visible: obj.index(visible))
                self._indexed[name] = self._written
            inputs = [runs[i] for i in self.specs[name].inputs()]
            runs[name] = self._call(
                name, "transform()",
                lambda obj=obj, inputs=inputs, name=name: stage_answer(obj, inputs, queries, depth, self.doc_ids, name),
            )  # fmt: skip
        return runs[self.row].cut(k)


def build(row: str, specs: Mapping[str, SpecBase], make: Make, doc_ids: np.ndarray, depth: int) -> ComposedIndex:
    """``row`` as a :class:`ComposedIndex` over its own copies of its nodes (``specs``: :func:`nodes_of`,
    each built by ``make``), refused with one line naming the node when a part has no ``add``/``delete``
    or a stage no ``transform``; what was built is closed again first."""
    objs: dict[str, Any] = {}
    try:
        for name, spec in specs.items():
            obj = objs[name] = make(name, spec)
            if spec.inputs() and not isinstance(obj, Stage):
                raise InputError(
                    f"retriever {row!r} builds on {name!r} ({spec.type}), which has no index()/transform() methods",
                    field=f"retrievers.{name}",
                )
            who = None if spec.inputs() else writes.unwritable(name, spec.type, obj)
            if who is not None:
                raise InputError(
                    f"retriever {row!r} builds on {who}, which has no add(docs) and delete(ids): harness stream "
                    "writes to a composed row's parts (docs/streaming.md)",
                    field=f"retrievers.{name}",
                )
    except BaseException:
        ComposedIndex(row, specs, objs, doc_ids, depth).close()
        raise
    return ComposedIndex(row, specs, objs, doc_ids, depth)
