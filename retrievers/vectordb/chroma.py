"""Chroma driver (``type: chroma``): ``chromadb.PersistentClient`` with telemetry off and no embedding
function (the harness hands it vectors).

Chroma searches only through its HNSW index: there is no exact mode, so ``index`` is ``hnsw`` (the
default) and ``none``/``ivf`` are refused. ``index_params`` and ``search_params`` go into the
collection's ``hnsw`` configuration (``max_neighbors``, ``ef_construction``, ``ef_search``); the
defaults here are max_neighbors=32, ef_construction=200 and ef_search=2x depth (Chroma's own
ef_search of 100 is at most k=100). Filters become a ``where`` (``$eq``, ``$in``, ``$gte``...; ``$and``
over several keys).

Chroma compares numbers by stored type: a float bound against an integer field matched the wrong
documents in a check on this machine (``{"$gte": 1.5}`` over ints 0..4 returned 1s), so numeric
fields are stored as floats and every numeric filter value is sent as a float.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from harness.errors import InputError
from harness.filters import Filter
from retrievers.vectordb.base import FolderDriver, VectorDBSpec, require
from retrievers.vectordb.store_scan import BATCH, vectors_from_rows

_COLLECTION = "docs"
_SPACE = {"cosine": "cosine", "ip": "ip", "l2": "l2"}


class ChromaSpec(VectorDBSpec):
    """Chroma: HNSW collection built from the corpus, or a team's collection (connect); docs/vector-databases.md."""

    type: Literal["chroma"] = "chroma"
    extra: ClassVar[str] = "chroma"
    modules: ClassVar[tuple[str, ...]] = ("chromadb",)
    driver: ClassVar[str] = "retrievers.vectordb.chroma:ChromaDriver"
    indexes: ClassVar[tuple[str, ...]] = ("hnsw",)
    copy_on_connect: ClassVar[bool] = True  # PersistentClient writes to the store it opens
    store_marker: ClassVar[str | None] = "chroma.sqlite3"
    index: Literal["none", "hnsw", "ivf"] = "hnsw"


def _num(v: Any) -> Any:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def chroma_where(flt: Filter, column: Any) -> dict[str, Any]:
    ops = {"eq": "$eq", "in": "$in", "gte": "$gte", "gt": "$gt", "lte": "$lte", "lt": "$lt"}
    parts = []
    for c in flt.conditions:
        value = [_num(v) for v in c.value] if c.op == "in" else _num(c.value)
        parts.append({column(c.field)[0]: {ops[c.op]: value}})
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _client(path: str) -> Any:
    chromadb = require("chromadb", "chroma")
    settings = require("chromadb.config", "chroma").Settings(anonymized_telemetry=False)
    return chromadb.PersistentClient(path=path, settings=settings)


class ChromaDriver(FolderDriver):
    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        super().__init__(spec, work_dir, depth)
        self.client: Any = None
        self.col: Any = None
        self._beyond_2_53: set[str] = set()  # build: columns holding an integer no float represents

    def build(self, ids: np.ndarray, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        assert self.work_dir is not None
        self._store = self.work_dir / "chroma"
        self.client = _client(str(self._store))
        hnsw: dict[str, Any] = {"space": _SPACE[self.spec.distance], "max_neighbors": 32, "ef_construction": 200}
        hnsw["ef_search"] = max(2 * self.depth, 100)
        hnsw.update(self.spec.index_params)
        hnsw.update(self.spec.search_params)
        self.col = self.client.create_collection(_COLLECTION, embedding_function=None, configuration={"hnsw": hnsw})
        block = min(4096, int(self.client.get_max_batch_size()))
        n = len(ids)
        for start in range(0, n, block):
            stop = min(n, start + block)
            metas = [{k: _num(v) for k, v in meta[i].items()} or None for i in range(start, stop)]
            self._beyond_2_53 |= {
                k
                for i in range(start, stop)
                for k, v in meta[i].items()
                if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53
            }
            self.col.add(ids=ids[start:stop].tolist(), embeddings=emb[start:stop], metadatas=metas)
        self._settings = {"hnsw": hnsw}

    # writes (harness stream): Chroma keeps new rows in a brute-force buffer until it flushes them to
    # its HNSW graph; delete and upsert go through the same log
    def insert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        self.col.add(ids=ids, embeddings=emb, metadatas=[{k: _num(v) for k, v in m.items()} or None for m in meta])

    def remove(self, ids: list[str]) -> None:
        self.col.delete(ids=ids)

    def upsert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        self.col.upsert(ids=ids, embeddings=emb, metadatas=[{k: _num(v) for k, v in m.items()} or None for m in meta])

    def connect(self) -> int:
        s = self.spec
        if s.url:
            chromadb = require("chromadb", "chroma")
            settings = require("chromadb.config", "chroma").Settings(anonymized_telemetry=False)
            from urllib.parse import urlparse

            u = urlparse(s.url)
            self.client = chromadb.HttpClient(
                host=u.hostname or "127.0.0.1", port=u.port or 8000, ssl=u.scheme == "https", settings=settings
            )
        elif self.path is not None:
            # a copy of the team's store (retrievers.vectordb.store_copy): PersistentClient writes
            self.client = _client(str(self.path))
            self._store = self.path
        else:
            raise InputError("chroma connect mode needs `path` or `url`", field="path")
        if s.search_params or s.index_params:
            raise InputError(
                "chroma connect mode: HNSW settings are the collection's (changing them writes to it)",
                field="search_params",
            )
        try:
            self.col = self.client.get_collection(s.collection, embedding_function=None)
        except Exception as e:  # chromadb raises NotFoundError / ValueError by version
            raise InputError(f"chroma: cannot open collection {s.collection!r}: {e}", field="collection") from None
        self._settings = {"configuration": str(getattr(self.col, "configuration", ""))}
        return int(self.col.count())

    def iter_vectors(self, batch: int = BATCH) -> Iterator[tuple[list[str], np.ndarray]]:
        offset = 0
        while True:
            got = self.col.get(include=["embeddings"], limit=batch, offset=offset)
            ids = [str(x) for x in got["ids"]]
            if not ids:
                break
            yield ids, vectors_from_rows(list(got["embeddings"]))
            offset += len(ids)

    def filter_problem(self, flt: Filter) -> str | None:
        """Chroma compares numbers as floats here (see the module doc): an integer beyond 2^53 has no
        exact float, so its filter would admit neighbours of the value."""
        for c in flt.conditions:
            if self.column(c.field)[0] in self._beyond_2_53:
                return (
                    f"{c.field}: documents hold integers beyond 2^53, which Chroma stores as floats that cannot "
                    "tell them from their neighbours: not exact in chroma"
                )
            for v in c.value if c.op == "in" else (c.value,):
                if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
                    return (
                        f"{c.field}: integer {v} is beyond 2^53, which Chroma's float comparison cannot tell "
                        "from its neighbours: not exact in chroma"
                    )
        return None

    def search(self, q: np.ndarray, k: int, flt: Filter | None) -> tuple[list[str], list[float]]:
        res = self.col.query(
            query_embeddings=q[None, :],
            n_results=k,
            where=None if flt is None else chroma_where(flt, self.column),
            include=["distances"],
        )
        d = np.asarray(res["distances"][0], dtype=np.float64)
        score = -d if self.spec.distance == "l2" else 1.0 - d
        return [str(x) for x in res["ids"][0]], score.tolist()

    def close(self) -> None:
        self.col = None
        self.client = None
