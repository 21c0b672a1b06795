"""``harness nuggets assign`` against a fake OpenAI-compatible endpoint on 127.0.0.1: every missing
passage asked once, cached, resumed after SIGKILL asking only what is missing; a team's class."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from harness.cli import main
from harness.nuggets import read_assignments, read_nuggets
from tests.conftest import LocalServer, send_json

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "datasets" / "demo"
LABELS = ("support", "partial_support", "not_support")
_ASKED = re.compile(r"Search Query: (.*)\nPassage: (.*)\nNugget List: (\[.*\])\nOnly return", re.S)


def label(passage: str, nugget: str) -> str:
    """The fake judge's rule: a fixed label per (passage, nugget), not constant."""
    return LABELS[(len(passage) + len(nugget)) % 3]


class FakeEndpoint:
    """An OpenAI-compatible endpoint answering nuggetizer's prompt by :func:`label`; it records each
    (query, passage) it was asked about and can answer slowly."""

    def __init__(self, delay: float = 0.0) -> None:
        self.asked: list[tuple[str, str]] = []
        self.delay = delay
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                m = _ASKED.search(body["messages"][0]["content"])
                assert m is not None
                query, passage, texts = m[1], m[2], ast.literal_eval(m[3])
                owner.asked.append((query, passage))
                time.sleep(owner.delay)
                reply = {
                    "choices": [{"message": {"role": "assistant", "content": str([label(passage, t) for t in texts])}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                }
                send_json(self, json.dumps(reply).encode())

        self.srv = LocalServer(Handler)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}/v1"

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A demo results folder (BM25, top 5) and nuggets for its first 20 queries."""
    tmp = tmp_path_factory.mktemp("assign")
    (tmp / "c.yaml").write_text(
        "dataset: demo\nlatency_queries: 1\nwarmup_queries: 0\ndepth: 5\nretrievers:\n  bm25: {type: bm25}\n"
    )
    code, _, err = _cli("run", "--config", str(tmp / "c.yaml"), "--out", str(tmp / "r"), "--no-progress")
    assert code == 0, err
    queries = [json.loads(line) for line in (DEMO / "queries.jsonl").read_text().splitlines()][:20]
    with (tmp / "nuggets.jsonl").open("w") as fh:
        for q in queries:
            ns = [{"text": f"{q['_id']} fact {j}", "importance": "vital" if j < 2 else "okay"} for j in range(3)]
            fh.write(json.dumps({"query": q["text"], "qid": q["_id"], "nuggets": ns}) + "\n")
    return tmp


def _assign(folder: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        "nuggets", "assign", "--nuggets", str(folder / "nuggets.jsonl"), "--results", str(folder / "r"),
        "--depth", "3", "--judge", "http", "--model", "m", "--url", url, "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


def _pairs(path: Path) -> list[tuple[str, str]]:
    return [(r["text"], r["candidate_text"]) for r in map(json.loads, path.read_text().splitlines())]


def test_assign_caches_and_asks_nothing_twice(folder: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    ep = FakeEndpoint()
    try:
        code, _, err = _cli(*_assign(folder, tmp_path / "a.jsonl", ep.url, "--price-in", "1", "--price-out", "2"))
        assert code == 0, err
        asked = list(ep.asked)
        done = _pairs(tmp_path / "a.jsonl")
        assert 40 <= len(done) <= 60 and sorted(done) == sorted(asked)  # 20 queries x top 3, each asked once
        assert f"{len(done)} of {len(done)} passages assigned" in err and "cost $" in err
        nj = read_assignments(tmp_path / "a.jsonl", read_nuggets(folder / "nuggets.jsonl"))
        for a in nj.values():
            assert all(lab == label(a.passage, t) for t, lab in a.labels.items())
        # again: nothing missing, nothing asked
        code, _, err = _cli(*_assign(folder, tmp_path / "a.jsonl", ep.url))
        assert code == 0 and len(ep.asked) == len(asked) and "0 of 0 passages" in err
        # a new file: every answer from the cache, the same records
        code, _, err = _cli(*_assign(folder, tmp_path / "b.jsonl", ep.url))
        assert code == 0 and len(ep.asked) == len(asked), err
        assert f"({len(done)} from the cache" in err
        assert sorted((tmp_path / "b.jsonl").read_text().splitlines()) == sorted(
            (tmp_path / "a.jsonl").read_text().splitlines()
        )
    finally:
        ep.close()
    # the file scores: the nugget metrics of the folder's run
    trec = next((folder / "r" / "runs").glob("bm25-*.trec"))
    code, out, err = _cli(
        "evaluate", "--nuggets", str(folder / "nuggets.jsonl"), "--assignments", str(tmp_path / "a.jsonl"),
        "--run", str(trec), "--metrics", "nugget_all@3,nugget_assessed@3", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["runs"][trec.stem.split("-")[0]]["metrics"]["nugget_assessed@3"] == 1.0


def test_resumed_after_sigkill_asks_only_what_is_missing(folder: Path, tmp_path: Path) -> None:
    ep = FakeEndpoint(delay=0.15)
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    out = tmp_path / "a.jsonl"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", *_assign(folder, out, ep.url, "--concurrency", "2")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while len(ep.asked) < 12 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, "finished before it could be killed"
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
        first = set(ep.asked)
        kept = set(_pairs(out)) if out.read_text().endswith("\n") else set(_pairs(out)[:-1])
        assert 0 < len(kept) < 60
        ep.asked.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
            code, _, err = _cli(*_assign(folder, out, ep.url))
        assert code == 0, err
        second = set(ep.asked)
        assert not second & kept  # nothing written before the kill is asked again
        final = _pairs(out)
        assert len(final) == len(set(final))  # each passage once
        assert second | first >= set(final) and second <= set(final) - kept
        assert len(second) < len(final)  # resumed, not started over
        # what was answered before the kill but not written (cached) is not asked again either
        assert len(second) <= len(set(final) - kept)
    finally:
        ep.close()


class KeywordAssigner:
    """A team's assigner: supports a nugget when the passage holds its first word (a test stand-in)."""

    name = "keyword-assigner-1"

    def assign(self, query: str, nuggets: list[str], passage: str) -> list[str]:
        return ["support" if n.split()[0] in passage else "not_support" for n in nuggets]


class BadAssigner:
    name = "bad"

    def assign(self, query: str, nuggets: list[str], passage: str) -> list[str]:
        return ["yes"]


def test_a_teams_class(folder: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    base = [
        "nuggets",
        "assign",
        "--nuggets",
        str(folder / "nuggets.jsonl"),
        "--results",
        str(folder / "r"),
        "--depth",
        "2",
    ]
    code, _, err = _cli(*base, "--judge", f"{__name__}:KeywordAssigner", "--out", str(tmp_path / "a.jsonl"))
    assert code == 0, err
    assert len(_pairs(tmp_path / "a.jsonl")) >= 20
    code, _, err = _cli(*base, "--judge", f"{__name__}:BadAssigner", "--out", str(tmp_path / "b.jsonl"))
    assert code == 2 and "one label" in err
    code, _, err = _cli(*base, "--judge", "http", "--out", str(tmp_path / "c.jsonl"))
    assert code == 2 and "--model" in err and not (tmp_path / "c.jsonl").exists()
