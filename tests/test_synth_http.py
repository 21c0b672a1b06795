"""``harness synth generate --generator http`` against a real OpenAI-compatible server on 127.0.0.1
with a seeded policy: replies that copy a span of the passage, replies that paraphrase it, malformed
replies (no ``##query:`` line) and 429 with Retry-After. Every question written is exactly the
server's ``##query:`` line; a second run sends no request; the key is in no file and no output;
Ctrl-C (SIGINT to a real process) exits 130 and keeps what arrived."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import REPO, LocalServer, default_sigint, interrupt_when, one_line_error, run_harness, send_json

KEY = "sk-synth-test-0123456789SECRET"
_PASSAGE = re.compile(r"Passage:\n(.*?)\n\nWrite ", re.S)
#: 30 made-up words the stemmer leaves alone, so the documents share words in a known way
WORDS = [a + b for a in ("bral", "cler", "drov", "flin", "grup") for b in ("ok", "at", "el", "ip", "or", "um")]


def _h(*parts: str) -> int:
    return int(hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest(), 16)


def corpus_folder(root: Path, n: int = 40) -> Path:
    """A corpus-only folder (no queries: a corpus is all a team has), documents of varied length."""
    root.mkdir(parents=True)
    lines = []
    for i in range(n):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6 + (i * 5) % 40)]
        text = f"Document {i} is about {' '.join(words)}. It says more on {WORDS[i % len(WORDS)]} number {i}."
        lines.append(json.dumps({"_id": f"d{i:03d}", "title": f"Title {i}", "text": text}))
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


class Policy:
    """Per passage, by a hash of its text: 0-3 copy a span, 4-6 paraphrase, 7 malformed first,
    8 429 (Retry-After) first, 9 malformed every time (only when ``always_bad``)."""

    def __init__(self, always_bad: bool = False, delay: float = 0.0, retry_after: str = "1") -> None:
        self.lock = threading.Lock()
        self.requests: list[str] = []
        self.prompts: list[str] = []
        self.times: dict[str, list[float]] = {}
        self.given: dict[str, str] = {}
        self.always_bad, self.delay, self.retry_after = always_bad, delay, retry_after

    def kind(self, p: str) -> int:
        k = _h(p, "kind") % 10
        return 7 if k == 9 and not self.always_bad else k

    def question(self, p: str) -> str:
        if self.kind(p) <= 3:  # a span of the passage, as a copying model writes it
            words = p.split()
            start = _h(p, "start") % max(1, len(words) - 6)
            return " ".join(words[start : start + 6])
        return f"which  ünïcode zorblax qwfp relates to case {_h(p, 'q') % 1000}?"  # none of the passage's words


def serve(policy: Policy) -> tuple[LocalServer, str]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.headers.get("Authorization") != f"Bearer {KEY}":
                send_json(self, b'{"error": "bad key"}', 401)
                return
            content = body["messages"][0]["content"]
            p = _PASSAGE.search(content).group(1)
            with policy.lock:
                policy.requests.append(p)
                policy.prompts.append(content)
                seen = policy.times.setdefault(p, [])
                seen.append(time.monotonic())
                n = len(seen)
            kind = policy.kind(p)
            if policy.delay:
                time.sleep(policy.delay)
            if kind == 8 and n == 1:
                self.send_response(429)
                self.send_header("Retry-After", policy.retry_after)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            if kind == 9 or (kind == 7 and n == 1):
                content = ["Here are some questions:\n1. what is it?", "##query:   ", "## query: almost"][n % 3]
            else:
                q = policy.question(p)
                content = f"Sure, here you go.\n##query: {q}\nI hope this helps."
                with policy.lock:
                    policy.given[p] = q
            reply = {"choices": [{"message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 50, "completion_tokens": 9}}  # fmt: skip
            send_json(self, json.dumps(reply).encode())

    srv = LocalServer(H)
    srv.handle_error = lambda *a: None  # a client that hung up (Ctrl-C) is expected
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_TEST_KEY", KEY)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _args(corpus: Path, out: Path, url: str, n: int = 30, *extra: str) -> list[str]:
    return ["synth", "generate", "--dataset", str(corpus), "--out", str(out), "--queries", str(n), "--url", url,
            "--model", "m", "--api-key-env", "SYNTH_TEST_KEY", "--timeout", "5", "--retries", "2",
            "--concurrency", "4", "--no-progress", *extra]  # fmt: skip


def _written(out: Path) -> dict[str, tuple[str, str]]:
    """query id -> (text, source document id) as written."""
    qrels = {}
    for line in (out / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        assert g == "1"
        qrels[q] = d
    out_q = {}
    for line in (out / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out_q[rec["_id"]] = (rec["text"], qrels[rec["_id"]])
    assert set(out_q) == set(qrels)
    return out_q


def _passages(corpus: Path) -> dict[str, str]:
    out = {}
    for line in (corpus / "corpus.jsonl").read_text().splitlines():
        d = json.loads(line)
        out[d["_id"]] = f"{d['title']}\n{d['text']}"
    return out


def test_questions_are_the_servers_and_a_second_run_sends_nothing(env, capsys):
    policy = Policy()
    srv, url = serve(policy)
    try:
        corpus, out = corpus_folder(env / "corpus"), env / "set"
        stale = env / ".set.synth-999999999"  # what a SIGKILL while writing leaves: removed by the next run
        (stale / "qrels").mkdir(parents=True)
        assert main(_args(corpus, out, url)) == 0
        assert not stale.exists()
        captured = capsys.readouterr()
        passages = _passages(corpus)
        written = _written(out)
        assert len(written) >= 20  # 30 drawn; identical paraphrase texts and spans may be filtered
        assert (out / "corpus.jsonl").stat().st_ino == (corpus / "corpus.jsonl").stat().st_ino  # hard-linked
        for qid, (text, doc) in written.items():
            assert text == policy.given[passages[doc]], qid  # exactly the server's ##query: line
        kinds = {policy.kind(p) for p in policy.times}
        assert {7, 8} <= kinds and kinds & {0, 1, 2, 3} and kinds & {4, 5, 6}  # every case happened
        for p, times in policy.times.items():
            if policy.kind(p) in (7, 8):
                assert len(times) == 2  # asked again once, then answered
            if policy.kind(p) == 8:
                assert times[1] - times[0] >= 0.9  # Retry-After: 1 honoured (a lower bound only)
        synth = json.loads((out / "synth.json").read_text())
        assert synth["requests"]["sent"] == len(policy.requests)
        assert synth["model"] == "m" and synth["endpoint"] == url + "/chat/completions"
        assert synth["prompt"]["version"] == "synth-queries-1"
        kept = [q for q in synth["queries"] if q["kept"]]
        assert [q["id"] for q in kept] == sorted(written)
        assert all(len(q["reply_sha256"]) == 64 for q in synth["queries"])
        # the copied spans are BM25-solvable, the paraphrases are not: the bias figures see it
        bias = json.loads((out / "bias.json").read_text())
        copied = [q for q, (t, d) in written.items() if policy.kind(passages[d]) <= 3]
        assert 0 < bias["overlap"]["mean"] < 1 and copied
        assert "solved by BM25 at rank 1" in captured.out

        before = len(policy.requests)
        out2 = env / "again"
        assert main(_args(corpus, out2, url)) == 0
        assert len(policy.requests) == before  # a second run sends no request: the reply cache
        assert _written(out2) == written
        again = json.loads((out2 / "synth.json").read_text())
        assert again["requests"] == {"sent": 0, "from_cache": 30, "tokens_in": 0, "tokens_out": 0, "usage_refused": 0}
        captured2 = capsys.readouterr()
    finally:
        srv.shutdown()
        srv.server_close()
    for text in (captured.out, captured.err, captured2.out, captured2.err):
        assert KEY not in text
    for f in env.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


def test_replies_without_a_query_line_are_retried_left_out_and_counted(env, capsys):
    policy = Policy(always_bad=True)
    srv, url = serve(policy)
    try:
        corpus, out = corpus_folder(env / "corpus"), env / "set"
        assert main(_args(corpus, out, url, 30, "--max-failed", "0.5")) == 0
        synth = json.loads((out / "synth.json").read_text())
        bad = [p for p in policy.times if policy.kind(p) == 9]
        assert bad and all(len(policy.times[p]) == 3 for p in bad)  # asked, then retried twice
        assert synth["filtered"]["failed"] == len(bad)
        assert "no ##query: line" in capsys.readouterr().err
        # over --max-failed: one located line, exit 2, no folder
        out2 = env / "strict"
        assert main(_args(corpus, out2, url, 30, "--max-failed", "0")) == 2
        err = capsys.readouterr().err
        assert "no ##query: line" in err and "--max-failed" in err and "document 'd" in err
        assert not out2.exists() and not list(env.glob(".strict*"))
    finally:
        srv.shutdown()
        srv.server_close()


def test_unreachable_endpoint_is_one_line_and_nothing_written(env):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    corpus, out = corpus_folder(env / "corpus"), env / "set"
    for url in (f"http://user:pw@127.0.0.1:{port}/v1", f"http://127.0.0.1:{port}/v1"):
        args = _args(corpus, out, url, 5)
        if "user:pw" in url:  # credentials in the URL go as basic auth; a key beside them is refused
            i = args.index("--api-key-env")
            del args[i : i + 2]
        proc = run_harness(*args, env={"SYNTH_TEST_KEY": KEY, "HARNESS_CACHE_DIR": str(env / "cache")})
        line = one_line_error(proc, "cannot connect", f"127.0.0.1:{port}")
        assert "pw" not in line and KEY not in proc.stderr + proc.stdout
    assert not out.exists() and not list(env.glob(".set*"))


def test_ctrl_c_exits_130_keeping_what_arrived(env):
    policy = Policy(delay=0.3)
    policy.kind = lambda p: 0  # every document answered at once, slowly
    srv, url = serve(policy)
    corpus, out = corpus_folder(env / "corpus"), env / "set"
    cache = env / "cache" / "synth" / "replies.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *_args(corpus, out, url, 40, "--concurrency", "2")],
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,  # a background `make test` starts with SIGINT ignored
    )  # fmt: skip
    try:
        given_before, stdout, err = interrupt_when(proc, lambda: len(policy.given) >= 6, lambda: len(policy.given))
        assert proc.returncode == 130, err
        assert "kept in the reply cache" in err and KEY not in err + stdout
        assert not out.exists() and not list(env.glob(".set*"))  # nothing half-written
        kept = len(cache.read_text().splitlines())
        assert given_before - 2 <= kept < 40, err  # at most the 2 in flight were lost
        # the same command again: requests only for the documents whose replies did not arrive
        before = len(policy.requests)
        policy.delay = 0.0
        assert main(_args(corpus, out, url, 40)) == 0
        assert len(policy.requests) - before == 40 - kept
        passages = _passages(corpus)
        assert all(t == policy.given[passages[d]] for t, d in _written(out).values())
    finally:
        if proc.poll() is None:
            proc.kill()
        srv.shutdown()
        srv.server_close()


def test_per_doc_takes_the_first_k_lines_and_mixed_cycles_the_styles(env):
    policy = Policy()
    policy.kind = lambda p: 0
    policy.question = lambda p: (
        f"first {_h(p) % 997} question here\n##query: second about {_h(p) % 991} it\n##query: third"
    )
    srv, url = serve(policy)
    try:
        corpus, out = corpus_folder(env / "corpus"), env / "set"
        assert main(_args(corpus, out, url, 9, "--per-doc", "2", "--style", "mixed")) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    passages = _passages(corpus)
    by_doc: dict[str, list[str]] = {}
    for _, (text, doc) in sorted(_written(out).items()):
        by_doc.setdefault(doc, []).append(text)
    assert len(by_doc) == 9
    for doc, texts in by_doc.items():
        assert texts == policy.given[passages[doc]].split("\n##query: ")[:2]  # the first two lines, in order
    synth = json.loads((out / "synth.json").read_text())
    styles = [q["style"] for q in synth["queries"]]
    assert styles == [s for s in ("question", "keyword", "paraphrase") * 3 for _ in range(2)]
    for instruction in (
        "Write 2 question(s) a person might type",
        "Write 2 short keyword",
        "avoid the passage's own words",
    ):
        assert sum(instruction in p for p in policy.prompts) == 3, instruction
