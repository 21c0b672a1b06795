"""The two contracts every component satisfies, structurally (no inheritance, no import from us).

A *retriever* indexes a corpus and ranks documents for a batch of queries. A *stage* maps one or
more input runs to a new run (the built-in stages: ``hybrid`` fusion, cross-encoder ``rerank`` and
``mmr``), so pipelines compose like PyTerrier's transformers: ``bm25 -> hybrid(bm25, dense) -> rerank -> mmr``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from harness.model import Document, Query
from harness.run import Run

#: What ``search`` may return: our ``Run`` or ``{query_id: [(doc_id, score), ...]}``.
SearchResult = Run | Mapping[str, Sequence[tuple[str, float]]]


@runtime_checkable
class Retriever(Protocol):
    """Anything with these two methods is a retriever.

    ``index`` sees the whole corpus once (a service that indexes its own corpus may ignore it).
    ``search`` is batched: it gets every query at once and returns, per query id, at most ``k``
    ``(doc_id, score)`` pairs, higher score = better. Order within a list does not matter: the
    harness sorts by score (ties by doc id, as trec_eval).
    An optional ``name`` attribute is used when no name is given in the config.
    """

    def index(self, corpus: Sequence[Document]) -> None: ...

    def search(self, queries: Sequence[Query], k: int) -> SearchResult: ...


@runtime_checkable
class Stage(Protocol):
    """Maps input runs to a new run.

    ``index`` sees the corpus once (to look up document text or embeddings); ``transform`` gets
    the runs of the stage's inputs (in the order the config names them), restricted to ``queries``,
    and returns a run of depth at most ``k``.
    """

    def index(self, corpus: Sequence[Document]) -> None: ...

    def transform(self, runs: Sequence[Run], queries: Sequence[Query], k: int) -> Run: ...


# ---------------------------------------------------------------------------------------------
# Optional hooks. A component may implement any of these; the engine checks with ``isinstance``
# (they are runtime-checkable), so a team's class needs no import from us to use them.


@runtime_checkable
class HasParams(Protocol):
    """``params()``: the settings a component actually used (defaults filled in), recorded in
    results.json beside the spec it was built from."""

    def params(self) -> Mapping[str, object]: ...


@runtime_checkable
class ReportsCost(Protocol):
    """``efficiency_extra(k)``: cost figures only the component knows (``encode_seconds``,
    ``build_seconds``, ``cache_hit_rate``, ``ann_recall@k``...), merged into its cost row."""

    def efficiency_extra(self, k: int) -> Mapping[str, object]: ...


@runtime_checkable
class Cancellable(Protocol):
    """``cancel()``: stop in-flight work (close connections, kill a child process) after a timeout,
    so nothing the component started keeps the process alive."""

    def cancel(self) -> None: ...


@runtime_checkable
class Mutable(Protocol):
    """``add(docs)`` and ``delete(ids)``: a retriever whose index changes in place, so ``harness stream``
    can score it while documents arrive and leave (docs/streaming.md). ``add`` of an id already held
    is the caller's error (the stream never does it); ``delete`` of an id not held is one too. Both
    return once the write is acknowledged: whether a search sees it yet is the engine's business,
    and what the stream measures."""

    def add(self, docs: Sequence[Document]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...


@runtime_checkable
class Updatable(Protocol):
    """``update(docs)``: write a new version of documents already held (same ids). A mutable
    retriever without it is updated by ``delete`` then ``add``."""

    def update(self, docs: Sequence[Document]) -> None: ...


@runtime_checkable
class PreparesQueries(Protocol):
    """``prepare_queries(queries)``: the query-only work (encoding) done once before the timed
    search, timed by the retriever itself (dense, splade, colbert, a vector database)."""

    def prepare_queries(self, queries: Sequence[Query]) -> None: ...


@runtime_checkable
class Serving(Protocol):
    """``serving_mode(enabled)``: a load test is on (memoised query embeddings off or on), so the
    figures are the retriever's, not the memo's (``harness load``)."""

    def serving_mode(self, enabled: bool = True) -> None: ...


@runtime_checkable
class Tunable(Protocol):
    """``set_search_param(name, value)``: a search-time knob (``nprobe``, ``ef_search``) changed on
    the built index, so ``harness load --frontier`` sweeps it without indexing again."""

    def set_search_param(self, name: str, value: object) -> None: ...


@runtime_checkable
class Settles(Protocol):
    """``settle()``: the index's own maintenance after writes (LanceDB optimize, pgvector VACUUM),
    timed by ``harness stream`` apart from the writes."""

    def settle(self) -> None: ...


@runtime_checkable
class Closeable(Protocol):
    """``close()``: let go of what the component holds (connections, a child process, a client)
    once the command is done with it."""

    def close(self) -> None: ...


@runtime_checkable
class HasExactSpec(Protocol):
    """On a *spec*: ``exact_spec()``, the spec of the same retriever searching exactly (dense's flat
    index over the same embeddings), or None; the reference an approximate index is scored against
    (``harness stream``, ``harness load --frontier``)."""

    def exact_spec(self) -> object | None: ...


@runtime_checkable
class HasStreamProblem(Protocol):
    """On a *spec*: ``stream_problem()``, why ``harness stream`` cannot write to this row (a vector
    database connected to a team's server), or None; asked before anything is built."""

    def stream_problem(self) -> str | None: ...


@runtime_checkable
class StreamsCopy(Protocol):
    """A retriever over a store the harness may only read (a team's vector database, ``mode: connect``)
    that ``harness stream`` writes to through a copy the harness owns. ``prepare_stream(doc_ids)``, once
    before any work: read what the copy needs, refuse (``InputError``) what it cannot take, and say what
    the row streams (recorded), or None when the store is the harness's own already.
    ``exact_reference()``: an unindexed retriever searching exactly the vectors the copy was handed
    (``index(docs)`` picks the visible ones), or None for the spec's ``exact_spec()``."""

    def prepare_stream(self, doc_ids: Sequence[str]) -> str | None: ...

    def exact_reference(self) -> object | None: ...


# ---------------------------------------------------------------------------------------------
# A judge's optional hooks (the judge itself: :class:`harness.judging.judge.Judge`).


@runtime_checkable
class GradesWithCost(Protocol):
    """``outcomes(pairs, stop)``: grades with what each cost (tokens, requests) and a stop the fill
    loop honours, instead of plain ``grade(pairs)`` (the endpoint judge)."""

    def outcomes(self, pairs: Sequence[object], stop: object = None) -> list[object]: ...


@runtime_checkable
class CacheIdentity(Protocol):
    """``cache_identity()``: what, beside the pair, decides a judge's grade (URL, model, prompt
    version), the key of its cached grades; None: never cached nor resumed. Without it: its name."""

    def cache_identity(self) -> list[object] | None: ...


@runtime_checkable
class Batched(Protocol):
    """``batch_size``: pairs a judge grades per call (default 32)."""

    batch_size: int


@runtime_checkable
class Concurrent(Protocol):
    """``concurrency``: calls a judge takes at once (default 1)."""

    concurrency: int
