"""What a pgvector run leaves must go on every exit: its private PostgreSQL, its folder, its table.

- The private server (``pgserver``) lives in the retriever's work folder, which holds a pid file
  (:data:`OWNER`: the harness process's pid and start time). Its stop is registered with
  :mod:`harness.cleanup`, so Ctrl-C, SIGTERM and SIGHUP stop it and remove the folder, as a normal exit
  does. A SIGKILL runs nothing: the next private server started beside it (same parent folder)
  sweeps every ``harness-pgvector-*`` folder whose owner is gone (:func:`sweep_stale_servers`).
- A build-mode table in a team's database (``dsn``) is ``harness_<12 hex>``, and the session that
  writes it holds ``pg_advisory_lock`` on its name for as long as it lives. Its drop is registered
  the same way. At the next start, :func:`sweep_stale_tables` drops only the ``harness_`` tables whose
  lock it can take: a crashed run's (PostgreSQL released the lock with its session), never a live run's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)

#: the pid file in a private server's work folder
OWNER = "harness-owner.json"
#: first key of the advisory locks on harness tables ("hrns")
LOCK_CLASS = 0x68726E73
#: what a harness build-mode table is called
TABLE_NAME = re.compile(r"^harness_[0-9a-f]{12}$")


def _start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def write_owner(folder: Path) -> None:
    """Mark ``folder`` as this process's (its pid and start time: a reused pid is not the owner)."""
    pid = os.getpid()
    (folder / OWNER).write_text(json.dumps({"pid": pid, "started": _start_time(pid)}))


def owner_alive(folder: Path) -> bool:
    try:
        owner = json.loads((folder / OWNER).read_text())
        pid, started = int(owner["pid"]), owner.get("started")
    except (OSError, ValueError, KeyError, TypeError):
        return True  # no readable pid file: not ours to judge
    now = _start_time(pid)
    return now is not None and (started is None or abs(now - float(started)) < 1.0)


def stop_postmaster(pgdata: Path, wait_s: float = 10.0) -> None:
    """Stop the PostgreSQL serving ``pgdata`` (its ``postmaster.pid``): fast shutdown, then kill."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        proc = psutil.Process(pid)
        if "postgres" not in proc.name() and not any("postgres" in a for a in proc.cmdline()[:1]):
            return  # the pid was reused by another program
    except (OSError, ValueError, IndexError, psutil.Error):
        return
    try:
        proc.send_signal(2)  # SIGINT: PostgreSQL's fast shutdown
        proc.wait(wait_s)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.Error:
        return


def sweep_stale_servers(parent: Path, own: Path | None = None) -> list[Path]:
    """Stop and remove every private server folder under ``parent`` whose owner process is gone."""
    swept = []
    for folder in sorted(parent.glob("harness-pgvector-*")):
        if folder == own or not (folder / OWNER).is_file() or owner_alive(folder):
            continue
        for pgdata in folder.glob("pgdata*"):
            stop_postmaster(pgdata)
        shutil.rmtree(folder, ignore_errors=True)
        log.info("pgvector: removed a stale private PostgreSQL folder %s (its run ended without cleanup)", folder)
        swept.append(folder)
    return swept


def stop_server(folder: Path, server: Callable[[], Any]) -> Callable[[], None]:
    """The undo of a private server in ``folder`` (registered before it starts, so an exit during the
    start is covered): stop it (pgserver's cleanup when ``server()`` has one, else by the pid files
    of ``folder``) and remove ``folder``. Once only, whoever calls it first: an exit handler, or the
    retriever's close in its worker thread."""
    done = threading.Lock()

    def undo() -> None:
        if not done.acquire(blocking=False):
            return
        handle = server()
        try:
            if handle is not None:
                handle.cleanup()
        except Exception:  # ending anyway: stop it by its pid file
            pass
        for pgdata in folder.glob("pgdata*"):
            stop_postmaster(pgdata)
        for _ in range(3):  # a start still in flight in a worker thread may write one more file
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                break
            time.sleep(0.1)

    return undo


def lock_table(conn: Any, table: str) -> None:
    """Hold the session-level advisory lock on ``table`` (released when the session ends)."""
    conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, table))


def sweep_stale_tables(conn: Any) -> list[str]:
    """Drop the ``harness_`` tables of the current schema whose advisory lock is free (their run is
    gone); a table whose lock another session holds belongs to a live run and is left alone."""
    sql = __import__("psycopg").sql
    names = [
        r[0]
        for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
        if TABLE_NAME.match(r[0])
    ]
    dropped = []
    for name in names:
        if conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, name)).fetchone()[0]:
            try:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
                dropped.append(name)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, name))
    if dropped:
        log.info("pgvector: dropped %d stale harness table(s) of ended runs: %s", len(dropped), ", ".join(dropped))
    return dropped


def drop_table(dsn: str, table: str, backend_pid: int | None) -> Callable[[], None]:
    """The undo of a build-mode table: end the session writing it (a COPY in flight would hold the
    table), then drop it over a fresh connection."""

    def undo() -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as c:
            if backend_pid is not None:
                c.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
                time.sleep(0.05)
            c.execute("SET lock_timeout = '10s'")
            c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))

    return undo
