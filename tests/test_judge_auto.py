"""``harness judge auto --judge http``: a real OpenAI-compatible server on 127.0.0.1 with a seeded
policy that answers UMBRELA-style replies, malformed ones, 429 and 503 with Retry-After, a reply
over 1 MB and a reply that never ends. Every grade written is the server's; malformed replies are
asked again or left ungraded (never 0); a second run asks only for the ungraded pairs; the key is in
no file and no output."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging import umbrela
from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.conftest import ctrl_c, default_sigint, reaped

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

KEY = "sk-test-0123456789abcdefSECRET"
_PAIR = re.compile(r"\nQuery: (.*)\nPassage: (.*)\n\nSplit this problem", re.S)


def _h(*parts: str) -> int:
    return int(hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest(), 16)


class Policy:
    """What the server does for each pair, decided by a hash of its text (seeded, reproducible).

    kind 0-5: answer at once; 6: malformed first, then a grade; 7: malformed every time; 8: 429 then
    a grade; 9: 503 then a grade. The pair "huge" first gets a 2 MB reply, "slow" a reply that never
    ends; both then a grade."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.given: dict[tuple[str, str], int] = {}

    def kind(self, q: str, p: str) -> int:
        if "huge" in p:
            return 10
        if "slow" in p:
            return 11
        return _h(q, p, "kind") % 10

    def grade(self, q: str, p: str) -> int:
        return _h(q, p, "grade") % 4


def _server(policy: Policy) -> ThreadingHTTPServer:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def _reply(self, status: int, obj=None, headers=()) -> None:
            body = json.dumps(obj or {}).encode()
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.headers.get("Authorization") != f"Bearer {KEY}":
                self._reply(401, {"error": "bad key"})
                return
            m = _PAIR.search(body["messages"][0]["content"])
            q, p = m.group(1), m.group(2)
            with policy.lock:
                policy.requests.append((q, p))
                n = policy.seen[q, p] = policy.seen.get((q, p), 0) + 1
            kind, g = policy.kind(q, p), policy.grade(q, p)
            if kind == 10 and n == 1:
                self._reply(200, {"choices": [{"message": {"content": "x" * (2 << 20)}}]})
                return
            if kind == 11 and n == 1:  # headers, then a trickle that never ends
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for _ in range(200):
                        self.wfile.write(b"1\r\n \r\n")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass
                self.close_connection = True
                return
            if kind == 8 and n == 1:
                self._reply(429, {"error": "slow down"}, [("Retry-After", "0")])
                return
            if kind == 9 and n == 1:
                self._reply(503, {"error": "busy"}, [("Retry-After", "0")])
                return
            if kind == 7 or (kind == 6 and n == 1):
                content = ["I would say it is relevant.", "##final score: ٣", "##final score: 2.5",
                           "##final score: 1\n##final score: 3"][_h(q, p, str(n)) % 4]  # fmt: skip
            else:
                content = f"M: 2\nT: 1\n##final score: {g}"
                with policy.lock:
                    policy.given[q, p] = g
            self._reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}],
                              "usage": {"prompt_tokens": 100, "completion_tokens": 7}})  # fmt: skip

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None  # a client that hung up (cut replies, Ctrl-C) is expected
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _pool(tmp_path: Path) -> Path:
    rows = [
        PoolRow(f"q{i % 7}", f"query {i % 7} ünïcode ३" if i % 7 == 3 else f"query {i % 7}", f"d{i}",
                f"title {i}", "huge doc" if i == 5 else "slow doc" if i == 11 else f"text of document {i}",
                "bm25;dense" if i % 2 else "bm25", 1 + i % 10)
        for i in range(48)
    ]  # fmt: skip
    return write_pool(tmp_path / "pool.csv", rows)


@pytest.fixture
def served():
    policy = Policy()
    srv = _server(policy)
    yield policy, f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def _auto(pool: Path, out: Path, url: str) -> int:
    return main(["judge", "auto", str(pool), "--judge", "http", "--url", url, "--model", "m", "--api-key-env",
                 "R35_TEST_KEY", "--concurrency", "4", "--timeout", "1", "--retries", "2", "--price-in", "2.5",
                 "--price-out", "10", "--out", str(out), "--no-progress"])  # fmt: skip


def test_grades_are_the_servers_and_a_rerun_asks_only_for_the_ungraded(
    tmp_path, served, capsys, monkeypatch, cache_dir
):
    policy, url = served
    monkeypatch.setenv("R35_TEST_KEY", KEY)
    pool, out = _pool(tmp_path), tmp_path / "grades.csv"
    assert _auto(pool, out, url) == 0
    err = capsys.readouterr().err
    rows = read_pool(out)
    text = {(r.query_id, r.doc_id): (umbrela.prompt(r.query, r.title, r.text), r) for r in read_pool(pool)}
    assert len(rows) == 48
    ungraded = set()
    for r in rows:
        q, p = _PAIR.search(text[r.query_id, r.doc_id][0]).groups()
        if r.grade is None:
            ungraded.add((q, p))
            assert (q, p) not in policy.given  # the server never gave one
            assert policy.kind(q, p) == 7  # only the always-malformed pairs
            assert policy.seen[q, p] == 3  # asked, then retried twice
        else:
            assert r.grade == policy.given[q, p]
    assert ungraded and len(ungraded) < 48
    kinds = {policy.kind(*k) for k in policy.seen}
    assert {6, 7, 8, 9, 10, 11} <= kinds  # every hostile case happened
    for k in policy.seen:  # the cut replies, 429 and 503 were asked again and then graded
        if policy.kind(*k) in (6, 8, 9, 10, 11):
            assert policy.seen[k] == 2 and k in policy.given
    graded = 48 - len(ungraded)
    assert f"{graded} of 48 pairs graded (0 from earlier runs), {len(ungraded)} ungraded" in err
    n = len(policy.requests)
    assert f"{n} requests" in err
    judges = {r.extra["judge"] or None for r in rows}
    assert judges == {None, f"llm:m:{umbrela.PROMPT_VERSION}@{url}/chat/completions;temperature=0;max_tokens=512"}

    before = list(policy.requests)
    assert _auto(pool, out, url) == 0
    err2 = capsys.readouterr().err
    again = policy.requests[len(before) :]
    assert set(again) == ungraded and len(again) == 3 * len(ungraded)
    assert f"{graded} of 48 pairs graded ({graded} from earlier runs)" in err2

    out2 = tmp_path / "fresh.csv"  # a new output file: the cache alone spares the requests
    assert _auto(pool, out2, url) == 0
    assert set(policy.requests[len(before) + len(again) :]) == ungraded
    assert [r.grade for r in read_pool(out2)] == [r.grade for r in rows]

    for folder in (tmp_path, cache_dir):
        for f in Path(folder).rglob("*"):
            if f.is_file():
                assert KEY.encode() not in f.read_bytes(), f
    assert KEY not in err + err2


def test_merge_takes_the_auto_grades(tmp_path, served, capsys, monkeypatch):
    _, url = served
    monkeypatch.setenv("R35_TEST_KEY", KEY)
    pool, out = _pool(tmp_path), tmp_path / "grades.jsonl"
    assert _auto(pool, out, url) == 0
    qrels = tmp_path / "q.txt"
    qrels.write_text("q0 0 other 1\n", encoding="utf-8")
    assert main(["judge", "merge", str(out), "--qrels", str(qrels), "--out", str(tmp_path / "q2.txt")]) == 0
    merged = (tmp_path / "q2.txt").read_text().splitlines()
    assert len(merged) == 1 + sum(r.grade is not None for r in read_pool(out))


def test_refused_connection_is_one_line_without_credentials(tmp_path, capsys, monkeypatch):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("R35_TEST_KEY", KEY)
    url = f"http://user:hunter2-password@127.0.0.1:{port}/v1?token=abc123secret"
    assert main(["judge", "auto", str(_pool(tmp_path)), "--judge", "http", "--url", url, "--model", "m",
                 "--out", str(tmp_path / "g.csv"), "--no-progress"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "cannot connect" in x]
    assert len(line) == 1 and f"http://127.0.0.1:{port}/v1/chat/completions" in line[0]
    assert "hunter2" not in err and "abc123secret" not in err and KEY not in err


def test_a_refused_key_stops_the_run(tmp_path, served, capsys, monkeypatch):
    _, url = served
    monkeypatch.setenv("R35_TEST_KEY", "wrong-key-1234567")
    assert _auto(_pool(tmp_path), tmp_path / "g.csv", url) == 2
    assert "401" in capsys.readouterr().err


def test_unset_key_variable_is_refused_before_any_request(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("R35_TEST_KEY", raising=False)
    assert _auto(_pool(tmp_path), tmp_path / "g.csv", "http://127.0.0.1:9/v1") == 2
    assert "R35_TEST_KEY is not set" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


def test_an_output_not_written_by_judge_auto_is_not_overwritten(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("R35_TEST_KEY", KEY)
    mine = tmp_path / "mine.csv"
    mine.write_text("my notes\n", encoding="utf-8")
    assert _auto(_pool(tmp_path), mine, "http://127.0.0.1:9/v1") == 2
    assert mine.read_text(encoding="utf-8") == "my notes\n"


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200), st.integers(0, 3))
def test_parse_reads_only_one_clear_ascii_grade(noise, g):
    assert umbrela.parse(f"{noise}\n##final score: {g}") in (g, None)  # None only if the noise holds another
    if "final" not in noise.lower():
        assert umbrela.parse(f"{noise}\n##final score: {g}") == g
    assert umbrela.parse(noise.replace("#", "")) is None
    for bad in ("##final score: ٢", "##final score: 4", "##final score: 12", "##final score: 1.5", "final score: 2"):
        assert umbrela.parse(bad) is None


def test_the_prompt_is_umbrelas():
    p = umbrela.prompt("what is x", "T", "body")
    assert p.startswith("Given a query and a passage, you must provide a score on an integer scale of 0 to 3")
    assert "\nQuery: what is x\nPassage: T\nbody\n\n" in p
    assert p.endswith("##final score: score without providing any reasoning.")


def test_ctrl_c_keeps_every_grade_received(tmp_path, monkeypatch):
    """A real process, interrupted (SIGINT) mid-run: exit 130, and every grade the server gave
    before the interrupt is in the file (or in the cache, which the next run reads)."""
    import subprocess
    import sys

    policy = Policy()
    policy.kind = lambda q, p: 0  # every pair answered at once ...
    srv = _server(policy)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    real_grade = policy.grade

    def grade(q, p):  # ... but slowly, so the run is still going when it is interrupted
        time.sleep(0.2)
        return real_grade(q, p)

    policy.grade = grade
    pool, out = _pool(tmp_path), tmp_path / "g.csv"
    env = {**os.environ, "R35_TEST_KEY": KEY, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "judge", "auto", str(pool), "--judge", "http", "--url", url, "--model", "m",
         "--api-key-env", "R35_TEST_KEY", "--concurrency", "2", "--out", str(out), "--no-progress"],
        env=env, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        with reaped(proc):
            deadline = time.monotonic() + 120
            while len(policy.given) < 8 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            given_before = dict(policy.given)
            _, err = ctrl_c(proc, timeout=60)
    finally:
        srv.shutdown()
        srv.server_close()
    assert proc.returncode == 130, err
    rows = read_pool(out)
    text = {(r.query_id, r.doc_id): umbrela.prompt(r.query, r.title, r.text) for r in read_pool(pool)}
    graded = {(r.query_id, r.doc_id): r.grade for r in rows if r.grade is not None}
    assert len(given_before) - 2 <= len(graded) < 48, err  # at most the 2 in flight were lost
    for k, g in graded.items():
        assert g == policy.given[_PAIR.search(text[k]).groups()]
    # the cache holds the same grades: the next run asks only for the rest
    assert sum(1 for _ in (tmp_path / "cache" / "judge" / "replies.jsonl").open()) == len(graded)
    assert "grades are in" in err and KEY not in err


def test_a_log_shows_the_grading_progress_unless_asked_not_to(tmp_path, served, capsys, monkeypatch, cache_dir):
    """Grading a pool takes minutes against a real model: a log (not a terminal) gets timestamped
    lines, ``--no-progress`` none."""
    _, url = served
    monkeypatch.setenv("R35_TEST_KEY", KEY)
    pool = _pool(tmp_path)
    args = ["judge", "auto", str(pool), "--judge", "http", "--url", url, "--model", "m", "--api-key-env",
            "R35_TEST_KEY", "--concurrency", "4", "--timeout", "1", "--retries", "2"]  # fmt: skip
    main([*args, "--out", str(tmp_path / "a.csv")])
    assert re.search(r"^\d\d:\d\d:\d\d harness: grading \d+ pairs", capsys.readouterr().err, re.M)
    main([*args, "--out", str(tmp_path / "b.csv"), "--no-progress"])
    assert not re.search(r"harness: grading \d+ pairs", capsys.readouterr().err)
