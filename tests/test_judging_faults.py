"""The judging fault pass, each on real processes: a real OpenAI-compatible
server on 127.0.0.1 answering what the fault needs (two scores, gzip, headers dripped a byte at a
time, a revoked key, absurd ``usage``), a real ``judge serve`` process, a real tiny cross-encoder and
a real results folder. Every grade written must be the one the judge gave; a reply that is not a
clear grade is no grade."""

from __future__ import annotations

import gzip
import http.client
import json
import math
import re
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging import umbrela
from harness.judging.pool import PoolRow, read_pool, write_pool
from tests.conftest import REPO, build_tiny_bert, start_judge_serve

_PAIR = re.compile(r"\nQuery: (.*)\nPassage: (.*)\n\nSplit this problem", re.S)


class Endpoint:
    """A chat-completions server on 127.0.0.1; ``answer(handler, n, query, passage)`` writes the reply
    to the n-th request (1-based, over the whole server)."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler, int, str, str], None]) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[dict, str, str]] = []
        endpoint = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                q, p = _PAIR.search(body["messages"][0]["content"]).groups()
                with endpoint.lock:
                    endpoint.requests.append((dict(self.headers), q, p))
                    n = len(endpoint.requests)
                answer(self, n, q, p)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.srv.handle_error = lambda *a: None  # a client that hung up is expected
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}/v1"

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def reply(h: BaseHTTPRequestHandler, content: str, *, usage: dict | None = None, encoding: str | None = None,
          status: int = 200) -> None:  # fmt: skip
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                       "usage": usage or {"prompt_tokens": 100, "completion_tokens": 7}}).encode()  # fmt: skip
    if encoding == "gzip":
        body = gzip.compress(body)
    elif encoding == "deflate":
        body = zlib.compress(body)
    elif encoding == "deflate-raw":  # what some servers send as "deflate"
        c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        body = c.compress(body) + c.flush()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    if encoding:
        h.send_header("Content-Encoding", "deflate" if encoding == "deflate-raw" else encoding)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@pytest.fixture
def endpoint():
    made: list[Endpoint] = []

    def make(answer):
        made.append(Endpoint(answer))
        return made[-1]

    yield make
    for e in made:
        e.close()


def _pool(tmp_path: Path, queries: list[str], name: str = "pool.csv") -> Path:
    rows = [PoolRow(f"q{i}", q, f"d{i}", "", f"text of document {i}", "bm25", 1) for i, q in enumerate(queries)]
    return write_pool(tmp_path / name, rows)


def _auto(pool: Path, out: Path, url: str, *extra: str) -> int:
    return main(["judge", "auto", str(pool), "--judge", "http", "--url", url, "--model", "m", "--concurrency", "1",
                 "--timeout", "5", "--retries", "1", "--out", str(out), "--no-progress", *extra])  # fmt: skip


# ----------------------------------------------------------------------------- row 1: one clear grade or none

#: replies that are no grade, each read as a grade before (2, 3, 1, 1, 0, 1, 2)
MALFORMED = {
    "two-2-then-2.5": "##final score: 2\n##final score: 2.5",
    "3-then-7": "##final score: 3\n##final score: 7",
    "1-then-12": "##final score: 1\n##final score: 12",
    "1-then-fullwidth-3": "##final score: 1\n##final score: \uff13",
    "range": "##final score: 0-3",
    "exponent": "##final score: 1e1",
    "superscript": "##final score: 2\u00b2",
    "twice-the-same": "##final score: 2\n##final score: 2",
}


def test_a_reply_with_two_scores_or_a_malformed_one_is_no_grade(tmp_path, endpoint, capsys):
    """Each malformed reply, asked again and then left ungraded and counted; the clear ones graded."""
    good = {"good-plain": ("M: 2\nT: 1\n##final score: 2", 2), "good-bold": ("**##final score:** 3", 3)}
    ep = endpoint(lambda h, n, q, p: reply(h, MALFORMED[q] if q in MALFORMED else good[q][0]))
    queries = [*MALFORMED, *good]
    pool, out = _pool(tmp_path, queries), tmp_path / "g.csv"
    assert _auto(pool, out, ep.url) == 0
    err = capsys.readouterr().err
    got = {r.query: r.grade for r in read_pool(out)}
    assert got == {**{q: None for q in MALFORMED}, **{q: g for q, (_, g) in good.items()}}
    asked = [q for _, q, _ in ep.requests]
    assert all(asked.count(q) == 2 for q in MALFORMED)  # asked again once (--retries 1), then left
    assert f"2 of {len(queries)} pairs graded (0 from earlier runs), {len(MALFORMED)} ungraded" in err


@pytest.mark.parametrize("text", list(MALFORMED.values()))
def test_the_shared_rule_reads_no_grade_from_a_malformed_reply(text):
    from harness.io import grades

    assert umbrela.parse(text) is None
    assert grades.final_score(text) is None  # one rule, in harness.io.grades


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80), st.integers(0, 3), st.text(max_size=12))
def test_a_second_score_line_always_unmakes_the_grade(noise, g, other):
    """Whatever surrounds it, a reply with exactly one ``##final score: g`` line (and no other claim)
    is g; add any second score line and it is no grade."""
    from harness.io import grades

    clean = noise.replace("#", "")
    one = f"{clean}\n##final score: {g}\n{clean}"
    if "final" not in clean.lower().replace(" ", ""):
        assert grades.final_score(one) == g
    assert grades.final_score(f"{one}\n##final score: {other}") is None


# ----------------------------------------------------------------------------- row 2: compressed replies


def test_gzip_and_deflate_replies_are_decoded_and_a_bomb_is_cut(tmp_path, endpoint, capsys):
    """A compressing endpoint (or proxy) answers gzip, zlib deflate, raw deflate: every pair is graded
    with the server's grade; a reply that inflates past 1 MB is cut (failed), never read."""
    grade = {"gzip": 3, "deflate": 1, "deflate-raw": 2}

    def answer(h, n, q, p):
        if q == "bomb":
            body = gzip.compress(b"{" + b" " * (20 << 20) + b"}")  # 20 MB of JSON whitespace
            h.send_response(200)
            h.send_header("Content-Encoding", "gzip")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            return
        reply(h, f"##final score: {grade[q]}", encoding=q)

    ep = endpoint(answer)
    pool, out = _pool(tmp_path, [*grade, "bomb"]), tmp_path / "g.jsonl"
    assert _auto(pool, out, ep.url, "--retries", "0") == 0
    err = capsys.readouterr().err
    assert {r.query: r.grade for r in read_pool(out)} == {**grade, "bomb": None}
    assert "reply over 1048576 bytes (after gzip decoding)" in err
    assert all(hd.get("Accept-Encoding") == "gzip, deflate" for hd, _, _ in ep.requests)


# ----------------------------------------------------------------------------- row 3: no stale grade


def test_a_changed_temperature_or_document_text_asks_again(tmp_path, endpoint, capsys):
    ep = endpoint(lambda h, n, q, p: reply(h, f"##final score: {len(p) % 4}"))
    pool, out = _pool(tmp_path, ["alpha", "beta", "gamma"]), tmp_path / "g.csv"
    assert _auto(pool, out, ep.url) == 0
    assert len(ep.requests) == 3
    assert _auto(pool, out, ep.url) == 0  # the same question: nothing asked
    assert len(ep.requests) == 3
    assert _auto(pool, out, ep.url, "--temperature", "0.7") == 0  # another temperature: all asked again
    assert len(ep.requests) == 6
    rows = read_pool(out)
    assert {r.extra["judge"] for r in rows} == {f"llm:m:{umbrela.PROMPT_VERSION}@{ep.url}/chat/completions;"
                                                "temperature=0.7;max_tokens=512"}  # fmt: skip
    edited = [PoolRow(r.query_id, r.query, r.doc_id, r.title, r.text, r.retrieved_by, r.best_rank)
              for r in read_pool(pool)]  # fmt: skip
    edited[1].text = "the document was rewritten since, and is longer now"
    write_pool(pool, edited)
    assert _auto(pool, out, ep.url, "--temperature", "0.7") == 0  # only the changed document asked
    assert [p for _, _, p in ep.requests[6:]] == [edited[1].text]
    assert read_pool(out)[1].grade == len(edited[1].text) % 4
    capsys.readouterr()


# ----------------------------------------------------------------------------- row 4: serve keeps columns


def _post(port: int, body: dict, token: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/api/grade", json.dumps(body), {"Content-Type": "application/json", "X-Judge-Token": token})
    return conn.getresponse().status


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_serve_keeps_every_column_and_marks_a_persons_grade(tmp_path, suffix):
    """A `judge auto` output with a column of the user's own, served: the grade made on the page is
    marked `person`, the model's grades keep their `judge` and `judge_key`, the notes stay."""
    judge = "llm:m:p@http://x/v1"
    pool = tmp_path / f"auto{suffix}"
    if suffix == ".csv":
        rows = "".join(f"q1,query,d{i},,text {i},bm25,{i + 1},{i},{judge},k{i},note {i}\n" for i in range(3))
        head = "query_id,query,doc_id,title,text,retrieved_by,best_rank,grade,judge,judge_key,notes\n"
        pool.write_text(head + rows, encoding="utf-8")
    else:
        pool.write_text("".join(json.dumps({"query_id": "q1", "query": "query", "doc_id": f"d{i}", "title": "",
                                            "text": f"text {i}", "retrieved_by": "bm25", "best_rank": i + 1,
                                            "grade": i, "judge": judge, "judge_key": f"k{i}",
                                            "notes": f"note {i}"}) + "\n" for i in range(3)),
                        encoding="utf-8")  # fmt: skip
    proc = start_judge_serve(pool)
    try:
        port, tok = re.search(r"127\.0\.0\.1:(\d+)/\?token=(\S+)", proc.stdout.readline()).groups()
        assert _post(int(port), {"i": 0, "grade": 3}, tok) == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # waits, and closes the pipes
    after = read_pool(pool)
    assert [r.grade for r in after] == [3, 1, 2]
    text = pool.read_text(encoding="utf-8")
    if suffix == ".csv":
        lines = text.splitlines()
        assert lines[0].endswith(",grade,judge,judge_key,notes")
        assert [x.split(",")[-3:] for x in lines[1:]] == [["person", "", "note 0"], [judge, "k1", "note 1"],
                                                          [judge, "k2", "note 2"]]  # fmt: skip
    else:
        recs = [json.loads(x) for x in text.splitlines()]
        assert [(r["judge"], r["judge_key"], r["notes"]) for r in recs] == [("person", None, "note 0"),
                                                                            (judge, "k1", "note 1"),
                                                                            (judge, "k2", "note 2")]  # fmt: skip


def test_a_persons_grade_in_the_output_is_never_overwritten_by_the_judge(tmp_path, endpoint, capsys):
    """A `judge auto` output someone corrected on the page: running the judge into it again is
    refused before any request (it would regrade the row), and the file is left as it is."""
    ep = endpoint(lambda h, n, q, p: reply(h, "##final score: 1"))
    pool, out = _pool(tmp_path, ["a", "b"]), tmp_path / "g.csv"
    assert _auto(pool, out, ep.url) == 0
    rows = read_pool(out)
    rows[0].grade, rows[0].extra["judge"] = 3, "person"
    write_pool(out, rows)
    before = out.read_bytes()
    assert _auto(pool, out, ep.url, "--temperature", "0.5") == 2
    assert "never overwritten" in capsys.readouterr().err
    assert out.read_bytes() == before and len(ep.requests) == 2


# ----------------------------------------------------------------------------- row 5: one deadline


def test_a_server_dripping_its_headers_is_cut_at_the_deadline(tmp_path, endpoint, capsys):
    """The status line and headers arrive a byte every 0.05 s (20 s in all): with --timeout 1 the
    request is cut (the server sees the connection go before its headers are out), the pair fails,
    and no grade is read. Nothing here times the run: the order of events decides."""
    seen: dict = {"done": threading.Event(), "how": None}

    def answer(h, n, q, p):
        body = json.dumps({"choices": [{"message": {"content": "##final score: 3"}}]}).encode()
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 300
                + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")  # fmt: skip
        try:
            for i in range(len(head)):
                h.wfile.write(head[i : i + 1])
                h.wfile.flush()
                time.sleep(0.05)
            h.wfile.write(body)
            h.wfile.flush()
            seen["how"] = "headers and body all sent"
        except OSError:
            seen["how"] = "cut by the client"
        seen["done"].set()
        h.close_connection = True

    ep = endpoint(answer)
    pool, out = _pool(tmp_path, ["slow headers"]), tmp_path / "g.csv"
    assert _auto(pool, out, ep.url, "--timeout", "1", "--retries", "0") == 0
    err = capsys.readouterr().err
    assert seen["done"].wait(60) and seen["how"] == "cut by the client"
    assert [r.grade for r in read_pool(out)] == [None]
    assert "no whole reply within 1 s" in err and "0 of 1 pairs graded" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "1e300"])
def test_a_timeout_that_is_no_deadline_is_one_line(tmp_path, value):
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "judge", "auto", str(_pool(tmp_path, ["a"])), "--judge", "http", "--url",
         "http://127.0.0.1:9/v1", "--model", "m", f"--timeout={value}", "--out", str(tmp_path / "g.csv")],
        capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 2
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "--timeout" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "g.csv").exists()


# ----------------------------------------------------------------------------- row 6: one-grade calibration


def test_calibrating_on_people_who_used_one_grade_is_refused(tmp_path, capsys):
    model = build_tiny_bert(tmp_path / "ce", head=True)
    pool = _pool(tmp_path, ["a", "b", "c", "d"])
    human = write_pool(tmp_path / "human.csv", [PoolRow(r.query_id, r.query, r.doc_id, "", r.text, "", 1, 0)
                                                for r in read_pool(pool)])  # fmt: skip
    out = tmp_path / "g.csv"
    code = main(["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(model), "--calibrate",
                 str(human), "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "grade 0" in lines[0] and "--thresholds" in lines[0], err


# ----------------------------------------------------------------------------- row 7: bookkeeping


def test_credentials_in_the_url_and_a_key_are_refused_before_any_request(tmp_path, endpoint, capsys, monkeypatch):
    ep = endpoint(lambda h, n, q, p: reply(h, "##final score: 1"))
    monkeypatch.setenv("R39_KEY", "sk-r39-secret-key-123456")
    url = ep.url.replace("http://", "http://user:pw-secret-9876@")
    assert _auto(_pool(tmp_path, ["a"]), tmp_path / "g.csv", url, "--api-key-env", "R39_KEY") == 2
    err = capsys.readouterr().err
    assert "--api-key-env" in err and "credentials" in err and "pw-secret-9876" not in err
    assert ep.requests == [] and not (tmp_path / "g.csv").exists()


def test_the_summary_counts_requests_sent_before_a_stop(tmp_path, endpoint, capsys):
    """The key is revoked after 3 replies: the 4th request is answered 401 and stops the run; the
    summary counts the 4 requests the server received."""
    ep = endpoint(lambda h, n, q, p: reply(h, "##final score: 2") if n <= 3 else reply(h, "", status=401))
    pool = _pool(tmp_path, [f"query {i}" for i in range(6)])
    assert _auto(pool, tmp_path / "g.csv", ep.url, "--retries", "0") == 2
    err = capsys.readouterr().err
    assert "3 of 6 pairs graded" in err and f"; {len(ep.requests)} requests," in err, err  # as the server counts
    assert len(ep.requests) == 4  # and nothing sent once the endpoint refused the key


def test_absurd_usage_is_refused_not_priced(tmp_path, endpoint, capsys):
    usage = {"huge": {"prompt_tokens": 10**30, "completion_tokens": 7},
             "negative": {"prompt_tokens": -5, "completion_tokens": 7},
             "float": {"prompt_tokens": 1e300, "completion_tokens": 7}}  # fmt: skip
    ep = endpoint(lambda h, n, q, p: reply(h, "##final score: 1", usage=usage.get(q)))
    pool = _pool(tmp_path, [*usage, "plain"])
    assert _auto(pool, tmp_path / "g.csv", ep.url, "--price-in", "1", "--price-out", "1") == 0
    err = capsys.readouterr().err
    assert "4 of 4 pairs graded" in err and "100 tokens in, 7 out, cost $0.0001" in err, err
    assert "3 replies' usage refused" in err


def test_numeric_id_0_in_jsonl_pools_and_grade_files_is_an_id(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"query_id": 0, "doc_id": 0, "grade": 1}\n{"query_id": 0, "doc_id": 10, "grade": 0}\n')
    b.write_text('{"query_id": 0, "doc_id": 0, "grade": 1}\n{"query_id": 0, "doc_id": 10, "grade": 2}\n')
    assert [(r.query_id, r.doc_id) for r in read_pool(a)] == [("0", "0"), ("0", "10")]
    assert main(["judge", "agree", str(a), str(b), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 2 and report["confusion"][1][1] == 1 and report["confusion"][0][2] == 1


# ----------------------------------------------------------------------------- row 8: agree on the same queries


@pytest.mark.slow
def test_agree_scores_both_sides_on_the_same_queries(tmp_path, capsys):
    """People grade 2 queries' pooled documents, the judge 5 queries'; both sides are scored on the 2,
    over the folder's own judgments, and the report says so."""
    from harness.engine.score import score
    from harness.io.trec import read_qrels
    from harness.results import Results
    from harness.results.store import read_runs

    cfg = tmp_path / "demo.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\ndepth: 10\nlatency_queries: 0\nwarmup_queries: 0\nbaseline: bm25\n"
        "stats: {bootstrap: 50, permutations: 100}\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_k2: {type: bm25, k1: 2.0, b: 0.9}\n"
    )
    folder = tmp_path / "res"
    assert main(["run", "--config", str(cfg), "--out", str(folder), "--no-progress"]) == 0
    runs = read_runs(Results.load(folder))
    base = read_qrels(folder / "qrels.tsv")
    pool = [(q, d) for q in sorted(base)[:5] for d, _ in runs["bm25_k2"].ranking(q)[:10] if d not in base[q]]
    qs = sorted({q for q, _ in pool})
    people = {k: 2 for k in pool if k[0] in qs[:2]}
    judge = {k: (1 if i % 3 else 3) for i, k in enumerate(pool)}
    for name, grades in (("people.csv", people), ("judge.csv", judge)):
        write_pool(tmp_path / name, [PoolRow(q, "", d, "", "", "", 1, g) for (q, d), g in grades.items()])
    capsys.readouterr()
    args = ["judge", "agree", str(tmp_path / "people.csv"), str(tmp_path / "judge.csv"), "--results", str(folder)]
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["system_queries"] == qs[:2]
    assert report["system_base"]["judgments"] == sum(len(v) for v in base.values())
    for side, grades in ((0, people), (1, judge)):
        qrels = {q: dict(base[q]) for q in qs[:2]}
        for (q, d), g in grades.items():
            if q in qrels:
                qrels[q][d] = g
        want = score(runs, qrels, ["ndcg@10"], statistics=False).summary
        for name in runs:
            assert math.isclose(report["systems"][name]["ndcg@10"][side], want[name]["ndcg@10"], abs_tol=1e-12)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert len(qs) > 2
    assert (f"systems scored on the 2 queries both A and B grade (0 graded by A only and {len(qs) - 2} by B only "
            "left out of both)") in text  # fmt: skip
    assert "qrels.tsv" in text
