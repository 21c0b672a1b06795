"""Qdrant driver (``type: qdrant``): ``qdrant-client``'s local mode (build) or a server (connect).

Build mode writes a local-mode collection (``QdrantClient(path=...)``, no server, no network).
Local mode always searches exactly (brute force), so ``index: none`` and ``hnsw`` both give exact
results there; against a server (connect with ``url``) ``none`` asks for ``exact=True`` and ``hnsw``
uses the collection's HNSW index with ``search_params`` (``hnsw_ef``, default 2x depth). Filters
become a ``Filter(must=[FieldCondition...])`` (``MatchValue``, ``MatchAny``, ``Range``), which Qdrant
applies during the search.

Local mode commits every point to SQLite separately (in a check here, 500 points spent 10 s in
SQLite commits); the store is the harness's own and thrown away after the run, so the bulk load runs
with SQLite's ``synchronous=OFF``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import model_validator

from harness.errors import InputError
from harness.filters import Filter
from retrievers.vectordb.base import FolderDriver, VectorDBSpec, require
from retrievers.vectordb.store_scan import BATCH, vectors_from_rows

_COLLECTION = "docs"


class QdrantSpec(VectorDBSpec):
    """Qdrant: local mode built from the corpus, or a team's collection (connect); docs/vector-databases.md."""

    type: Literal["qdrant"] = "qdrant"
    extra: ClassVar[str] = "qdrant"
    modules: ClassVar[tuple[str, ...]] = ("qdrant_client",)
    driver: ClassVar[str] = "retrievers.vectordb.qdrant:QdrantDriver"
    indexes: ClassVar[tuple[str, ...]] = ("none", "hnsw")
    copy_on_connect: ClassVar[bool] = True  # the local client takes a lock file in the store
    store_marker: ClassVar[str | None] = "meta.json"

    @model_validator(mode="after")
    def _local_is_exact(self) -> QdrantSpec:
        if self.index == "hnsw" and not self.url:
            raise ValueError(
                "index: qdrant's local mode (build, or connect with path) always searches exactly: "
                "use index: none, or connect to a Qdrant server (url) for its HNSW index"
            )
        return self


def qdrant_filter(flt: Filter, column: Any) -> Any:
    m = require("qdrant_client.models", "qdrant")
    must: list[Any] = []
    for c in flt.conditions:
        key = column(c.field)[0]
        if c.op == "eq":
            must.append(_equals(m, key, c.value))
        elif c.op == "in":
            values = list(c.value)
            if all(isinstance(v, str) for v in values) or all(
                isinstance(v, int) and not isinstance(v, bool) for v in values
            ):
                must.append(m.FieldCondition(key=key, match=m.MatchAny(any=values)))
            else:
                must.append(m.Filter(should=[_equals(m, key, v) for v in values]))
        else:
            must.append(m.FieldCondition(key=key, range=m.Range(**{c.op: c.value})))
    return m.Filter(must=must)


def _equals(m: Any, key: str, value: Any) -> Any:
    """``MatchValue`` takes strings, integers and booleans; a float equality is a closed range."""
    if isinstance(value, float):
        return m.FieldCondition(key=key, range=m.Range(gte=value, lte=value))
    return m.FieldCondition(key=key, match=m.MatchValue(value=value))


class QdrantDriver(FolderDriver):
    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        super().__init__(spec, work_dir, depth)
        self.client: Any = None
        self.collection = _COLLECTION
        self.id_field = "id"
        self.using: str | None = None
        self._local = True

    def _distance(self) -> Any:
        m = require("qdrant_client.models", "qdrant")
        return {"cosine": m.Distance.COSINE, "ip": m.Distance.DOT, "l2": m.Distance.EUCLID}[self.spec.distance]

    def build(self, ids: np.ndarray, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        qc = require("qdrant_client", "qdrant")
        m = require("qdrant_client.models", "qdrant")
        assert self.work_dir is not None
        self._store = self.work_dir / "qdrant"
        self.client = qc.QdrantClient(path=str(self._store))
        n, d = emb.shape
        hnsw = m.HnswConfigDiff(**self.spec.index_params) if self.spec.index_params else None
        self.client.create_collection(
            self.collection, vectors_config=m.VectorParams(size=d, distance=self._distance()), hnsw_config=hnsw
        )
        _fast_local_writes(self.client, self.collection)
        block = 1024
        for start in range(0, n, block):
            stop = min(n, start + block)
            payloads = [{"id": str(ids[i]), **meta[i]} for i in range(start, stop)]
            self.client.upsert(
                self.collection,
                m.Batch(ids=list(range(start, stop)), vectors=emb[start:stop].tolist(), payloads=payloads),
                wait=True,
            )
        self._settings = {"index_params": dict(self.spec.index_params), "local_mode": True, "exact": True}
        self._points = {str(d): i for i, d in enumerate(ids.tolist())}

    # writes (harness stream): points are numbered as built (the document's position), new ones after
    def insert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        start = max(self._points.values(), default=-1) + 1
        self._points.update((d, start + j) for j, d in enumerate(ids))
        self.upsert(ids, emb, meta)

    def remove(self, ids: list[str]) -> None:
        m = require("qdrant_client.models", "qdrant")
        points = [self._points.pop(i) for i in ids if i in self._points]
        self.client.delete(self.collection, points_selector=m.PointIdsList(points=points), wait=True)

    def upsert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        m = require("qdrant_client.models", "qdrant")
        points = [self._points[i] for i in ids]
        payloads = [{"id": i, **x} for i, x in zip(ids, meta)]
        self.client.upsert(self.collection, m.Batch(ids=points, vectors=emb.tolist(), payloads=payloads), wait=True)

    def connect(self) -> int:
        qc = require("qdrant_client", "qdrant")
        s = self.spec
        if s.url:
            self.client = qc.QdrantClient(url=s.url)
            self._local = False
        elif self.path is not None:
            # a copy of the team's store (retrievers.vectordb.store_copy): the local client writes
            self.client = qc.QdrantClient(path=str(self.path))
            self._store = self.path
        else:
            raise InputError("qdrant connect mode needs `path` (local mode) or `url`", field="path")
        self.collection, self.id_field = s.collection or _COLLECTION, s.id_field
        if not self.client.collection_exists(self.collection):
            raise InputError(f"qdrant: no collection {self.collection!r}", field="collection")
        vectors = self.client.get_collection(self.collection).config.params.vectors
        if isinstance(vectors, dict):
            if s.vector_field not in vectors:
                raise InputError(
                    f"qdrant collection {self.collection!r} has no vector {s.vector_field!r} "
                    f"(it has {', '.join(vectors)})",
                    field="vector_field",
                )
            self.using = s.vector_field
        self._settings = {"local_mode": self._local, "search_params": self._search_params_dump()}
        return int(self.client.count(self.collection, exact=True).count)

    def _search_params(self) -> Any:
        if self._local:
            return None  # local mode is always exact and warns on search params
        m = require("qdrant_client.models", "qdrant")
        if self.spec.index == "none":
            return m.SearchParams(exact=True)
        sp = dict(self.spec.search_params)
        sp.setdefault("hnsw_ef", max(2 * self.depth, 64))
        return m.SearchParams(**sp)

    def _search_params_dump(self) -> dict[str, Any]:
        p = self._search_params()
        return {} if p is None else p.model_dump(exclude_none=True)

    def iter_vectors(self, batch: int = BATCH) -> Iterator[tuple[list[str], np.ndarray]]:
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.collection, limit=batch, offset=offset, with_payload=[self.id_field], with_vectors=True
            )
            vecs = [(p.vector or {}).get(self.using) if self.using else p.vector for p in points]
            yield [str((p.payload or {}).get(self.id_field, p.id)) for p in points], vectors_from_rows(vecs)
            if offset is None:
                break

    def search(self, q: np.ndarray, k: int, flt: Filter | None) -> tuple[list[str], list[float]]:
        res = self.client.query_points(
            self.collection,
            query=q.tolist(),
            using=self.using,
            query_filter=None if flt is None else qdrant_filter(flt, self.column),
            search_params=self._search_params(),
            limit=k,
            with_payload=[self.id_field],
        )
        ids = [str((p.payload or {}).get(self.id_field, p.id)) for p in res.points]
        scores = np.asarray([p.score for p in res.points], dtype=np.float64)
        if self.spec.distance == "l2":
            scores = -scores  # Qdrant reports the Euclidean distance itself
        return ids, scores.tolist()

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            finally:
                self.client = None


def _fast_local_writes(client: Any, collection: str) -> None:
    """``PRAGMA synchronous=OFF`` on local mode's SQLite file (see the module doc); where the client's
    internals differ, writes are just slower."""
    try:
        storage = client._client.collections[collection].storage.storage
        storage.execute("PRAGMA synchronous=OFF")
    except (AttributeError, KeyError, TypeError):
        return
