"""A pgvector run that is interrupted leaves nothing behind: no PostgreSQL running, no folder, no table.

Real processes: ``harness run`` in a subprocess with a ``pgvector`` retriever (a private PostgreSQL
from ``pgserver`` in ``work_dir``, or build mode in a team's database over ``dsn``); once the server
runs (or the table exists) the test sends SIGINT (Ctrl-C), SIGTERM or SIGKILL. After SIGINT and SIGTERM
the postmaster is gone and the work folder empty, and the team's database holds no harness table.
SIGKILL runs nothing, so the next start sweeps: a private server whose owner is gone (pid file), and
a ``harness_`` table whose advisory lock is free, but never a table a live session holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import default_sigint

pytestmark = pytest.mark.slow

LOCK_CLASS = 0x68726E73  # the advisory lock namespace of harness tables


def start_run(tmp_path: Path, cache_dir: Path, spec: str) -> subprocess.Popen[bytes]:
    config = tmp_path / "c.yaml"
    config.write_text(f"dataset: demo\nretrievers:\n  pg: {spec}\nmetrics: [ndcg@10]\nlatency_queries: 200\n")
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--config", str(config), "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,  # signalled with SIGINT: not ignored when the suite runs in the background
    )


def wait_for(what, proc: subprocess.Popen[bytes], timeout: float = 240.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        if proc.poll() is not None:
            raise AssertionError(f"the run ended first: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("timed out")


def postmaster(work: Path) -> int | None:
    for pidfile in work.glob("harness-pgvector-*/pgdata*/postmaster.pid"):
        lines = pidfile.read_text().splitlines()
        if lines and lines[-1].strip() == "ready":
            return int(lines[0])
    return None


def gone(pid: int, wait_s: float = 20.0) -> bool:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_stops_its_private_postgres_and_removes_its_folder(sig, tmp_path, cache_dir):
    work = tmp_path / "work"
    proc = start_run(tmp_path, cache_dir, f"{{type: pgvector, index: hnsw, work_dir: '{work}'}}")
    pid = wait_for(lambda: postmaster(work), proc)
    proc.send_signal(sig)
    proc.wait(120)
    alive = not gone(pid)
    left = sorted(str(p.relative_to(work)) for p in work.rglob("*"))[:5]
    if alive:
        psutil.Process(pid).kill()
    print(f"{sig.name}: exit {proc.returncode}, postmaster alive {alive}, left {left}")
    assert not alive and left == []


def test_a_killed_runs_server_is_swept_at_the_next_start(tmp_path, cache_dir, demo_dataset):
    from harness.registry import BuildContext, spec_class

    work = tmp_path / "work"
    proc = start_run(tmp_path, cache_dir, f"{{type: pgvector, work_dir: '{work}'}}")
    pid = wait_for(lambda: postmaster(work), proc)
    proc.kill()  # SIGKILL: nothing runs
    proc.wait(60)
    stale = list(work.iterdir())
    assert len(stale) == 1 and not gone(pid, 0.5)  # what a SIGKILL leaves
    spec = spec_class("pgvector").model_validate({"type": "pgvector", "work_dir": str(work)})
    r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
    try:
        r.index(demo_dataset.corpus[:20])
        alive = not gone(pid)
        print(f"after the next start: stale postmaster alive {alive}, stale folder there {stale[0].exists()}")
        assert not alive and not stale[0].exists()
    finally:
        r.close()
        if not gone(pid, 0.1):
            psutil.Process(pid).kill()
    assert list(work.iterdir()) == []


@pytest.fixture(scope="module")
def team_server(tmp_path_factory):
    from retrievers.vectordb.pgvector import start_postgres

    server = start_postgres(tmp_path_factory.mktemp("team-server"))
    yield server.get_uri()
    server.cleanup()


def harness_tables(dsn: str) -> set[str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'harness%'").fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_build_mode_on_a_team_server_drops_its_table_on_interrupt(sig, team_server, tmp_path, cache_dir):
    before = harness_tables(team_server)
    proc = start_run(tmp_path, cache_dir, f"{{type: pgvector, index: hnsw, dsn: '{team_server}'}}")
    made = wait_for(lambda: harness_tables(team_server) - before, proc)
    proc.send_signal(sig)
    proc.wait(120)
    left = harness_tables(team_server) - before
    print(f"{sig.name}: made {made}, exit {proc.returncode}, left {left}")
    assert left == set()


def test_the_next_start_drops_stale_tables_never_a_live_runs(team_server, cache_dir, demo_dataset):
    import psycopg

    from harness.registry import BuildContext, spec_class

    stale, live = "harness_00000000000a", "harness_00000000000b"
    with psycopg.connect(team_server, autocommit=True) as c:
        for t in (stale, live):
            c.execute(f"CREATE TABLE {t} (id text)")
    holder = psycopg.connect(team_server, autocommit=True)  # a live run's session holds its lock
    holder.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, live))
    try:
        spec = spec_class("pgvector").model_validate({"type": "pgvector", "dsn": team_server})
        r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
        try:
            r.index(demo_dataset.corpus[:20])
            tables = harness_tables(team_server)
            print(f"during the run: {sorted(tables)}")
            assert stale not in tables and live in tables and r.driver.table in tables
        finally:
            r.close()
        assert harness_tables(team_server) == {live}
    finally:
        holder.close()
        with psycopg.connect(team_server, autocommit=True) as c:
            c.execute(f"DROP TABLE IF EXISTS {live}")
