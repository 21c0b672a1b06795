"""Nugget metrics where they plug in: ``harness evaluate --nuggets``, a config's ``dataset: {nuggets,
assignments}`` through ``harness run`` (table, intervals, significance), ``check`` and ``power``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.io.trec import read_qrels

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "datasets" / "demo"
DATA = Path(__file__).parent / "data" / "nuggets"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def demo_nuggets(tmp: Path) -> tuple[Path, Path]:
    """Nuggets for every demo query (two vital, one okay; every fifth query none vital) and an
    assignment for every judged document: a grade-2+ document supports the first nugget, a grade-1
    one partially supports it and supports the okay one, a grade-0 one supports nothing."""
    queries = [json.loads(line) for line in (DEMO / "queries.jsonl").read_text().splitlines()]
    qrels = read_qrels(DEMO / "qrels" / "test.tsv")
    nuggets, assignments = [], []
    for i, q in enumerate(queries):
        imp = ["okay", "okay", "okay"] if i % 5 == 4 else ["vital", "vital", "okay"]
        ns = [{"text": f"{q['_id']} fact {j}", "importance": imp[j]} for j in range(3)]
        nuggets.append({"query": q["text"], "qid": q["_id"], "nuggets": ns})
        for doc, grade in qrels.get(q["_id"], {}).items():
            labels = (
                ["support", "not_support", "not_support"]
                if grade >= 2
                else ["partial_support", "not_support", "support"]
                if grade == 1
                else ["not_support"] * 3
            )
            assignments.append(
                {
                    "text": q["text"],
                    "qid": q["_id"],
                    "candidate_text": doc,
                    "docid": doc,
                    "nuggets": [{**n, "assignment": a} for n, a in zip(ns, labels)],
                }
            )
    n, a = tmp / "nuggets.jsonl", tmp / "assignments.jsonl"
    n.write_text("".join(json.dumps(r) + "\n" for r in nuggets))
    a.write_text("".join(json.dumps(r) + "\n" for r in assignments))
    return n, a


def test_evaluate_with_nuggets_alone() -> None:
    code, out, err = _cli(
        "evaluate",
        "--nuggets",
        str(DATA / "nuggets.jsonl"),
        "--assignments",
        str(DATA / "assignments.jsonl"),
        "--run",
        str(DATA / "run.trec"),
        "--metrics",
        "nugget_vital@1,nugget_all@3,nugget_assessed@3,judged@3",
        "--per-query",
        "--format",
        "json",
    )
    assert code == 0, err
    per = json.loads(out)["runs"]["run"]["per_query"]
    # q1: d2 (b support, c partial), d1 (a support), d9 never assessed; 1024: c8 unassessed, c7
    assert per["q1"] == {"nugget_vital@1": 0.5, "nugget_all@3": 2.5 / 3, "nugget_assessed@3": 2 / 3, "judged@3": 2 / 3}
    assert per["1024"] == {"nugget_vital@1": 0.0, "nugget_all@3": 0.75, "nugget_assessed@3": 0.5, "judged@3": 0.5}


def test_bad_files_exit_2_with_the_line(tmp_path: Path) -> None:
    lines = (DATA / "assignments.jsonl").read_text().splitlines()
    (tmp_path / "a.jsonl").write_text("\n".join([lines[0], lines[1].replace('"partial_support"', '"maybe"')]) + "\n")
    code, _, err = _cli(
        "evaluate",
        "--nuggets",
        str(DATA / "nuggets.jsonl"),
        "--assignments",
        str(tmp_path / "a.jsonl"),
        "--run",
        str(DATA / "run.trec"),
    )
    assert code == 2 and f"{tmp_path / 'a.jsonl'}:2: nuggets[2].assignment: unknown assignment 'maybe'" in err
    code, _, err = _cli(
        "evaluate",
        "--qrels",
        str(DEMO / "qrels" / "test.tsv"),
        "--run",
        str(DATA / "run.trec"),
        "--metrics",
        "nugget_vital@5",
    )
    assert code == 2 and "--nuggets" in err


def test_config_run_check_power(tmp_path: Path) -> None:
    n, a = demo_nuggets(tmp_path)
    (tmp_path / "c.yaml").write_text(
        f"dataset: {{path: demo, nuggets: {n.name}, assignments: {a.name}}}\n"
        "latency_queries: 2\nwarmup_queries: 0\nbaseline: bm25\nstats: {bootstrap: 200, permutations: 500}\n"
        "metrics: [ndcg@10, nugget_vital@10, nugget_all@10, nugget_assessed@10]\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_k09: {type: bm25, k1: 0.3, b: 0.2}\n",
        encoding="utf-8",
    )
    code, out, err = _cli("run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 0, err
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert 0 < res["summary"]["bm25"]["nugget_vital@10"] < 1
    assert "nugget_vital@10" in res["intervals"]["bm25"] and "nugget_vital@10" in res["significance"]["bm25_k09"]
    assert "nugget_vital@10" in (tmp_path / "r" / "table.md").read_text()
    assert res["manifest"]["config"]["dataset"]["nuggets"].endswith("nuggets.jsonl")
    # the page: per query, the nuggets each run's top 10 covers
    from harness.results import Results
    from harness.results.drilldown import attach_folder
    from harness.results.page.data import build

    loaded = Results.open(tmp_path / "r")
    attach_folder(loaded)
    nug = build(loaded).details[0]["nug"]
    i = loaded.query_ids.index("q01")
    assert nug["t"][i] == ["q01 fact 0", "q01 fact 1", "q01 fact 2"] and nug["v"][i] == [1, 1, 0]
    vital = [b for b, v in zip(nug["b"]["bm25"][i], nug["v"][i]) if v]
    # levels 2 (support) and 1 (partial): nugget_vital@10 = sum of the vital ones' levels / 2 / |vital|
    assert sum(vital) / 2 / len(vital) == res["per_query"]["bm25"]["nugget_vital@10"][i]
    assert '"nug"' in (tmp_path / "r" / "report.html").read_text()
    # the stored run scored by `harness evaluate --nuggets` gives the same per-query values
    trec = next((tmp_path / "r" / "runs").glob("bm25-*.trec"))
    code, out, err = _cli(
        "evaluate",
        "--qrels",
        str(DEMO / "qrels" / "test.tsv"),
        "--nuggets",
        str(n),
        "--assignments",
        str(a),
        "--run",
        str(trec),
        "--metrics",
        "nugget_vital@10,ndcg@10",
        "--format",
        "json",
        "--per-query",
    )
    assert code == 0, err
    per = next(iter(json.loads(out)["runs"].values()))["per_query"]
    stored = dict(zip(res["query_ids"], res["per_query"]["bm25"]["nugget_vital@10"]))
    assert per and all(v["nugget_vital@10"] == stored[q] for q, v in per.items())
    code, out, err = _cli(
        "check", "--baseline", str(tmp_path / "r"), "--current", str(tmp_path / "r"), "--metrics", "nugget_vital@10"
    )
    assert code == 0, out + err
    code, out, err = _cli("power", str(tmp_path / "r"), "--metric", "nugget_vital@10")
    assert code == 0, out + err


def test_config_asking_nugget_metrics_without_nuggets_stops_first(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("dataset: demo\nmetrics: [nugget_vital@10]\nretrievers:\n  bm25: {type: bm25}\n")
    code, _, err = _cli("run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 2 and "dataset.nuggets" in err and not (tmp_path / "r" / "results.json").exists()
