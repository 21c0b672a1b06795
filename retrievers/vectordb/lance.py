"""LanceDB driver (``type: lancedb``): an embedded, file-based store.

``index: none`` is LanceDB's flat search (``bypass_vector_index``: every row scored, exact);
``hnsw`` is its ``IVF_HNSW_SQ`` index (one partition by default, so it is HNSW over scalar-quantized
vectors) searched with ``ef`` and re-ranked on full vectors (``refine_factor``); ``ivf`` is
``IVF_FLAT`` over 4*sqrt(n) partitions searched with ``nprobes`` (dense's default nprobe rule).
Filters become a SQL ``WHERE`` applied before the vector search (``prefilter=True``), so a filtered
query gets the filtered top k, not a post-filtered top k that comes back short.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from harness.errors import InputError
from harness.filters import Filter
from retrievers.dense import default_nprobe
from retrievers.vectordb.base import FolderDriver, VectorDBSpec, require, sql_literal
from retrievers.vectordb.store_scan import BATCH, vectors_from_rows

_METRIC = {"cosine": "cosine", "ip": "dot", "l2": "l2"}

#: LanceDB's Rust core logs through env_logger at ``$LANCEDB_LOG`` (default ``warn``), straight to the
#: process's stderr: raw ``[... WARN lance::...]`` lines in the middle of the harness's display and tables.
#: Errors only unless the user set the variable (``LANCEDB_LOG=warn`` shows them again); the value is read
#: once, when lancedb's native module loads, so it is set before the first import.
LOG_VARIABLE, LOG_LEVEL = "LANCEDB_LOG", "error"


def _lancedb() -> Any:
    os.environ.setdefault(LOG_VARIABLE, LOG_LEVEL)
    return require("lancedb", "lancedb")


class LanceDBSpec(VectorDBSpec):
    """LanceDB: an embedded store built from the corpus, or a team's table (connect); docs/vector-databases.md."""

    type: Literal["lancedb"] = "lancedb"
    extra: ClassVar[str] = "lancedb"
    modules: ClassVar[tuple[str, ...]] = ("lancedb", "pyarrow")
    driver: ClassVar[str] = "retrievers.vectordb.lance:LanceDriver"


def _ident(name: str) -> str:
    """A column name as LanceDB's SQL filter reads it (backticks around anything unusual)."""
    return name if name.isidentifier() and name.isascii() else "`" + name.replace("`", "``") + "`"


def where_clause(flt: Filter, column: Any) -> str:
    """``flt`` as a LanceDB SQL predicate (``column(field) -> (name, kind)``)."""
    parts = []
    for c in flt.conditions:
        col = _ident(column(c.field)[0])
        values = c.value if c.op == "in" else (c.value,)
        if any(isinstance(v, float) for v in values):
            # DataFusion refuses a float literal against an integer column: compare as doubles
            col = f"CAST({col} AS DOUBLE)"
        if c.op == "eq":
            parts.append(f"{col} = {sql_literal(c.value)}")
        elif c.op == "in":
            parts.append(f"{col} IN ({', '.join(sql_literal(v) for v in c.value)})")
        else:
            op = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}[c.op]
            parts.append(f"{col} {op} {sql_literal(c.value)}")
    return " AND ".join(f"({p})" for p in parts)


class LanceDriver(FolderDriver):
    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        super().__init__(spec, work_dir, depth)
        self.table: Any = None
        self.id_field, self.vector_field = "id", "vector"

    def build(self, ids: np.ndarray, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        lancedb = _lancedb()
        assert self.work_dir is not None
        self._store = self.work_dir / "lancedb"
        db = lancedb.connect(str(self._store))
        n = len(emb)
        self.table = db.create_table("docs", data=self._arrow(ids.tolist(), emb, meta))
        s = self.spec
        p = dict(s.index_params)
        if s.index != "none" and n >= 2:
            if s.index == "hnsw":
                p.setdefault("index_type", "IVF_HNSW_SQ")
                p.setdefault("num_partitions", 1)
                p.setdefault("m", 20)
                p.setdefault("ef_construction", 300)
            else:
                p.setdefault("index_type", "IVF_FLAT")
                p.setdefault("num_partitions", max(1, min(n, int(4 * np.sqrt(n)))))
            with warnings.catch_warnings():  # the metric= form is the one that takes every index type
                warnings.simplefilter("ignore", DeprecationWarning)
                self.table.create_index(metric=_METRIC[s.distance], vector_column_name="vector", **p)
        self._settings = {"index_params": p, "search_params": self._search_defaults(n, p)}

    def _arrow(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> Any:
        """The rows as the Arrow table LanceDB writes: id, vector, the metadata columns."""
        pa = require("pyarrow", "lancedb")
        arrays: dict[str, Any] = {
            "id": pa.array(ids, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1), pa.float32()), emb.shape[1]),
        }
        types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        for name, kind in self.columns.values():
            values = [m.get(name) for m in meta]
            if kind == "float":
                values = [None if v is None else float(v) for v in values]
            arrays[name] = pa.array(values, types[kind])
        return pa.table(arrays)

    # writes (harness stream): LanceDB appends new fragments, searched flat beside the index until
    # optimize() folds them in; a delete marks rows in a deletion file
    def insert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        self.table.add(self._arrow(ids, emb, meta))

    def remove(self, ids: list[str]) -> None:
        self.table.delete(f"id IN ({', '.join(sql_literal(i) for i in ids)})")

    def upsert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        rows = self._arrow(ids, emb, meta)
        self.table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    def settle(self) -> None:
        self.table.optimize()

    def _search_defaults(self, n: int, p: dict[str, Any]) -> dict[str, Any]:
        s = self.spec
        sp = dict(s.search_params)
        if s.index == "hnsw":
            # ef below k caps what comes back; twice the depth keeps recall@depth near exact
            sp.setdefault("ef", max(2 * self.depth, 64))
            sp.setdefault("refine_factor", 2)
        elif s.index == "ivf":
            parts = int(p.get("num_partitions") or max(1, int(4 * np.sqrt(max(n, 1)))))
            sp.setdefault("nprobes", default_nprobe(max(n, 1), parts, self.depth))
        return sp

    def connect(self) -> int:
        lancedb = _lancedb()
        s = self.spec
        if self.path is None:
            raise InputError("lancedb connect mode needs `path` (the database folder)", field="path")
        db = lancedb.connect(str(self.path))  # only read: lancedb writes nothing on open or search
        try:
            self.table = db.open_table(s.collection)
        except Exception as e:  # lancedb raises ValueError / FileNotFoundError by version
            raise InputError(
                f"lancedb: cannot open table {s.collection!r} in {self.path}: {e}", field="collection"
            ) from None
        names = set(self.table.schema.names)
        for what, col in (("id_field", s.id_field), ("vector_field", s.vector_field)):
            if col not in names:
                raise InputError(f"lancedb table {s.collection!r} has no column {col!r} ({what})", field=what)
        self.id_field, self.vector_field = s.id_field, s.vector_field
        self._store = self.path / f"{s.collection}.lance"
        self._settings = {"search_params": self._search_defaults(self.table.count_rows(), dict(s.index_params))}
        return int(self.table.count_rows())

    def iter_vectors(self, batch: int = BATCH) -> Iterator[tuple[list[str], np.ndarray]]:
        reader = self.table.search().select([self.id_field, self.vector_field]).limit(None).to_batches(batch)
        for b in reader:
            ids = [str(x) for x in b.column(self.id_field).to_pylist()]
            col = b.column(self.vector_field)
            if col.null_count == 0 and hasattr(col, "flatten") and hasattr(col.type, "list_size"):
                vecs = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(ids), -1)
            else:
                vecs = vectors_from_rows(col.to_pylist())
            yield ids, vecs

    def filter_problem(self, flt: Filter) -> str | None:
        """A filter on a column the team's table lacks would fail inside LanceDB mid-run."""
        if self.spec.mode != "connect" or self.table is None:
            return None
        names = set(self.table.schema.names)
        for f in flt.fields:
            if self.column(f)[0] not in names:
                return f"names field {f!r}: table {self.spec.collection!r} has no such column"
        return None

    def search(self, q: np.ndarray, k: int, flt: Filter | None) -> tuple[list[str], list[float]]:
        s = self.spec
        qb = (
            self.table.search(q, vector_column_name=self.vector_field)
            .distance_type(_METRIC[s.distance])
            .select([self.id_field, "_distance"])
            .limit(k)
        )
        if flt is not None:
            qb = qb.where(where_clause(flt, self.column), prefilter=True)
        sp = dict(self._settings.get("search_params", {}))
        if "ef" in sp:  # LanceDB refuses ef below k x refine_factor (a tie-aware fetch asks k past the depth)
            sp["ef"] = max(int(sp["ef"]), k * int(sp.get("refine_factor") or 1))
        if s.index == "none":
            qb = qb.bypass_vector_index()
        else:
            for key, value in sp.items():
                qb = getattr(qb, key)(value)
        res = qb.to_arrow()
        dist = np.asarray(res.column("_distance").to_numpy(), dtype=np.float64)
        score = -dist if s.distance == "l2" else 1.0 - dist
        return [str(x) for x in res.column(self.id_field).to_pylist()], score.tolist()

    def close(self) -> None:
        self.table = None
