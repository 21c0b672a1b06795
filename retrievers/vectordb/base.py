"""The adapter every vector database shares: encode, hand over, search, measure.

A driver (:class:`Driver`) is the engine-specific part: create a store from vectors and metadata, or
open a team's existing one read-only; translate a :class:`harness.filters.Filter`; search one query
vector; say how many bytes its store takes. Everything else lives here once:

- embeddings come from :class:`retrievers.encoder.Encoder` with ``dense``'s options and cache, so the
  corpus is embedded once whichever engines a config compares;
- ``mode: build`` stores under a fresh folder of the run (``work_dir``, default a temporary folder)
  that is deleted when the retriever is freed; ``mode: connect`` only reads (engines whose client
  writes to what it opens, Chroma and Qdrant local, open a copy in such a folder);
- cost: ``build_seconds`` (writing and indexing, encoding apart), ``index_mb`` (the store on disk),
  and ``ann_recall@k``: the overlap of the engine's top k with the exact top k over the same
  embeddings, computed in numpy with the same similarity, filtered alike (:mod:`retrievers.exact`).
  An engine that returns a different top k at ``index: none`` shows it here, not only in nDCG.

Scores are the engine's own similarity (``1 - cosine distance``, the inner product, ``-`` an L2
distance), higher is better, so rankings compare across engines.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from harness import extras
from harness.errors import InputError, RetrieverError
from harness.filters import Filter, MaskCache, group_by_filter, metadata_kinds, query_filter
from harness.model import Corpus, Document, Query
from harness.registry import BuildContext
from harness.run import Run
from retrievers.dense import ann_recall
from retrievers.encoder import DEFAULT_MODEL, EncoderOptions
from retrievers.exact import exact_search
from retrievers.ties import cut_by_rule
from retrievers.vectordb import team_copy
from retrievers.vectordb.store_copy import copy_store, folder_bytes
from retrievers.vectordb.store_scan import BATCH, Audit, audit_store, exact_from_store

__all__ = ["Driver", "FolderDriver", "VectorDB", "VectorDBSpec", "folder_bytes", "require", "sql_literal"]


class VectorDBSpec(EncoderOptions):
    """Options every vector database retriever takes (engine types subclass it)."""

    #: pip extra and importable module the engine needs (set by each engine's spec)
    extra: ClassVar[str] = ""
    modules: ClassVar[tuple[str, ...]] = ()
    driver: ClassVar[str] = ""  # "module:Class"
    indexes: ClassVar[tuple[str, ...]] = ("none", "hnsw", "ivf")
    #: connect with ``path``: the engine's client writes to a store it opens, so it opens a copy
    #: (:mod:`retrievers.vectordb.store_copy`); ``store_marker`` is a file every store of it holds
    copy_on_connect: ClassVar[bool] = False
    store_marker: ClassVar[str | None] = None

    # the encoder, as `dense` takes it (same cache: a corpus is embedded once for all)
    model: str = Field(DEFAULT_MODEL, description="sentence-transformers hub name or local path")
    batch_size: int = Field(64, ge=1, le=65_536)
    max_length: int | None = Field(None, ge=8, le=100_000)
    normalize: bool = True
    threads: int | None = Field(None, ge=1, le=1024)
    device: str = "cpu"
    doc_prefix: str = ""
    query_prefix: str = ""
    # the store
    mode: Literal["build", "connect"] = "build"
    path: str | None = Field(None, description="connect: the store's folder (lancedb, chroma, qdrant local)")
    url: str | None = Field(None, description="connect: a server's URL (qdrant)")
    dsn: str | None = Field(
        None, description="pgvector: a PostgreSQL connection string", json_schema_extra={"secret": True}
    )
    collection: str | None = Field(None, description="table or collection (connect: required)")
    id_field: str = Field("id", description="connect: the column holding document ids")
    vector_field: str = Field("vector", description="connect: the column holding the embeddings")
    duplicate_ids: Literal["refuse", "keep_best"] = Field(
        "refuse", description="connect: an id held by several rows is refused, or counted once at its best-ranked row"
    )
    work_dir: str | None = Field(None, description="build: where the store is written (default: a temporary folder)")
    # the index
    index: Literal["none", "hnsw", "ivf"] = "none"
    index_params: dict[str, Any] = Field(default_factory=dict)
    search_params: dict[str, Any] = Field(default_factory=dict)
    distance: Literal["cosine", "ip", "l2"] = "cosine"

    @model_validator(mode="after")
    def _coherent(self) -> VectorDBSpec:
        if self.index not in self.indexes:
            raise ValueError(f"index: {self.type} supports {', '.join(self.indexes)}, not {self.index!r}")
        if self.mode == "connect" and not self.collection:
            raise ValueError("collection: connect mode needs the table or collection to read")
        return self

    def preflight(self, config_dir: Path) -> None:
        missing = [m for m in self.modules if importlib.util.find_spec(m) is None]
        if missing:
            raise InputError(
                f"retriever type {self.type!r} needs {missing[0]!r}, which is not installed: "
                f"pip install 'retrieval-harness[{self.extra}]'",
                field="type",
            )
        if self.mode == "connect" and self.path:
            # checked here, before any client opens it: a client given a missing path creates a store
            store = self.store_path(config_dir)
            if not store.is_dir():
                raise InputError(f"{self.type} connect: no store at {store} (no such folder)", field="path")
            if self.store_marker and not (store / self.store_marker).is_file():
                raise InputError(
                    f"{self.type} connect: {store} is not a {self.type} store (no {self.store_marker})", field="path"
                )

    def exact_spec(self) -> Any:
        """The exact search over the same embeddings (``harness stream``'s reference): ``dense`` with a
        flat index, a brute-force inner product, which is the cosine of normalised vectors; None for
        ``l2`` (the engine rebuilt over the same documents is the reference then)."""
        from retrievers.dense import DenseSpec

        if self.distance == "l2" or (self.distance == "cosine" and not self.normalize):
            return None
        shared = set(DenseSpec.model_fields) & set(type(self).model_fields) - {"type", "index", "threads"}
        return DenseSpec(**{f: getattr(self, f) for f in shared if f in self.model_fields_set or f == "model"})

    def stream_problem(self) -> str | None:
        """Why ``harness stream`` cannot write to this row, asked before anything is built; None when it
        can (connect mode streams a harness-owned copy of the team's collection: :mod:`.team_copy`)."""
        return team_copy.stream_problem(self.type, self.url) if self.mode == "connect" else None

    def store_path(self, config_dir: Path) -> Path:
        """``path`` as a folder (relative: to the config's folder, like every path in a config)."""
        p = Path(self.path or "").expanduser()
        return p if p.is_absolute() else config_dir / p

    def build(self, ctx: BuildContext) -> VectorDB:
        self.preflight(ctx.config_dir)
        module, _, cls = self.driver.partition(":")
        driver_cls = getattr(importlib.import_module(module), cls)
        return VectorDB(self, driver_cls, ctx)


class Driver:
    """One engine. Subclasses implement the methods below; ``self.columns`` maps a metadata field to
    ``(column name, kind)`` in the store (build mode: ``m0``, ``m1``...; connect: the field's name)."""

    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        self.spec, self.work_dir, self.depth = spec, work_dir, depth
        self.columns: dict[str, tuple[str, str]] = {}
        #: connect with ``path``: the folder to open (the team's, or a copy of it in the work folder)
        self.path: Path | None = None

    # build mode -----------------------------------------------------------------------------
    def build(self, ids: np.ndarray, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        """Write ``ids`` (str), ``emb`` (float32 rows) and per-document metadata keyed by column name,
        and build the index."""
        raise NotImplementedError

    # connect mode ---------------------------------------------------------------------------
    def connect(self) -> int:
        """Open the team's store read-only; return its row count."""
        raise NotImplementedError

    def copy_problem(self) -> str | None:
        """Connected (read-only) and about to be let go for ``harness stream``: why build mode's code could
        not write the stream's copy where it goes (pgvector: the role cannot create a table), or None. Asked
        before any work, so the refusal is one line, not a row failing at its initial load."""
        return None

    def iter_vectors(self, batch: int = BATCH) -> Iterator[tuple[list[str], np.ndarray]]:
        """Every ``(ids, vectors)`` of a connected store, ``batch`` rows at a time (a row without a
        vector: NaN), for the audit and the exact reference of ``ann_recall``
        (:mod:`retrievers.vectordb.store_scan`)."""
        raise NotImplementedError

    def filter_problem(self, flt: Filter) -> str | None:
        """Why this store cannot answer ``flt`` exactly (a column it lacks, a value it would round),
        or ``None``; asked for every query's filter before any search."""
        return None

    # both -----------------------------------------------------------------------------------
    def search(self, q: np.ndarray, k: int, flt: Filter | None) -> tuple[list[str], list[float]]:
        """The engine's top ``k`` for one query vector: ids and higher-is-better scores."""
        raise NotImplementedError

    def size_bytes(self) -> int | None:
        return None

    def params(self) -> dict[str, Any]:
        """Index and search settings as used (defaults filled in)."""
        return {}

    def close(self) -> None:
        return None

    # writes (harness stream, build mode only) -------------------------------------------------
    def insert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        """Add rows of new ids through the engine's own insert."""
        raise NotImplementedError(f"{type(self).__name__} takes no writes")

    def remove(self, ids: list[str]) -> None:
        """Delete the rows of ``ids`` through the engine's own delete."""
        raise NotImplementedError(f"{type(self).__name__} takes no writes")

    def upsert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        """Write new versions of held ids through the engine's own upsert (else delete, then insert)."""
        self.remove(ids)
        self.insert(ids, emb, meta)

    def settle(self) -> None:
        """The engine's own maintenance after writes (compaction, VACUUM); nothing by default."""
        return None

    def column(self, field: str) -> tuple[str, str]:
        got = self.columns.get(field)
        if got is None:  # connect mode: the team's column of that name
            return field, "any"
        return got


class FolderDriver(Driver):
    """A driver whose store is a folder on disk (Chroma, LanceDB, Qdrant local mode): its size is
    that folder's, and ``params`` is the settings the driver recorded when it built or connected,
    so the three embedded engines report both the same way."""

    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        super().__init__(spec, work_dir, depth)
        #: the store's folder once built or connected (``None`` before, or for a server store)
        self._store: Path | None = None
        #: index and search settings as used, filled in by ``build``/``connect``
        self._settings: dict[str, Any] = {}

    def size_bytes(self) -> int | None:
        return folder_bytes(self._store) if self._store is not None and self._store.exists() else None

    def params(self) -> dict[str, Any]:
        return dict(self._settings)


def _cleanup(driver: Driver, folder: Path | None, owned: bool) -> None:
    try:
        driver.close()
    finally:
        if owned and folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


class VectorDB:
    """``Retriever`` over a vector database, through a :class:`Driver`."""

    def __init__(self, spec: VectorDBSpec, driver_cls: type[Driver], ctx: BuildContext) -> None:
        self.spec = spec
        self.name = spec.type
        self.depth = ctx.depth
        self.encoder = spec.make_encoder(ctx.cache_dir, ctx.show_progress)
        self._folder: Path | None = None
        self._copy_from: Path | None = None
        base = spec.work_dir or ctx.extra.get("work_dir")
        self._work_parent = ctx.resolve_path(base) if base else None
        self._driver_cls = driver_cls
        owned = False
        if spec.mode == "connect" and spec.path:
            self._copy_from = spec.store_path(ctx.config_dir) if spec.copy_on_connect else None
        if spec.mode == "build" or self._copy_from is not None:
            self._folder = self._new_folder()
            owned = True
        self.driver = driver_cls(spec, self._folder, ctx.depth)
        if spec.mode == "connect" and spec.path:
            self.driver.path = spec.store_path(ctx.config_dir)
        # the store (and a PostgreSQL the harness started) goes when this retriever is freed
        self._finalizer = weakref.finalize(self, _cleanup, self.driver, self._folder, owned)
        self._doc_ids = np.empty(0, dtype=object)
        self._pos: dict[str, int] = {}
        self._masks: MaskCache | None = None
        self._emb: np.ndarray | None = None
        self._last: tuple[np.ndarray, list[Query], np.ndarray] | None = None
        self._encode_seconds = self._build_seconds = 0.0
        self._cache_hit_rate: float | None = None
        self._rows: int | None = None
        self._audit: Audit | None = None
        #: harness stream over a connected store (:mod:`retrievers.vectordb.team_copy`): the team's vector
        #: of each dataset document until the initial load, then the vector of every row the copy holds
        self._team: dict[str, np.ndarray] | None = None
        self._held: dict[str, np.ndarray] | None = None

    def _new_folder(self) -> Path:
        """A fresh folder of the run for a store the harness owns (under ``work_dir`` when given)."""
        if self._work_parent is not None:
            self._work_parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"harness-{self.spec.type}-", dir=self._work_parent))

    # ------------------------------------------------------------------ Retriever
    def index(self, corpus: Sequence[Document]) -> None:
        cols = Corpus.of(corpus)
        self._doc_ids = cols.ids
        self._pos = {d: i for i, d in enumerate(cols.ids.tolist())}
        self._masks = MaskCache(cols)
        if self._team is not None:  # harness stream over a connected store: its copy, from the team's vectors
            team, self._team = self._team, None
            dim = len(next(iter(team.values()))) if team else 0
            rows = [team[d] for d in cols.ids.tolist()]
            self._write_store(cols, np.stack(rows) if rows else np.empty((0, dim), dtype=np.float32))
            self._held = dict(zip(cols.ids.tolist(), rows))
            return
        if self.spec.mode == "connect":
            t0 = time.perf_counter()
            if self._copy_from is not None and self._folder is not None:
                # the team's store is only read: the engine opens a copy in the work folder
                self.driver.path = copy_store(self.spec.type, self._copy_from, self._folder)
            self._rows = self.driver.connect()
            # before any search: rows without a vector, ids held twice (refused, or keep_best)
            where = f"{self.spec.type} {self.spec.collection!r}"
            self._audit = audit_store(self.driver.iter_vectors(), where, self.spec.duplicate_ids)
            self._build_seconds = time.perf_counter() - t0
            return
        enc = self.encoder
        cache = enc.cache
        hits0, misses0 = (cache.hits, cache.misses) if cache else (0, 0)
        secs0 = enc.encode_seconds
        emb = np.ascontiguousarray(enc.encode_documents(cols), dtype=np.float32)
        if cache is not None:
            looked = (cache.hits - hits0) + (cache.misses - misses0)
            self._cache_hit_rate = (cache.hits - hits0) / looked if looked else None
        self._encode_seconds = enc.encode_seconds - secs0
        self._write_store(cols, emb)

    def _write_store(self, cols: Corpus, emb: np.ndarray) -> None:
        """Build mode's store (and a streamed copy's): ``emb`` and the documents' metadata written by the
        driver, the index built, timed apart from the encoding."""
        kinds = {f: k for f, k in metadata_kinds(cols).items() if k != "mixed"}
        self.driver.columns = {f: (f"m{i}", k) for i, (f, k) in enumerate(sorted(kinds.items()))}
        meta: list[dict[str, Any]] = [{} for _ in range(len(cols))]
        for i, m in cols.metadata_items():
            meta[i] = {self.driver.columns[f][0]: v for f, v in m.items() if f in self.driver.columns}
        t0 = time.perf_counter()
        self.driver.build(cols.ids, emb, meta)
        self._build_seconds = time.perf_counter() - t0
        self._rows = len(cols)
        self._emb = emb

    def prepare_queries(self, queries: Sequence[Query]) -> None:
        """Before any search (the engine calls this with every query of the run): each filter is one
        the store answers exactly, or the run stops with one line naming the query and the reason."""
        for flt, rows in group_by_filter(queries):
            problem = None if flt is None else self.driver.filter_problem(flt)
            if problem is not None:
                raise InputError(f"{self.spec.type}: query {queries[rows[0]].id!r}: filter {problem}", field="filter")

    def search(self, queries: Sequence[Query], k: int) -> Run:
        q = np.ascontiguousarray(self.encoder.encode_queries(queries, progress=len(queries) > 1), dtype=np.float32)
        kk = min(k, len(self._doc_ids))
        idx = np.full((len(queries), max(kk, 0)), -1, dtype=np.int64)
        scores = np.zeros((len(queries), max(kk, 0)))
        if kk > 0:
            # past a tie at the kk-th score, the ranking rule picks the documents, not the store (retrievers.ties)
            scores, idx = cut_by_rule(
                lambda rows, depth: self._rows_of(q, queries, rows, depth), len(queries), kk, self._doc_ids
            )
        if len(queries) > 1:
            self._last = (q, list(queries), idx)  # the engine's answers, for ann_recall: not asked twice
        return Run([x.id for x in queries], self._doc_ids, idx, scores, name=self.name)

    def _rows_of(
        self, q: np.ndarray, queries: Sequence[Query], rows: np.ndarray, depth: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The store's top ``depth`` for the query rows ``rows``: ``(scores, positions)``."""
        found = [self._one(q[r], depth, query_filter(queries[r])) for r in rows]
        return np.stack([sc for _, sc in found]), np.stack([pos for pos, _ in found])

    def _one(self, qv: np.ndarray, k: int, flt: Filter | None) -> tuple[np.ndarray, np.ndarray]:
        surplus = self._audit.surplus if self._audit is not None else 0
        fetch = k + surplus if self._rows is None else min(k + surplus, max(self._rows, k))
        ids, sc = self.driver.search(qv, fetch, flt)
        idx = np.full(k, -1, dtype=np.int64)
        scores = np.zeros(k)
        seen: set[int] = set()
        j = 0
        for d, s in zip(ids, sc):
            pos = self._pos.get(str(d))
            if pos is None:
                raise RetrieverError(f"{self.name}: the store returned id {d!r}, which is not in the corpus")
            if pos in seen:  # duplicate_ids: keep_best (refused otherwise): the id's best row counts
                continue
            seen.add(pos)
            idx[j], scores[j] = pos, s
            j += 1
            if j == k:
                break
        return idx, scores

    # ------------------------------------------------------------------ cost and settings
    def params(self) -> dict[str, Any]:
        return {
            **self.spec.model_dump(mode="json", exclude={"type"}),
            "encoder": self.encoder.identity,
            "engine": self.driver.params(),
        }

    def efficiency_extra(self, k: int) -> dict[str, Any]:
        """``encode_seconds``/``cache_hit_rate`` as dense's; ``build_seconds`` writing and indexing
        the store (connect: opening it); ``index_mb`` the store on disk; ``rows`` in the store;
        ``ann_recall@k`` of the last batch of queries against exact (filtered) search over the same
        embeddings (connect: the store's own vectors)."""
        size = self.driver.size_bytes()
        out: dict[str, Any] = {
            "encode_seconds": self._encode_seconds,
            "build_seconds": self._build_seconds,
            "cache_hit_rate": self._cache_hit_rate,
            "index_mb": None if size is None else size / 2**20,
            "rows": self._rows,
        }
        if self._last is None:
            return out
        q, queries, approx = self._last
        kk = min(k, len(self._doc_ids))
        if self._emb is not None:
            _, exact = exact_search(q, self._emb, kk, distance=self.spec.distance, queries=queries, masks=self._masks)
        else:  # a connected store: its own vectors, read in batches (bounded memory at any table size)
            exact = exact_from_store(
                self.driver.iter_vectors(),
                q,
                kk,
                pos=self._pos,
                distance=self.spec.distance,
                queries=queries,
                masks=self._masks,
            )
        out[f"ann_recall@{kk}"] = ann_recall(approx, exact)
        return out

    # ------------------------------------------------------------------ writes (harness stream)
    # Each write goes through the engine's own client (insert, delete, upsert), never a rebuild of the
    # table: what a search sees after it is the engine's behaviour, which the stream measures.

    def add(self, docs: Sequence[Document]) -> None:
        ids, emb, meta = self._written_rows(docs)
        self.driver.insert(ids, emb, meta)
        self._rows = (self._rows or 0) + len(ids)

    def delete(self, ids: Sequence[str]) -> None:
        self._writable()
        self.driver.remove([str(i) for i in ids])
        self._rows = (self._rows or 0) - len(ids)
        if self._held is not None:
            for i in ids:
                self._held.pop(str(i), None)

    def update(self, docs: Sequence[Document]) -> None:
        ids, emb, meta = self._written_rows(docs)
        self.driver.upsert(ids, emb, meta)

    def settle(self) -> None:
        """The engine's maintenance (LanceDB ``optimize``, pgvector ``VACUUM``...)."""
        self.driver.settle()

    def _writable(self) -> None:
        if self.spec.mode != "build" and self._held is None:
            raise InputError(f"{self.spec.type} connect mode only reads the team's store: no writes", field="mode")

    def _written_rows(self, docs: Sequence[Document]) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
        """Ids, embeddings and metadata (the columns the store was built with) of ``docs``; new ids join
        the id -> position map, so the engine's answers keep mapping to documents."""
        self._writable()
        cols = Corpus.of(docs)
        emb = np.ascontiguousarray(self.encoder.encode_documents(cols, progress=False), dtype=np.float32)
        ids = cols.ids.tolist()
        fresh = [i for i in ids if i not in self._pos]
        if fresh:
            self._pos.update((d, len(self._doc_ids) + j) for j, d in enumerate(fresh))
            self._doc_ids = np.concatenate([self._doc_ids, np.asarray(fresh, dtype=object)])
        meta: list[dict[str, Any]] = [{} for _ in ids]
        for i, m in cols.metadata_items():
            meta[i] = {self.driver.columns[f][0]: v for f, v in m.items() if f in self.driver.columns}
        self._emb = None  # ann_recall@k describes the store as built only
        if self._held is not None:
            self._held.update(zip(ids, emb))
        return ids, emb, meta

    # ------------------------------------------------------------------ harness stream over a connected store
    def prepare_stream(self, doc_ids: Sequence[str]) -> str | None:
        """Before any work of ``harness stream``: a connected row reads the team's vector of every dataset
        document (refused with one line when one is missing, held twice or without a vector), lets go
        of the team's store, and from then on writes to a copy in a store of its own (build mode's code,
        in a fresh folder; pgvector: a ``harness_<random>`` table). Returns what the row streams (recorded
        in ``stream.json``); None in build mode, whose store is the harness's already."""
        if self.spec.mode != "connect":
            return None
        problem = team_copy.stream_problem(self.spec.type, self.spec.url)
        if problem is not None:
            raise InputError(f"{self.spec.type} {problem}", field="url")
        if self._copy_from is not None and self._folder is not None:
            self.driver.path = copy_store(self.spec.type, self._copy_from, self._folder)
        try:
            self.driver.connect()
            where = f"{self.spec.type} {self.spec.collection!r}"
            self._team = team_copy.read_team_vectors(self.driver.iter_vectors(), list(doc_ids), where)
            team_copy.check_dimension(self._team, self.spec.model, self.encoder.dim, where)
            problem = self.driver.copy_problem()
            if problem is not None:
                raise InputError(f"{self.spec.type}: {problem}", field="dsn")
        finally:
            self.driver.close()
        if self._copy_from is not None and self.driver.path is not None:
            shutil.rmtree(self.driver.path, ignore_errors=True)  # the read copy is done with
        folder = self._folder or self._new_folder()
        self._finalizer.detach()  # the read-only driver is closed; the folder goes with the copy's
        self._folder = folder
        self.driver = self._driver_cls(self.spec.model_copy(update={"mode": "build"}), folder, self.depth)
        self._finalizer = weakref.finalize(self, _cleanup, self.driver, folder, True)
        self._audit = None
        return team_copy.NOTE

    def exact_reference(self) -> team_copy.HeldExact | None:
        """A streamed copy's exact reference: exact search over the vectors it was handed
        (:class:`team_copy.HeldExact`); None for a build-mode row (its spec's ``exact_spec()`` is)."""
        if self._held is None:
            return None
        return team_copy.HeldExact(dict(self._held), self.encoder, self.spec.distance)

    def cancel(self) -> None:
        self._finalizer()

    def close(self) -> None:
        """Close the store now (build mode: delete it, and stop a PostgreSQL the harness started)."""
        self._finalizer()


def require(module: str, extra: str) -> Any:
    """Import an engine's module, or say which pip extra installs it; a client that is installed but
    does not import (a dependency of its own missing, a native library) is named with the real error."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        hint = f"needs {module!r}, which is not installed: {extras.install_command(extra)}"
        raise InputError(extras.import_problem(e, module, hint), field="type") from None


def sql_literal(value: Any) -> str:
    """A SQL literal for engines whose filters are strings (LanceDB): quotes doubled, booleans and
    numbers as SQL writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"
