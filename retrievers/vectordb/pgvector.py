"""pgvector driver (``type: pgvector``): PostgreSQL with the ``vector`` extension.

Build mode without a ``dsn`` starts a private PostgreSQL from the ``pgserver`` wheel (a unix socket
in the run's work folder, no TCP port) and stops and deletes it when the retriever is freed; with a
``dsn`` it writes a table of its own (``harness_<random>``) there and drops it afterwards. Connect
mode reads a team's table in a session opened with ``default_transaction_read_only=on``: every
statement runs read only, so the harness cannot change it, and the search settings (set once for the
session) hold for every search.

``index: none`` is a sequential scan (exact; index scans are switched off, so a table's own index is
not used); ``hnsw`` is ``USING hnsw`` (pgvector's m=16, ef_construction=64) searched with
``hnsw.ef_search`` (default 2x depth, at most 1000: pgvector returns at most ef_search rows, so its
own default of 40 would cut a top 100 to 40); ``ivf`` is ``ivfflat`` over 4*sqrt(n) lists searched
with ``ivfflat.probes`` (dense's nprobe rule). Any ``search_params`` key with a dot is set as that
PostgreSQL setting (``hnsw.iterative_scan: relaxed_order`` on pgvector >= 0.8). Filters become a
``WHERE`` with bound parameters; with an index, PostgreSQL filters the rows the index scan yields.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from harness import cleanup
from harness.errors import InputError, RetrieverError
from harness.filters import Filter
from retrievers.dense import default_nprobe
from retrievers.vectordb import pg_lifecycle
from retrievers.vectordb.base import Driver, VectorDBSpec, require
from retrievers.vectordb.store_scan import BATCH, vectors_from_rows

_OPS = {"cosine": ("<=>", "vector_cosine_ops"), "ip": ("<#>", "vector_ip_ops"), "l2": ("<->", "vector_l2_ops")}
_TYPES = {"str": "text", "int": "bigint", "float": "double precision", "bool": "boolean"}


class PgvectorSpec(VectorDBSpec):
    """pgvector: a local PostgreSQL the harness starts, or a team's table read-only; docs/vector-databases.md."""

    type: Literal["pgvector"] = "pgvector"
    extra: ClassVar[str] = "pgvector"
    modules: ClassVar[tuple[str, ...]] = ("psycopg",)
    driver: ClassVar[str] = "retrievers.vectordb.pgvector:PgvectorDriver"

    def preflight(self, config_dir: Path) -> None:
        super().preflight(config_dir)
        if self.mode == "build" and not self.dsn:
            import importlib.util

            if importlib.util.find_spec("pgserver") is None:
                raise InputError(
                    "pgvector without a dsn starts a local PostgreSQL from 'pgserver', which is not installed: "
                    "pip install 'retrieval-harness[pgvector]'",
                    field="type",
                )
        if self.mode == "connect" and not self.dsn:
            raise InputError("pgvector connect mode needs `dsn`", field="dsn")


def start_postgres(folder: Path, attempts: int = 3) -> Any:
    """A private PostgreSQL (``pgserver``: unix socket in ``folder``, no TCP port), stopped and deleted
    by its ``cleanup()``. A start that fails (seen once when two servers started at the same moment
    on a loaded machine) is retried in a fresh data folder."""
    pgserver = require("pgserver", "pgvector")
    for attempt in range(attempts):
        try:
            return pgserver.get_server(folder / f"pgdata{attempt or ''}", cleanup_mode="delete")
        except (OSError, subprocess.CalledProcessError) as e:
            if attempt == attempts - 1:
                raise RetrieverError(
                    f"pgvector: the local PostgreSQL did not start ({type(e).__name__}: {e})"
                ) from None
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def vector_literal(v: np.ndarray) -> str:
    """A vector as pgvector's text form; ``repr`` of each float32 value round-trips exactly."""
    return "[" + ",".join(map(repr, np.asarray(v, dtype=np.float32).tolist())) + "]"


def where_sql(flt: Filter, column: Any) -> tuple[Any, list[Any]]:
    """``flt`` as a SQL condition with bound parameters."""
    sql = require("psycopg", "pgvector").sql
    parts, params = [], []
    for c in flt.conditions:
        col = sql.Identifier(column(c.field)[0])
        if c.op == "eq":
            parts.append(sql.SQL("{} = %s").format(col))
            params.append(c.value)
        elif c.op == "in":
            values = list(c.value)
            if any(isinstance(v, float) for v in values):
                values = [float(v) for v in values]
            parts.append(sql.SQL("{} = ANY(%s)").format(col))
            params.append(values)
        else:
            op = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}[c.op]
            parts.append(sql.SQL("{} " + op + " %s").format(col))
            params.append(c.value)
    return sql.SQL(" AND ").join(parts), params


class PgvectorDriver(Driver):
    def __init__(self, spec: VectorDBSpec, work_dir: Path | None, depth: int) -> None:
        super().__init__(spec, work_dir, depth)
        self.conn: Any = None
        self.server: Any = None
        self.table = spec.collection or f"harness_{uuid.uuid4().hex[:12]}"
        self.id_field, self.vector_field = "id", "embedding"
        self._owned_table = False
        self._settings: dict[str, Any] = {}
        self._columns: set[str] = set()  # connect: the team's table's columns
        self._forget: Any = None  # forgets the undo registered with harness.cleanup
        self._stop_server: Any = None

    def _connect(self, dsn: str, *, read_only: bool) -> None:
        """An autocommit session, so ``set_config`` holds for every later search. Connect mode makes
        the *session* read only (``default_transaction_read_only=on`` in its startup options): psycopg's
        ``read_only`` only changes ``BEGIN``, and an autocommit statement would write."""
        psycopg = require("psycopg", "pgvector")
        extra: dict[str, Any] = {}
        if read_only:
            try:
                given = psycopg.conninfo.conninfo_to_dict(dsn).get("options") or ""
            except psycopg.Error as e:
                raise InputError(f"pgvector: unreadable dsn ({type(e).__name__})", field="dsn") from None
            extra["options"] = f"{given} -c default_transaction_read_only=on".strip()
        try:
            self.conn = psycopg.connect(dsn, autocommit=True, **extra)
        except psycopg.Error as e:
            raise InputError(f"pgvector: cannot connect ({type(e).__name__})", field="dsn") from None
        if read_only and self.conn.execute("SHOW default_transaction_read_only").fetchone()[0] != "on":
            self.conn.close()  # a pooler that drops startup options: refuse rather than risk a write
            raise InputError("pgvector: the connection could not be made read only", field="dsn")

    def build(self, ids: np.ndarray, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        s = self.spec
        sql = require("psycopg", "pgvector").sql
        if s.dsn:
            dsn = s.dsn
            self.table = f"harness_{uuid.uuid4().hex[:12]}"
        else:
            assert self.work_dir is not None
            # a server a killed run left beside this one goes first; this one goes on any exit
            pg_lifecycle.sweep_stale_servers(self.work_dir.parent, own=self.work_dir)
            pg_lifecycle.write_owner(self.work_dir)
            self._stop_server = pg_lifecycle.stop_server(self.work_dir, lambda: self.server)
            self._forget = cleanup.on_exit(self._stop_server)
            self.server = start_postgres(self.work_dir)
            dsn = self.server.get_uri()
        self._connect(dsn, read_only=False)
        if s.dsn:
            # tables of runs that ended without dropping theirs (their lock is free) go; this run's
            # table is locked for as long as its session lives, and dropped on any exit
            pg_lifecycle.sweep_stale_tables(self.conn)
            pg_lifecycle.lock_table(self.conn, self.table)
            self._forget = cleanup.on_exit(pg_lifecycle.drop_table(s.dsn, self.table, self.conn.info.backend_pid))
        n, d = emb.shape
        opclass = _OPS[s.distance][1]
        t = sql.Identifier(self.table)
        c = self.conn
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cols = [sql.SQL("id text NOT NULL"), sql.SQL("embedding vector({})").format(sql.Literal(d))]
        cols += [sql.SQL("{} " + _TYPES[kind]).format(sql.Identifier(name)) for name, kind in self.columns.values()]
        c.execute(sql.SQL("CREATE TABLE {} ({})").format(t, sql.SQL(", ").join(cols)))
        self._owned_table = True
        self.insert(ids, emb, meta)
        p = dict(s.index_params)
        if s.index == "hnsw":
            p.setdefault("m", 16)
            p.setdefault("ef_construction", 64)
        elif s.index == "ivf":
            p.setdefault("lists", max(1, min(n, int(4 * np.sqrt(max(n, 1))))))
        if s.index != "none":
            method = "hnsw" if s.index == "hnsw" else "ivfflat"
            with_ = sql.SQL(", ").join(
                sql.SQL("{} = {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in p.items()
            )
            c.execute(
                sql.SQL("CREATE INDEX ON {} USING " + method + " (embedding " + opclass + ") WITH ({})").format(
                    t, with_
                )
            )
        c.execute(sql.SQL("ANALYZE {}").format(t))
        self._settings = {"index_params": p}
        self._apply_search_settings(n, p)

    # writes (harness stream): COPY for new rows, DELETE, UPDATE; a deleted row stays in the HNSW
    # graph (taking search slots) until VACUUM, which settle() runs
    def insert(self, ids: Any, emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        sql = require("psycopg", "pgvector").sql
        names = ["id", "embedding", *(name for name, _ in self.columns.values())]
        t = sql.Identifier(self.table)
        copy = sql.SQL("COPY {} ({}) FROM STDIN").format(t, sql.SQL(", ").join(map(sql.Identifier, names)))
        with self.conn.cursor() as cur, cur.copy(copy) as cp:
            for i in range(len(ids)):
                m = meta[i]
                cp.write_row((ids[i], vector_literal(emb[i]), *(m.get(name) for name, _ in self.columns.values())))

    def remove(self, ids: list[str]) -> None:
        sql = require("psycopg", "pgvector").sql
        self.conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(sql.Identifier(self.table)), [ids])

    def upsert(self, ids: list[str], emb: np.ndarray, meta: list[dict[str, Any]]) -> None:
        sql = require("psycopg", "pgvector").sql
        names = ["embedding", *(name for name, _ in self.columns.values())]
        sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(x)) for x in names)
        stmt = sql.SQL("UPDATE {} SET {} WHERE id = %s").format(sql.Identifier(self.table), sets)
        cols = [x for x, _ in self.columns.values()]
        rows = [(vector_literal(e), *(m.get(x) for x in cols), i) for i, e, m in zip(ids, emb, meta)]
        with self.conn.cursor() as cur:
            cur.executemany(stmt, rows)

    def settle(self) -> None:
        sql = require("psycopg", "pgvector").sql
        self.conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(self.table)))

    def _apply_search_settings(self, n: int, p: dict[str, Any]) -> None:
        s = self.spec
        sp = dict(s.search_params)
        gucs: dict[str, Any] = {}
        if s.index == "none":
            gucs.update(enable_indexscan="off", enable_bitmapscan="off")
        elif s.index == "hnsw":
            gucs["hnsw.ef_search"] = sp.pop("ef_search", min(1000, max(40, 2 * self.depth)))
        else:
            lists = int(p.get("lists") or max(1, int(4 * np.sqrt(max(n, 1)))))
            gucs["ivfflat.probes"] = sp.pop("probes", default_nprobe(max(n, 1), lists, self.depth))
        for key, value in sp.items():
            if "." not in key and key not in ("enable_indexscan", "enable_bitmapscan", "enable_seqscan"):
                raise InputError(
                    f"pgvector search_params: unknown {key!r} (ef_search, probes, or a PostgreSQL setting "
                    "such as hnsw.iterative_scan)",
                    field="search_params",
                )
            gucs[key] = value
        for key, value in gucs.items():
            v = str(value).lower() if isinstance(value, bool) else str(value)
            # a session setting in an autocommit statement: it holds for every search (one set inside
            # a transaction that is then rolled back would be undone, and the searches would run
            # with PostgreSQL's defaults: an index scan for `none`, ef_search 40)
            self.conn.execute("SELECT set_config(%s, %s, false)", (key, v))
        self._settings["search_params"] = gucs

    def connect(self) -> int:
        s = self.spec
        assert s.dsn is not None
        self._connect(s.dsn, read_only=True)
        self.table, self.id_field, self.vector_field = s.collection or "", s.id_field, s.vector_field
        found = {
            r[0]
            for r in self.conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s", (self.table,)
            ).fetchall()
        }
        if not found:
            raise InputError(f"pgvector: no table {self.table!r} (collection)", field="collection")
        self._columns = found
        for what, col in (("id_field", s.id_field), ("vector_field", s.vector_field)):
            if col not in found:
                raise InputError(f"pgvector table {self.table!r} has no column {col!r} ({what})", field=what)
        sql = require("psycopg", "pgvector").sql
        n = int(self.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(self.table))).fetchone()[0])
        self._apply_search_settings(n, dict(s.index_params))
        return n

    def copy_problem(self) -> str | None:
        """The stream's copy is a ``harness_<random>`` table build mode creates in the dsn's database: the
        role must be able to create one in its current schema (asked in the read-only session: a read)."""
        schema, ok = self.conn.execute(
            "SELECT current_schema(), coalesce(has_schema_privilege(current_schema(), 'CREATE'), false)"
        ).fetchone()
        if ok:
            return None
        return (
            f"the dsn's role cannot create a table in schema {schema!r}: harness stream writes to a copy of the "
            "team's table it creates there (harness_<random>, dropped afterwards; the team's table is only read); "
            "grant CREATE on that schema, or use a dsn whose role may create tables"
        )

    def iter_vectors(self, batch: int = BATCH) -> Iterator[tuple[list[str], np.ndarray]]:
        """The table through a server-side cursor, ``batch`` rows at a time (in the session's read-only
        transaction): memory holds one batch, whatever the table's size."""
        sql = require("psycopg", "pgvector").sql
        q = sql.SQL("SELECT {}::text, {}::text FROM {}").format(
            sql.Identifier(self.id_field), sql.Identifier(self.vector_field), sql.Identifier(self.table)
        )
        with self.conn.transaction(), self.conn.cursor(name="harness_scan") as cur:
            cur.itersize = batch
            cur.execute(q)
            while rows := cur.fetchmany(batch):
                yield [str(r[0]) for r in rows], vectors_from_rows([r[1] for r in rows])

    def filter_problem(self, flt: Filter) -> str | None:
        """A filter on a column the team's table lacks would fail inside PostgreSQL mid-run."""
        if not self._columns:
            return None
        for f in flt.fields:
            if self.column(f)[0] not in self._columns:
                return f"names field {f!r}: table {self.table!r} has no such column"
        return None

    def search(self, q: np.ndarray, k: int, flt: Filter | None) -> tuple[list[str], list[float]]:
        sql = require("psycopg", "pgvector").sql
        op, _ = _OPS[self.spec.distance]
        vec = sql.Identifier(self.vector_field)
        dist = sql.SQL("{} " + op + " %s::vector").format(vec)
        where, wparams = (sql.SQL("TRUE"), []) if flt is None else where_sql(flt, self.column)
        query = sql.SQL("SELECT {}::text, {} FROM {} WHERE {} ORDER BY {} LIMIT %s").format(
            sql.Identifier(self.id_field), dist, sql.Identifier(self.table), where, dist
        )
        v = vector_literal(q)
        rows = self.conn.execute(query, [v, *wparams, v, k]).fetchall()
        d = np.asarray([r[1] for r in rows], dtype=np.float64)
        score = 1.0 - d if self.spec.distance == "cosine" else -d
        return [r[0] for r in rows], score.tolist()

    def size_bytes(self) -> int | None:
        if self.conn is None:
            return None
        row = self.conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (f'"{self.table}"',)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def params(self) -> dict[str, Any]:
        return dict(self._settings)

    def close(self) -> None:
        try:
            if self.conn is not None and not self.conn.closed:
                if self._owned_table and self.spec.dsn:
                    sql = require("psycopg", "pgvector").sql
                    self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.table)))
                self.conn.close()
        finally:
            self.conn = None
            if self.server is not None:
                self._stop_server()  # once, whether this or an exit handler comes first
                self.server = None
            if self._forget is not None:
                self._forget()
                self._forget = None
