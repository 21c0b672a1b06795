"""The engine as a user meets it: durable runs survive SIGKILL, ``--resume`` finishes with the same
numbers without re-running finished retrievers, folders from before schema 2 still load, and the
results folder never disagrees with itself."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from harness.engine import Graph, Node, RunStore, run_stem
from harness.errors import InputError
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.results import Results
from tests.conftest import QUICK_RUN, SLOW_RETRIEVER, kill_when_started
from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent
V1 = REPO / "tests" / "data" / "v1_results"


CONFIG = (
    "\ndataset: demo\n"
    + QUICK_RUN
    + textwrap.dedent("""
    retrievers:
      bm25: {type: bm25}
      slow: {type: python, class: "slow:Slow", allow_unknown_docs: true}
      bm25_k12: {type: bm25, k1: 1.2}
""").lstrip("\n")
)


def _write(tmp: Path) -> None:
    (tmp / "slow.py").write_text(SLOW_RETRIEVER)
    (tmp / "run.yaml").write_text(CONFIG)


def test_sigkill_keeps_finished_runs_and_resume_matches_an_uninterrupted_run(tmp_path):
    _write(tmp_path)
    kill_when_started(tmp_path, "run", "--config", "run.yaml", "--out", "out", "--no-progress", seconds="120")
    out = tmp_path / "out"
    # bm25 finished before the kill: its run and record are on disk, and results.json names it
    record = json.loads((out / "runs" / f"{run_stem('bm25')}.json").read_text())
    assert record["status"] == "ok" and record["config_hash"]
    partial = json.loads((out / "results.json").read_text())
    assert partial["complete"] is False and list(partial["summary"]) == ["bm25"]
    qrels = CompiledQrels(read_qrels(out / "qrels.tsv"))
    run = read_run(out / partial["run_files"]["bm25"]["file"])
    assert evaluate_run(qrels, run, ["ndcg@10", "mrr@10"]).means() == partial["summary"]["bm25"]

    resumed = harness("run", "--config", "run.yaml", "--out", "out", "--resume", "--no-progress", cwd=tmp_path,
                      env={"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "SLOW_SECONDS": "0"})  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "bm25: reusing the stored run" in resumed.stderr
    assert "running bm25\n" not in resumed.stderr and "running bm25_k12" in resumed.stderr
    fresh = harness("run", "--config", "run.yaml", "--out", "fresh", "--no-progress", cwd=tmp_path,
                    env={"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "SLOW_SECONDS": "0"})  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    a = json.loads((out / "results.json").read_text())
    b = json.loads((tmp_path / "fresh" / "results.json").read_text())
    assert a["complete"] is True
    for key in ("summary", "query_ids", "per_query", "significance", "intervals", "counts"):
        assert a[key] == b[key], key
    assert a["manifest"]["retrievers"]["bm25"]["reused"] is True
    assert b["manifest"]["retrievers"]["bm25"]["reused"] is False


def test_a_fresh_run_into_a_finished_folder_keeps_it_whole_until_it_completes(tmp_path):
    _write(tmp_path)
    first = harness("run", "--config", "run.yaml", "--out", "out", "--no-progress", cwd=tmp_path,
                    env={"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "SLOW_SECONDS": "0"})  # fmt: skip
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    kill_when_started(tmp_path, "run", "--config", "run.yaml", "--out", "out", "--no-progress", seconds="120")
    after = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before  # the finished folder is untouched; the new bm25 waits in the staging folder
    staged = tmp_path / ".out.harness-next" / "runs" / f"{run_stem('bm25')}.json"
    assert json.loads(staged.read_text())["status"] == "ok"


def test_two_runs_cannot_write_one_folder(tmp_path):
    held = RunStore(tmp_path / "out")
    with held, pytest.raises(InputError, match="another harness command"), RunStore(tmp_path / "out"):
        pass
    with RunStore(tmp_path / "out"):  # released
        pass


def test_run_file_names_never_collide(tmp_path):
    names = ["a/b", "a_b", "a\nb", "é", "e", "x" * 300, "..", ""]
    stems = [run_stem(n) for n in names]
    assert len(set(stems)) == len(names)
    assert all(len(s) < 100 and "/" not in s and "\n" not in s and not s.startswith(".") for s in stems)


def test_graph_order_closure_and_hashes():
    def node(name, *inputs, **spec):
        return Node(name, make=lambda: None, inputs=list(inputs), spec={"type": name, **spec})

    g = Graph([node("hyb", "a", "b"), node("a"), node("b", k1=1.0)])
    assert g.order == ["a", "b", "hyb"] and g.closure("hyb") == ["a", "b", "hyb"]
    h1 = g.config_hashes({"depth": 10})
    h2 = Graph([node("hyb", "a", "b"), node("a"), node("b", k1=1.2)]).config_hashes({"depth": 10})
    assert h1["a"] == h2["a"] and h1["b"] != h2["b"] and h1["hyb"] != h2["hyb"]  # a change flows downstream
    with pytest.raises(InputError, match="cycle"):
        Graph([node("a", "b"), node("b", "a")])


def test_schema_1_folder_loads_in_report_and_check(tmp_path):
    folder = tmp_path / "v1"
    shutil.copytree(V1, folder)
    res = Results.load(folder)
    assert res.schema_version == 2 and set(res.summary) == {"bm25", "bm25_k12"}
    assert len(res.query_ids) == 83 and len(res.per_query["bm25"]["ndcg@10"]) == 83
    report = harness("report", str(folder), "--worst", "2")
    assert report.returncode == 0, report.stderr
    assert "bm25_k12" in report.stdout and "worst queries" in report.stdout
    check = harness("check", "--baseline", str(folder), "--current", str(folder))
    assert check.returncode == 0, check.stdout + check.stderr
    # a schema 2 run of the same config passes the gate against the schema 1 baseline
    cfg = tmp_path / "same.yaml"
    cfg.write_text(json.dumps(res.manifest["config"] | {"dataset": "demo", "cache_dir": str(tmp_path / "c")}))
    run = harness("run", "--config", str(cfg), "--out", str(tmp_path / "v2"), "--no-progress")
    assert run.returncode == 0, run.stderr
    check = harness("check", "--baseline", str(folder), "--current", str(tmp_path / "v2"))
    assert check.returncode == 0, check.stdout + check.stderr
    assert Results.load(tmp_path / "v2").summary == res.summary
