"""Pooling, the judging server (real HTTP, a real process killed mid-way), merging, re-scoring,
and the table's judged@10 column and warning. The browser test is tests/test_judging_browser.py."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging.merge import merge
from harness.judging.pool import PoolRow, dumps, pooled, read_pool, write_pool
from harness.judging.server import Judging, make_server
from harness.results import Results
from harness.run import Run
from tests.conftest import start_judge_serve

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------- pooling
def test_pool_is_the_union_of_unjudged_docs_in_each_top_k():
    a = Run.coerce({"q1": {"d1": 5, "d2": 4, "d3": 3, "d9": 1}, "q2": {"x": 1}, "q3": {"u": 1}})
    b = Run.coerce({"q1": {"d3": 9, "d4": 8, "d1": 7}, "q2": {"y": 2, "x": 1}})
    qrels = {"q1": {"d1": 1, "d4": 0}, "q2": {"x": -1}}  # q3 judges nothing: not an evaluated query
    got = pooled({"a": a, "b": b}, qrels, depth=3)
    # q1: a's top 3 d1 d2 d3, b's d3 d4 d1 -> unjudged d2 (a, rank 2), d3 (a rank 3, b rank 1)
    assert got == [("q1", "d3", ["a", "b"], 1), ("q1", "d2", ["a"], 2), ("q2", "y", ["b"], 1)]
    assert pooled({"a": a, "b": b}, qrels, depth=3, max_per_query=1) == [got[0], got[2]]
    assert pooled({"a": a, "b": b}, qrels, depth=1) == [("q1", "d3", ["b"], 1), ("q2", "y", ["b"], 1)]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abc"), st.dictionaries(st.sampled_from("qr"), st.dictionaries(
        st.sampled_from([f"d{i}" for i in range(8)]), st.sampled_from([0.0, 1.0, 2.0, 0.5])), min_size=1), min_size=1),
    st.dictionaries(st.sampled_from("qr"), st.dictionaries(st.sampled_from([f"d{i}" for i in range(8)]),
                                                           st.integers(-1, 2))),
    st.integers(1, 5),
)  # fmt: skip
def test_pool_equals_a_plain_set_computation(runs, qrels, depth):
    objs = {n: Run.coerce(r) for n, r in runs.items()}
    got = {(q, d) for q, d, _, _ in pooled(objs, qrels, depth)}
    want = set()
    for run in objs.values():
        for i, q in enumerate(run.query_ids):
            top = run.doc_ids[run.indices[i, : min(depth, int(run.lengths[i]))]].tolist()
            want |= {(q, d) for d in top if q in qrels and d not in qrels[q]}
    assert got == want
    assert pooled(objs, qrels, depth) == pooled(dict(reversed(list(objs.items()))), qrels, depth)  # deterministic


HOSTILE = 'comma, "quote", new\nline, tab\t, é, 😀, <script>alert(1)</script>'


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_pool_file_round_trips_hostile_text(tmp_path, suffix):
    rows = [PoolRow("q1", HOSTILE, "d,1", HOSTILE, HOSTILE, "a;b", 3), PoolRow("q 2", "", "d2", "", "", "a", 1, 2)]
    path = write_pool(tmp_path / f"pool{suffix}", rows)
    assert read_pool(path) == rows


def test_pool_file_errors_name_file_line_and_field(tmp_path):
    p = tmp_path / "pool.csv"
    p.write_text("query_id,doc_id,grade\nq1,d1,\nq1,d2,high\n")
    with pytest.raises(Exception, match=r"pool.csv:3: grade: 'high' is not an integer"):
        read_pool(p)
    p.write_text("query_id,doc_id,grade\nq1,d1,\nq1,d1,1\n")
    with pytest.raises(Exception, match=r"pool.csv:3: .*listed twice \(also line 2\)"):
        read_pool(p)
    p.write_text("query_id,grade\n")
    with pytest.raises(Exception, match=r"missing column\(s\) doc_id"):
        read_pool(p)


# ---------------------------------------------------------------------- merging
def _pool(tmp_path: Path, grades: dict[tuple[str, str], int | None]) -> Path:
    rows = [PoolRow(q, "", d, "", "", "a", 1, g) for (q, d), g in grades.items()]
    return write_pool(tmp_path / "pool.csv", rows)


def test_merge_adds_new_grades_and_keeps_the_old_file(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    before = qrels.read_bytes()
    pool = _pool(tmp_path, {("q1", "d3"): 2, ("q1", "d2"): 0, ("q2", "d9"): 0, ("q1", "d4"): None})
    out = tmp_path / "qrels2.txt"
    assert main(["judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(out)]) == 0
    assert out.read_text() == "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d9 0\n"
    assert qrels.read_bytes() == before
    prov = json.loads((tmp_path / "qrels2.txt.provenance.json").read_text())
    assert (prov["added"], prov["already_judged_alike"], prov["ungraded"], prov["judgments"]) == (2, 1, 1, 4)
    assert prov["qrels"]["path"] == str(qrels.resolve()) and prov["pool"]["path"] == str(pool.resolve())
    assert re.match(r"\d{4}-\d\d-\d\dT", prov["created"])
    # the output is never overwritten, and never the judgments themselves
    assert main(["judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(out)]) == 2
    assert main(["judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(qrels)]) == 2
    assert "never modified" in capsys.readouterr().err
    assert qrels.read_bytes() == before


def test_merge_refuses_a_conflict_naming_both(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    pool = _pool(tmp_path, {("q1", "d2"): 1, ("q1", "d1"): 0})
    out = tmp_path / "qrels2.txt"
    assert main(["judge", "merge", str(pool), "--qrels", str(qrels), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'q1', doc 'd1': graded 0 in the pool" in err and str(pool) in err and str(qrels) in err
    assert not out.exists() and merge  # nothing written


# ---------------------------------------------------------------------- the server
def _post(port: int, path: str, body: dict, token: str = "") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", "X-Judge-Token": token})
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def _get(port: int, path: str, token: str = "") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"X-Judge-Token": token})
    r = conn.getresponse()
    return r.status, json.loads(r.read()) if path.startswith("/api") else r.read().decode()


def test_server_grades_undoes_and_saves_each_grade(tmp_path):
    pool = _pool(tmp_path, {("q1", f"d{i}"): None for i in range(4)})
    judging = Judging(pool)
    server = make_server(judging)
    port, tok = server.server_address[1], judging.token
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        status, page = _get(port, f"/?token={tok}")
        assert status == 200 and "keydown" in page and "http" not in page.split("<script>")[1]  # no external assets
        _, item = _get(port, "/api/item?i=next", tok)
        assert (item["i"], item["graded"], item["total"]) == (0, 0, 4)
        _, r = _post(port, "/api/grade", {"i": 0, "grade": 3}, tok)
        assert r["next"] == 1 and [x.grade for x in read_pool(pool)] == [3, None, None, None]
        _post(port, "/api/grade", {"i": 1, "grade": 0}, tok)
        _, r = _post(port, "/api/undo", {}, tok)
        assert r["undone"] == 1 and [x.grade for x in read_pool(pool)] == [3, None, None, None]
        assert pool.read_text() == dumps(read_pool(pool), "csv")  # one row re-encoded = the whole file written
        assert _post(port, "/api/grade", {"i": 9, "grade": 1}, tok)[0] == 400
        assert _post(port, "/api/grade", {"i": 1, "grade": 7}, tok)[0] == 400
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        form = {"Content-Type": "application/x-www-form-urlencoded", "X-Judge-Token": tok}
        conn.request("POST", "/api/grade", "i=1&grade=1", form)
        assert conn.getresponse().status == 415  # a form cannot grade (and cannot carry the token either)
    finally:
        server.shutdown()
        server.server_close()
        judging.close()


def test_killed_server_process_loses_no_acknowledged_grade(tmp_path):
    pool = _pool(tmp_path, {("q1", f"d{i}"): None for i in range(30)})
    proc = start_judge_serve(pool)
    try:
        port, tok = re.search(r"127\.0\.0\.1:(\d+)/\?token=(\S+)", proc.stdout.readline()).groups()
        port = int(port)
        acked = {}
        for i in range(12):
            status, _ = _post(port, "/api/grade", {"i": i, "grade": i % 4}, tok)
            assert status == 200
            acked[i] = i % 4
        # a grade in flight while the process dies: before or after, never half a file
        threading.Thread(target=lambda: _safe_post(port, tok), daemon=True).start()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = read_pool(pool)
    assert {i: r.grade for i, r in enumerate(rows) if r.grade is not None and i < 12} == acked
    assert len(rows) == 30


def _safe_post(port: int, tok: str) -> None:
    with contextlib.suppress(OSError, http.client.HTTPException, ValueError):
        _post(port, "/api/grade", {"i": 20, "grade": 1}, tok)


def test_serve_refuses_a_bad_pool_before_listening(tmp_path, capsys):
    p = tmp_path / "pool.csv"
    p.write_text("query_id,doc_id,grade\nq1,d1,x\n")
    assert main(["judge", "serve", str(p), "--port", "0"]) == 2
    assert "pool.csv:2: grade" in capsys.readouterr().err


# ---------------------------------------------------------------------- re-scoring and the table
@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("demo")
    return _run_demo(tmp / "demo.yaml", "retrievers:\n  bm25: {type: bm25}\n  bm25_k2: {type: bm25, k1: 2.0, b: 0.9}\n")


def _run_demo(cfg: Path, rest: str) -> Path:
    """``harness run`` of the demo with BM25 only (no model) and few resamples, the config ending in
    ``rest``, into ``res`` beside ``cfg``."""
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10, map, bpref]\ndepth: 20\nlatency_queries: 0\nwarmup_queries: 0\n"
        "baseline: bm25\nstats: {bootstrap: 50, permutations: 100}\n" + rest
    )
    assert main(["run", "--config", str(cfg), "--out", str(cfg.parent / "res"), "--no-progress"]) == 0
    return cfg.parent / "res"


@pytest.mark.slow
def test_results_record_judged_at_10_and_the_table_shows_it(demo_folder, capsys):
    from harness.results.table import build_table

    res = Results.load(demo_folder)
    assert set(res.judged_at_10) == {"bm25", "bm25_k2"} and all(0 < v < 0.9 for v in res.judged_at_10.values())
    table = build_table(res)
    assert table.metrics[-1] == "judged@10"
    assert not any(r.metrics["judged@10"].best for r in table.rows)
    assert not any("judgments made for others" in n for n in table.notes)  # both pooled alike
    res.judged_at_10["bm25"] = 0.95  # the baseline judged, the other not: warned
    notes = build_table(res).notes
    assert any(n.startswith("warning: bm25_k2 is compared on judgments made for others") for n in notes)
    res.judged_at_10 = {"bm25": 0.95, "bm25_k2": 0.92}  # judged enough: no column
    assert "judged@10" not in build_table(res).metrics


@pytest.mark.slow
def test_report_judged_only_and_qrels_rescore_without_touching_the_folder(demo_folder, tmp_path, capsys):
    before = {p: p.read_bytes() for p in demo_folder.rglob("*") if p.is_file()}
    assert main(["report", str(demo_folder), "--judged-only"]) == 0
    out = capsys.readouterr().out
    assert "Judged-only (trec_eval -J)" in out
    qrels = tmp_path / "q.txt"
    qrels.write_text((demo_folder / "qrels.tsv").read_text())
    assert main(["report", str(demo_folder), "--qrels", str(qrels)]) == 0
    assert {p: p.read_bytes() for p in demo_folder.rglob("*") if p.is_file()} == before
    from harness.engine.rescore import rescore

    res = Results.load(demo_folder)
    same = rescore(res, qrels)
    assert same.summary == res.summary  # the same judgments reproduce the stored summary exactly
    assert rescore(res, judged_only=True).summary["bm25"]["map"] >= res.summary["bm25"]["map"]


def test_evaluate_and_compare_take_judged_only(tmp_path, capsys):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 1\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 u 1 9 t\nq1 Q0 a 2 8 t\nq2 Q0 v 1 9 t\nq2 Q0 c 2 8 t\n")
    other = tmp_path / "s.trec"
    other.write_text("q1 Q0 b 1 9 t\nq1 Q0 a 2 8 t\nq2 Q0 c 1 9 t\n")
    args = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "mrr,bpref", "--format", "json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)["runs"]["r"]["metrics"]
    assert main([*args, "--judged-only"]) == 0
    judged = json.loads(capsys.readouterr().out)["runs"]["r"]["metrics"]
    assert plain["mrr"] == 0.5 and judged["mrr"] == 1.0  # the unjudged doc on top no longer counts
    assert plain["bpref"] == judged["bpref"] == 1.0
    out = tmp_path / "cmp"
    assert main(["compare", str(run), str(other), "--qrels", str(qrels), "--metrics", "mrr", "--judged-only",
                 "--bootstrap", "10", "--permutations", "10", "--out", str(out)]) == 0  # fmt: skip
    assert "Judged-only (trec_eval -J)" in capsys.readouterr().out
    res = Results.load(out)
    assert res.manifest["config"]["judged_only"] is True and res.summary["r"]["mrr"] == 1.0


@pytest.mark.slow
def test_config_judged_only_scores_a_run_judged_only(demo_folder, tmp_path):
    from harness.config import RunConfig
    from harness.engine.rescore import rescore

    assert RunConfig.model_validate({"retrievers": {"bm25": {"type": "bm25"}}, "judged_only": True}).judged_only
    res = Results.load(_run_demo(tmp_path / "j.yaml", "judged_only: true\nretrievers:\n  bm25: {type: bm25}\n"))
    assert res.manifest["config"]["judged_only"] is True
    assert res.summary["bm25"] == rescore(Results.load(demo_folder), judged_only=True).summary["bm25"]
