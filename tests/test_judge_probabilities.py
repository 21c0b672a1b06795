"""``harness judge auto --probabilities``: p_0..p_3 beside each grade, equal to what the team's class
returned, kept in the reply cache; a judge without probabilities and hostile probabilities are one
located line, exit 2, nothing written."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging.pool import PoolRow, read_pool, write_pool
from harness.judging.probabilities import check_row, read_probabilities
from tests.conftest import send_json

TEAM = '''
import json
import math


class SureJudge:
    """Probabilities from the pair's ids (a fixed, uneven distribution), the grade its argmax; the
    pairs asked about are counted in ``calls``."""

    batch_size = 5

    def __init__(self, calls, bad=""):
        self.calls, self.bad = calls, bad
        self.name = "sure"

    def grade(self, pairs):
        return [max(range(4), key=lambda g: self._p(p)[g]) for p in pairs]

    def _p(self, p):
        h = sum(map(ord, p.query_id + p.doc_id))
        w = [1 + (h * (g + 3)) % 7 for g in range(4)]
        return [x / sum(w) for x in w]

    def probabilities(self, pairs):
        with open(self.calls, "a", encoding="utf-8") as f:
            f.write(json.dumps([p.doc_id for p in pairs]) + "\\n")
        out = [self._p(p) for p in pairs]
        if self.bad == "short":
            return out[:-1]
        if self.bad and len(pairs) > 1:
            out[1] = json.loads(self.bad) if self.bad != "nan" else [math.nan, 0.5, 0.5, 0.0]
        return out


class PlainJudge:
    name = "plain"

    def grade(self, pairs):
        return [1 for _ in pairs]
'''


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "team_probs.py").write_text(TEAM, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    rows = [PoolRow(f"q{i % 4}", f"query {i % 4}", f"d{i}", "", f"text {i}", "bm25", 1) for i in range(17)]
    return write_pool(tmp_path / "pool.csv", rows)


@pytest.fixture
def team(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    pool = _setup(tmp_path)
    yield pool
    sys.path.remove(str(tmp_path))
    sys.modules.pop("team_probs", None)


def _auto(tmp_path: Path, cls: str, out: str, *options: str) -> int:
    opts = [a for o in options for a in ("--judge-option", o)]
    return main(["judge", "auto", str(tmp_path / "pool.csv"), "--judge", f"team_probs:{cls}", "--out",
                 str(tmp_path / out), "--no-progress", "--probabilities", *opts])  # fmt: skip


def test_probability_columns_equal_what_the_class_returned_and_are_cached(team, tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    assert _auto(tmp_path, "SureJudge", "g.csv", f"calls={calls}") == 0
    assert "from class" in capsys.readouterr().err
    import team_probs

    j = team_probs.SureJudge(str(tmp_path / "other"))
    rows = read_pool(tmp_path / "g.csv")
    probs = read_probabilities(tmp_path / "g.csv")
    for r in rows:
        want = j._p(r)
        assert [float(r.extra[f"p_{g}"]) for g in range(4)] == want  # exactly: the class's floats
        assert list(probs[r.query_id, r.doc_id]) == want and abs(math.fsum(want) - 1) <= 1e-12
    asked = sum(len(json.loads(x)) for x in calls.read_text(encoding="utf-8").splitlines())
    assert asked == 17
    # a second run into a new file takes every probability from the cache: the class is asked nothing
    assert _auto(tmp_path, "SureJudge", "g2.csv", f"calls={calls}") == 0
    assert sum(len(json.loads(x)) for x in calls.read_text(encoding="utf-8").splitlines()) == 17
    assert read_probabilities(tmp_path / "g2.csv").keys() == probs.keys()
    rows2 = read_pool(tmp_path / "g2.csv")
    assert [r.extra["p_2"] for r in rows2] == [r.extra["p_2"] for r in rows]


def test_a_judge_without_probabilities_is_one_line(team, tmp_path, capsys):
    assert _auto(tmp_path, "PlainJudge", "g.csv") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--probabilities" in err[0] and "no probabilities(pairs)" in err[0]
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize(
    "bad, says",
    [("[0.5, 0.5, 0.5, -0.5]", "p_3"), ("[0.3, 0.3, 0.3, 0.3]", "sum to"), ("nan", "p_0"),
     ("[0.5, 0.5]", "expected 4"), ("short", "one row per pair")],
)  # fmt: skip
def test_hostile_probabilities_are_one_located_line_and_nothing_is_written(team, tmp_path, capsys, bad, says):
    assert _auto(tmp_path, "SureJudge", "g.csv", f"calls={tmp_path / 'c'}", f"bad={bad}") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "'sure'" in err[0]
    if bad != "short":
        assert "row 2" in err[0]
    assert not (tmp_path / "g.csv").exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5), st.none()),
                min_size=0, max_size=6))  # fmt: skip
def test_check_row_accepts_only_distributions_over_four_grades(values):
    try:
        got = check_row(values)
    except ValueError:
        return
    assert len(got) == 4 and all(x >= 0 and math.isfinite(x) for x in got) and abs(math.fsum(got) - 1) <= 1e-6


def test_a_grade_file_written_by_hand_with_bad_probabilities_is_located(tmp_path):
    from harness.errors import InputError

    probs = [{"p_0": 0.25, "p_1": 0.25, "p_2": 0.25, "p_3": 0.25 if i != 2 else 0.5} for i in range(4)]
    rows = [PoolRow("q1", "q", f"d{i}", "", "t", "bm25", 1, 1, probs[i]) for i in range(4)]
    write_pool(tmp_path / "g.jsonl", rows)
    with pytest.raises(InputError, match=r"g\.jsonl:3: .*sum to"):
        read_probabilities(tmp_path / "g.jsonl")


def test_export_lara_writes_the_grades_and_probabilities(team, tmp_path, capsys):
    import csv

    rc = main(["judge", "auto", str(tmp_path / "pool.csv"), "--judge", "team_probs:SureJudge", "--out",
               str(tmp_path / "g.csv"), "--no-progress", "--probabilities", "--judge-option",
               f"calls={tmp_path / 'c'}", "--export-lara", str(tmp_path / "lara.csv")])  # fmt: skip
    assert rc == 0
    rows = {(r.query_id, r.doc_id): r for r in read_pool(tmp_path / "g.csv")}
    with open(tmp_path / "lara.csv", newline="", encoding="utf-8") as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == ["topic_id", "doc_id", "annotation", "prob_0", "prob_1", "prob_2", "prob_3"]
    assert len(got) == len(rows)
    for g in got:
        r = rows[g["topic_id"], g["doc_id"]]
        assert int(g["annotation"]) == r.grade
        assert [float(g[f"prob_{k}"]) for k in range(4)] == [float(r.extra[f"p_{k}"]) for k in range(4)]
    # without --probabilities, or onto an existing file: one line, exit 2
    assert main(["judge", "auto", str(tmp_path / "pool.csv"), "--judge", "team_probs:SureJudge", "--out",
                 str(tmp_path / "g3.csv"), "--judge-option", f"calls={tmp_path / 'c'}",
                 "--export-lara", str(tmp_path / "l2.csv")]) == 2  # fmt: skip
    assert "--export-lara: needs --probabilities" in capsys.readouterr().err and not (tmp_path / "g3.csv").exists()


# ----------------------------------------------------------------------------- http: logprobs, votes


def _endpoint(mode: str):
    """An OpenAI-compatible server on 127.0.0.1: each pair's distribution from its text; ``logprobs``
    mode answers the most likely grade with the grade token's top_logprobs, ``plain`` mode no
    logprobs and a grade that cycles over the distribution's support with each request."""
    import hashlib
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = {"requests": 0, "bodies": [], "seen": {}}

    def dist(text: str) -> list[float]:
        h = hashlib.sha256(text.encode()).digest()
        w = [1 + h[g] % 9 for g in range(4)]
        return [x / sum(w) for x in w]

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            msg = body["messages"][0]["content"]
            key = msg.split("\nQuery: ")[1]
            state["requests"] += 1
            state["bodies"].append({k: v for k, v in body.items() if k != "messages"})
            p = dist(key)
            n = state["seen"][key] = state["seen"].get(key, 0) + 1
            g = max(range(4), key=lambda i: p[i]) if mode == "logprobs" else (n - 1) % 2
            choice = {"message": {"role": "assistant", "content": f"##final score: {g}"}}
            if mode == "logprobs" and body.get("logprobs"):
                top = [{"token": f" {i}", "logprob": math.log(p[i])} for i in range(4)]
                top.append({"token": "x", "logprob": -0.1})  # not a grade: ignored
                choice["logprobs"] = {"content": [{"token": "##final score:", "logprob": -0.01, "top_logprobs": []},
                                                  {"token": f" {g}", "logprob": math.log(p[g]),
                                                   "top_logprobs": top}]}  # fmt: skip
            send_json(
                self, json.dumps({"choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode()
            )

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state, dist


def _http(tmp_path: Path, srv, out: str, *more: str) -> int:
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    return main(["judge", "auto", str(tmp_path / "pool.csv"), "--judge", "http", "--url", url, "--model", "m",
                 "--api-key-env", "PROBS_TEST_KEY", "--out", str(tmp_path / out), "--no-progress",
                 "--probabilities", *more])  # fmt: skip


@pytest.fixture
def endpoint(tmp_path, monkeypatch):
    """``_endpoint(mode)`` started for the test (a pool written, the cache its own) and shut after."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PROBS_TEST_KEY", "k")
    _setup(tmp_path)
    started = []

    def start(mode: str):
        started.append(_endpoint(mode))
        return started[-1]

    yield start
    for srv, _, _ in started:
        srv.shutdown()
        srv.server_close()
    sys.path.remove(str(tmp_path))


def test_http_probabilities_are_the_grade_tokens_logprobs_in_one_request_each(tmp_path, endpoint, capsys):
    srv, state, dist = endpoint("logprobs")
    assert _http(tmp_path, srv, "g.csv") == 0
    err = capsys.readouterr().err
    assert "from logprobs" in err and "17 requests, 170 tokens in, 51 out" in err  # the probability pass counted
    assert state["requests"] == 17  # the grade is read from the same reply: no second request
    assert all(b["logprobs"] is True and b["top_logprobs"] == 10 for b in state["bodies"])
    for r in read_pool(tmp_path / "g.csv"):
        from harness.judging import umbrela

        want = dist(umbrela.prompt(r.query, "", umbrela.passage(r.title, r.text)).split("\nQuery: ")[1])
        got = [float(r.extra[f"p_{g}"]) for g in range(4)]
        assert max(abs(a - b) for a, b in zip(got, want)) <= 1e-12 and r.grade == got.index(max(got))
    assert _http(tmp_path, srv, "g2.csv") == 0 and state["requests"] == 17  # all from the caches


def test_http_without_logprobs_says_so_and_votes_give_shares(tmp_path, endpoint, capsys):
    srv, _, _ = endpoint("plain")
    assert _http(tmp_path, srv, "g.csv") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--votes K" in err[0] and not (tmp_path / "g.csv").exists()
    assert _http(tmp_path, srv, "g.csv", "--votes", "4") == 0
    assert "from votes=4" in capsys.readouterr().err
    for r in read_pool(tmp_path / "g.csv"):  # grades 0, 1, 0, 1 after the refused first ask: shares 1/2
        assert sorted(float(r.extra[f"p_{g}"]) for g in range(4)) == [0.0, 0.0, 0.5, 0.5]
    assert _http(tmp_path, srv, "g3.csv", "--votes", "1") == 2
    assert "--votes: must be at least 2" in capsys.readouterr().err


# ----------------------------------------------------------------------------- cross-encoder


def test_ordinal_and_calibrated_mappings_by_hand():
    import numpy as np

    from harness.judging.crossenc import calibrated, ordinal_probabilities

    p = ordinal_probabilities(np.array([0.0]), [0.0, 0.0, 0.0])[0]
    assert np.allclose(p, [0.5, 0.0, 0.0, 0.5])
    sig = 1 / (1 + math.exp(-1))
    p = ordinal_probabilities(np.array([1.0]), [0.0, 1.0, 2.0])[0]
    assert np.allclose(p, [1 - sig, sig - 0.5, 0.5 - (1 - sig), 1 - sig])
    m = calibrated(np.array([0, 0, 1, 3]), np.array([0, 1, 1, 3]))
    assert np.allclose(m[0], [2 / 6, 2 / 6, 1 / 6, 1 / 6]) and np.allclose(m[2], 0.25)
    assert np.allclose(m[1], [1 / 5, 2 / 5, 1 / 5, 1 / 5]) and np.allclose(m.sum(axis=1), 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20), st.lists(st.floats(-50, 50), min_size=3, max_size=3))
def test_ordinal_probabilities_are_distributions(scores, t):
    import numpy as np

    from harness.judging.crossenc import ordinal_probabilities

    p = ordinal_probabilities(np.array(scores), sorted(t))
    assert np.all(p >= 0) and np.allclose(p.sum(axis=1), 1, atol=1e-9)
    for row in p:
        check_row(list(row))


@pytest.mark.slow
def test_cross_encoder_probabilities_mapped_and_calibrated(tmp_path, monkeypatch):
    import numpy as np
    import torch
    from sentence_transformers import CrossEncoder

    from harness.judging.crossenc import calibrated, ordinal_probabilities, to_grades
    from tests.conftest import build_tiny_bert

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    model = build_tiny_bert(tmp_path / "ce", head=True)
    rows = [PoolRow(f"q{i % 4}", f"question {i % 4} on {i % 3}", f"d{i}", "", f"document {i} topic {i % 3} {i * 7}",
                    "bm25", 1) for i in range(24)]  # fmt: skip
    pool = write_pool(tmp_path / "pool.csv", rows)
    raw = CrossEncoder(str(model)).predict([[r.query, r.text] for r in rows], activation_fn=torch.nn.Identity())
    scores = np.asarray(raw, dtype=np.float64)
    t = [float(x) for x in np.quantile(scores, [0.25, 0.5, 0.75])]
    base = ["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(model), "--probabilities"]
    assert main([*base, "--thresholds", ",".join(map(repr, t)), "--out", str(tmp_path / "g.csv")]) == 0
    got = np.array([[float(r.extra[f"p_{g}"]) for g in range(4)] for r in read_pool(tmp_path / "g.csv")])
    assert np.allclose(got, ordinal_probabilities(scores, t), atol=1e-6)
    people = [(1 + i) % 4 for i in range(24)]
    human = [PoolRow(r.query_id, r.query, r.doc_id, r.title, r.text, "bm25", 1, people[i]) for i, r in enumerate(rows)]
    write_pool(tmp_path / "human.csv", human)
    assert main([*base, "--calibrate", str(tmp_path / "human.csv"), "--out", str(tmp_path / "c.csv")]) == 0
    out = read_pool(tmp_path / "c.csv")
    grades = np.array([r.grade for r in out])
    m = calibrated(grades, np.array(people))
    assert np.array_equal(grades, to_grades(scores, [float(x) for x in _fitted(tmp_path / "c.csv")]))
    got = np.array([[float(r.extra[f"p_{g}"]) for g in range(4)] for r in out])
    assert np.allclose(got, m[grades], atol=1e-12)


def _fitted(path: Path) -> list[str]:
    """The thresholds a cross-encoder judge's name records (``cross-encoder:MODEL:T1,T2,T3``)."""
    return read_pool(path)[0].extra["judge"].rsplit(":", 1)[1].split(",")
