"""The loop of docs/traces.md end to end (harness.traces with the judging commands and the gate), on
5,000 retrieval spans exported by the real opentelemetry-sdk: import, pool production's and two
candidates' top 10 (``harness traces pool``), a person grades a sample on ``judge serve`` (driven
over its HTTP API as the page drives it), a judge grades the whole pool (``judge auto`` against a
local OpenAI-compatible endpoint), PPI joins them (``harness report --auto-qrels``), and ``harness
check`` gates each candidate against production, traffic-weighted."""

from __future__ import annotations

import http.client
import json
import re
import signal
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_harness, start_judge_serve
from tests.core_workflow import _grader

pytest.importorskip("opentelemetry.sdk")  # the dev extra: spans exported by the real SDK

from tests.otel_export import Retrieval, emit

pytestmark = pytest.mark.slow

TOPICS, QUERIES, SPANS = 40, 200, 5000
T0 = 1_780_000_000_000_000_000


def _relevant(topic: int) -> list[str]:
    return [f"t{topic}-{j}" for j in range(6)]


def _noise(rng, k: int) -> list[str]:
    return [f"n{int(x)}" for x in rng.choice(400, size=k, replace=False)]


def _ranking(q: int, good: int, seed: int) -> list[str]:
    """``good`` relevant documents of query q's topic, then noise, shuffled by a seeded draw."""
    rng = np.random.default_rng(seed * 100_003 + q)
    docs = _relevant(q % TOPICS)[:good] + _noise(rng, 10 - good)
    rng.shuffle(docs)
    return docs


def _spans(tmp: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(0)
    p = 1.0 / np.arange(1, QUERIES + 1) ** 1.1
    asked = rng.choice(QUERIES, size=SPANS, p=p / p.sum())
    events = []
    for n, q in enumerate(asked):
        ranking = _ranking(int(q), 3, seed=1)  # production: 3 relevant in its top 10
        docs = [(d, round(1.0 - i * 0.07, 2)) for i, d in enumerate(ranking)]
        events.append(Retrieval(("search-api", "chat-bot", "phoenix-app")[n % 3],
                                "openinference" if n % 3 == 2 else "gen_ai", T0 + n * 10**9,
                                f"question {int(q)} about topic{int(q) % TOPICS}", docs, content=True,
                                data_source="kb", conversation=f"c{n // 4}"))  # fmt: skip
    emit(events, tmp / "spans.jsonl", tmp / "spans.pb")
    return tmp / "spans.jsonl", np.bincount(asked, minlength=QUERIES)


def _topic_grade(body: dict) -> int:
    """The judge: 2 when the passage is about the query's topic (its ``topicN`` word appears twice
    in the prompt), else 0, wrong on one prompt in ten."""
    text = " ".join(m["content"] for m in body["messages"])
    topics = re.findall(r"topic\d+\b", text)
    right = len(topics) != len(set(topics))
    if zlib.crc32(text.encode()) % 10 == 0:
        right = not right
    return 2 if right else 0


def _person_grades(sample: Path) -> int:
    """Grade every row of ``sample`` on a running ``judge serve`` as a person would on the page."""
    proc = start_judge_serve(sample)
    graded = 0
    try:
        port, tok = re.search(r"127\.0\.0\.1:(\d+)/\?token=(\S+)", proc.stdout.readline()).groups()
        headers = {"Content-Type": "application/json", "X-Judge-Token": tok}
        while True:
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
            conn.request("GET", "/api/item?i=next", headers={"X-Judge-Token": tok})
            item = json.loads(conn.getresponse().read())
            if item.get("i") is None:
                return graded
            m = re.search(r"topic(\d+)", item["query"])
            grade = 2 if item["doc_id"].startswith(f"t{m.group(1)}-") else 0
            conn.request("POST", "/api/grade", json.dumps({"i": item["i"], "grade": grade}), headers)
            assert conn.getresponse().status == 200
            graded += 1
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def _ok(p, *needles):
    assert p.returncode == 0, p.stderr[-3000:]
    for n in needles:
        assert n in p.stdout + p.stderr, (n, p.stdout[-2000:])
    return p


def test_the_documented_loop_on_5000_sdk_spans(tmp_path):
    spans, asked = _spans(tmp_path)
    prod = tmp_path / "prod"
    corpus = tmp_path / "team-corpus.jsonl"  # the team's corpus: every id production and candidates rank
    docs = [(d, f"a passage about topic{t}") for t in range(TOPICS) for d in _relevant(t)]
    docs += [(f"n{k}", f"an unrelated passage number {k}") for k in range(400)]
    corpus.write_text("".join(json.dumps({"_id": d, "title": "", "text": x}) + "\n" for d, x in docs))
    _ok(run_harness("traces", "import", str(spans), "--out", str(prod), "--corpus", str(corpus), "--no-progress"),
        "5000 retrieval spans")  # fmt: skip
    queries = [json.loads(x) for x in (prod / "queries.jsonl").read_text().splitlines()]
    assert sum(q["count"] for q in queries) == SPANS
    assert sorted(q["count"] for q in queries) == sorted(int(c) for c in asked if c)
    # two candidates, as a team's systems would hand them in: TREC run files over the same queries
    runs = {}
    for name, good in (("better", 6), ("worse", 1)):
        lines = []
        for q in queries:
            n = int(re.search(r"question (\d+)", q["text"]).group(1))
            lines += [f"{q['_id']} Q0 {d} {i + 1} {10 - i} {name}" for i, d in enumerate(_ranking(n, good, seed=2))]
        runs[name] = tmp_path / f"{name}.trec"
        runs[name].write_text("\n".join(lines) + "\n")
    pool = tmp_path / "pool.csv"
    _ok(run_harness("traces", "pool", str(prod), "--run", f"better={runs['better']}", "--run",
                    f"worse={runs['worse']}", "--depth", "10", "--out", str(pool)), "documents to grade")  # fmt: skip
    sample = tmp_path / "sample.csv"
    _ok(run_harness("judge", "sample", str(pool), "--queries", "40", "--seed", "1", "--out", str(sample)))
    assert _person_grades(sample) > 0
    srv = _grader(_topic_grade)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        _ok(run_harness("judge", "auto", str(pool), "--judge", "http", "--url", url, "--model", "m",
                        "--out", str(tmp_path / "judge.csv"), "--no-progress"))  # fmt: skip
    finally:
        srv.shutdown()
        srv.server_close()
    # a first round: no judgments to merge into (--qrels left out)
    _ok(run_harness("judge", "merge", str(sample), "--out", str(tmp_path / "human.txt")))
    (prod / "qrels").mkdir()
    _ok(run_harness("judge", "merge", str(tmp_path / "judge.csv"), "--out", str(prod / "qrels" / "test.tsv")))
    results = {}
    for name, run in (("production", prod / "runs" / "production.trec"), *runs.items()):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(f"dataset: {{path: {prod}, weights: count}}\nmetrics: [ndcg@10, recall@10]\n"
                       "latency_queries: 2\nwarmup_queries: 0\nstats: {bootstrap: 300, permutations: 500}\n"
                       f"retrievers:\n  system: {{type: run_file, path: {run}}}\n")  # fmt: skip
        results[name] = tmp_path / f"res-{name}"
        _ok(run_harness("run", "--config", str(cfg), "--out", str(results[name]), "--no-progress"), "Traffic-weighted")
    # PPI: people's grades on the sample, the judge's everywhere, one interval per metric
    _ok(run_harness("report", str(results["better"]), "--qrels", str(tmp_path / "human.txt"),
                    "--auto-qrels", str(prod / "qrels" / "test.tsv"), "--labelled", str(sample)), "PPI")  # fmt: skip
    verdicts = {}
    for name in ("better", "worse"):
        p = run_harness("check", "--baseline", str(results["production"]), "--current", str(results[name]),
                        "--metrics", "ndcg@10", "--format", "json")  # fmt: skip
        report = json.loads(p.stdout)
        verdicts[name] = (p.returncode, report["results"]["system"]["ndcg@10"]["verdict"])
        assert any("traffic-weighted" in n for n in report["notes"])
        res = json.loads((results[name] / "results.json").read_text())
        w = np.array(res["weights"]["values"])
        cur = np.average(res["per_query"]["system"]["ndcg@10"], weights=w)
        assert report["results"]["system"]["ndcg@10"]["current"] == pytest.approx(cur, rel=1e-12)
    assert verdicts == {"better": (0, "improved"), "worse": (1, "regression")}
