"""Bad input, failing retrievers, killed runs: clear one-line errors, nothing lost, nothing corrupt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.results.store import run_stem
from tests.conftest import copy_demo, one_line_error
from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "datasets" / "demo"


QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq2 Q0 d3 1 0.7 sys\n"


# --------------------------------------------------------------------------- bad input files
def test_non_integer_grade(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 1.5\n")
    (tmp_path / "r.txt").write_text(RUN)
    one_line_error(harness("evaluate", "--qrels", "q.txt", "--run", "r.txt", cwd=tmp_path), "q.txt:2:", "grade")


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN", "zero"])
def test_bad_score_in_run_file(tmp_path, bad):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text(RUN + f"q2 Q0 d9 2 {bad} sys\n")
    one_line_error(harness("evaluate", "--qrels", "q.txt", "--run", "r.txt", cwd=tmp_path), "r.txt:4:", "score")


def test_missing_run_file(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    one_line_error(
        harness("evaluate", "--qrels", "q.txt", "--run", "nope.trec", cwd=tmp_path), "nope.trec", "not found"
    )


def test_unknown_retriever_type(tmp_path):
    (tmp_path / "c.yaml").write_text("dataset: demo\nretrievers:\n  bm25: {type: bm25}\n  es: {type: elastic}\n")
    one_line_error(
        harness("run", "--config", "c.yaml", cwd=tmp_path),
        "c.yaml:4:",
        "retrievers.es.type",
        "'elastic'",
        "known types",
    )


def test_truncated_corpus_line(tmp_path):
    ds = copy_demo(tmp_path / "ds")
    lines = (ds / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[41] = lines[41][: len(lines[41]) // 2] + "\n"
    (ds / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "c.yaml").write_text("dataset: ds\nretrievers: {bm25: {type: bm25}}\n")
    one_line_error(harness("run", "--config", "c.yaml", cwd=tmp_path), "corpus.jsonl:42:", "invalid JSON")


def test_crashing_team_retriever_beside_bm25(tmp_path):
    (tmp_path / "team.py").write_text(
        textwrap.dedent("""
        class Crashy:
            def index(self, corpus):
                pass

            def search(self, queries, k):
                raise ValueError("index shard 3 unreachable")
    """)
    )
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""
        dataset: demo
        latency_queries: 2
        retrievers:
          bm25: {type: bm25}
          team: {type: python, class: "team:Crashy"}
    """)
    )
    proc = harness("run", "--config", "c.yaml", "--out", "out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "index shard 3 unreachable" in proc.stderr
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "bm25" in res["summary"] and res["summary"]["bm25"]["ndcg@10"] > 0.5
    assert "index shard 3 unreachable" in res["failures"]["team"]
    assert (tmp_path / "out" / "runs" / f"{run_stem('bm25')}.trec").is_file()
    assert "FAILED" in (tmp_path / "out" / "table.md").read_text()


# --------------------------------------------------------------------------- more bad inputs
@pytest.mark.parametrize(
    ("qrels", "run", "needles"),
    [
        ("q1 0 d1\n", RUN, ["q.txt:1:", "grade"]),
        (QRELS, "q1 Q0 d1 1\n", ["r.txt:1:", "6 columns"]),
        (QRELS, "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2\n", ["r.txt:2:"]),
        ("q1 0 d1 1\nq1 0 d1 2\n", RUN, ["q.txt:2:", "different grades"]),
        ("q1\td1\t1\nq1 0 d2 1\n", RUN, ["q.txt:2:", "3"]),
    ],
)
def test_malformed_lines(tmp_path, qrels, run, needles):
    (tmp_path / "q.txt").write_text(qrels)
    (tmp_path / "r.txt").write_text(run)
    one_line_error(harness("evaluate", "--qrels", "q.txt", "--run", "r.txt", cwd=tmp_path), *needles)


def test_binary_and_non_utf8_files(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.bin").write_bytes(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\xe9 2 0.4 t\n")
    one_line_error(harness("evaluate", "--qrels", "q.txt", "--run", "r.bin", cwd=tmp_path), "r.bin:2:", "UTF-8")


def test_directory_instead_of_file(tmp_path):
    (tmp_path / "r.txt").write_text(RUN)
    one_line_error(harness("evaluate", "--qrels", str(tmp_path), "--run", "r.txt", cwd=tmp_path), "directory")


@pytest.mark.parametrize(
    ("file", "mutate", "needles"),
    [
        (
            "queries.jsonl",
            lambda t: t.replace(t.splitlines()[0], json.dumps({"_id": "q01", "text": " "})),
            ["queries.jsonl:1:", "text"],
        ),
        ("corpus.jsonl", lambda t: t + t.splitlines()[0] + "\n", ["corpus.jsonl", "duplicate document id"]),
        ("queries.jsonl", lambda t: t + t.splitlines()[0] + "\n", ["queries.jsonl", "duplicate query id"]),
        ("corpus.jsonl", lambda t: t + '{"title": "no id", "text": "x"}\n', ["corpus.jsonl", "_id"]),
        ("corpus.jsonl", lambda t: t + '["not", "an", "object"]\n', ["corpus.jsonl", "JSON object"]),
        ("qrels/test.tsv", lambda t: t + "q01\td0001\thigh\n", ["test.tsv", "grade"]),
    ],
)
def test_bad_dataset_files(tmp_path, file, mutate, needles):
    ds = copy_demo(tmp_path / "ds")
    path = ds / file
    path.write_text(mutate(path.read_text(encoding="utf-8")), encoding="utf-8")
    (tmp_path / "c.yaml").write_text("dataset: ds\nretrievers: {bm25: {type: bm25}}\n")
    one_line_error(harness("run", "--config", "c.yaml", cwd=tmp_path), *needles)


def test_missing_split_lists_the_ones_there(tmp_path):
    copy_demo(tmp_path / "ds")
    (tmp_path / "c.yaml").write_text("dataset: {path: ds, split: dev}\nretrievers: {bm25: {type: bm25}}\n")
    one_line_error(harness("run", "--config", "c.yaml", cwd=tmp_path), "split 'dev'", "test")


def test_qrels_naming_unknown_queries_and_docs_are_warned_and_counted(tmp_path):
    ds = copy_demo(tmp_path / "ds")
    with (ds / "qrels" / "test.tsv").open("a") as fh:
        fh.write("ghost-query\td0001\t1\nq01\tghost-doc\t2\n")
    (tmp_path / "c.yaml").write_text("dataset: ds\nlatency_queries: 1\nretrievers: {bm25: {type: bm25}}\n")
    proc = harness("run", "--config", "c.yaml", "--out", "o", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 judged queries are not in queries.jsonl" in proc.stderr
    assert "1 judged documents are not in corpus.jsonl" in proc.stderr


def test_unsafe_yaml_is_refused(tmp_path):
    (tmp_path / "c.yaml").write_text("retrievers: !!python/object/apply:os.system ['echo pwned > pwned.txt']\n")
    one_line_error(harness("run", "--config", "c.yaml", cwd=tmp_path), "c.yaml:1:", "invalid YAML")
    assert not (tmp_path / "pwned.txt").exists()


def test_corrupt_results_file_for_report_and_check(tmp_path):
    (tmp_path / "results.json").write_text('{"summary": {"bm25": {"ndcg@10": 0.5}')
    one_line_error(harness("report", str(tmp_path)), "results.json", "not valid JSON")
    one_line_error(harness("check", "--baseline", str(tmp_path), "--current", str(tmp_path)), "results.json")


def test_not_a_results_file(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    one_line_error(harness("report", str(tmp_path / "x.json")), "x.json")


def test_debug_flag_shows_the_traceback(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    proc = harness("--debug", "evaluate", "--qrels", "q.txt", "--run", "nope.trec", cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


# --------------------------------------------------------------------------- nothing lost
def test_output_folder_with_foreign_files_is_refused(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.md").write_text("precious")
    (tmp_path / "c.yaml").write_text("dataset: demo\nretrievers: {bm25: {type: bm25}}\n")
    one_line_error(harness("run", "--config", "c.yaml", "--out", "mine", cwd=tmp_path), "not empty")
    assert (out / "notes.md").read_text() == "precious"


@pytest.mark.slow
def test_killed_run_leaves_previous_results_intact(tmp_path):
    (tmp_path / "slow.py").write_text(
        textwrap.dedent("""
        import pathlib, time

        class Slow:
            def index(self, corpus):
                pathlib.Path("indexed.flag").write_text("1")

            def search(self, queries, k):
                time.sleep(60)
                return {}
    """)
    )
    (tmp_path / "ok.yaml").write_text("dataset: demo\nlatency_queries: 2\nretrievers: {bm25: {type: bm25}}\n")
    (tmp_path / "slow.yaml").write_text(
        textwrap.dedent("""
        dataset: demo
        retrievers:
          bm25: {type: bm25}
          slow: {type: python, class: "slow:Slow"}
    """)
    )
    assert harness("run", "--config", "ok.yaml", "--out", "out", "--no-progress", cwd=tmp_path).returncode == 0
    before = (tmp_path / "out" / "results.json").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--config", "slow.yaml", "--out", "out", "--no-progress"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "indexed.flag").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert (tmp_path / "out" / "results.json").read_bytes() == before
    json.loads(before)
    leftovers = [p.name for p in (tmp_path / "out").rglob("*") if p.name.endswith(".tmp") and p.stat().st_size]
    assert not [n for n in leftovers if n == "results.json"]


# --------------------------------------------------------------------------- checked before work
@pytest.mark.parametrize(
    ("head", "needles"),
    [
        ("seed: -1\n", ["c.yaml:1:", "seed"]),
        ("stats: {bootstrap: 1.0e+12}\n", ["c.yaml:1:", "stats.bootstrap"]),
        ("depth: true\n", ["c.yaml:1:", "depth", "boolean"]),
        ("depth: 5\ndepth: 6\n", ["c.yaml:2:", "duplicate key 'depth' on lines 1 and 2"]),
    ],
)
def test_bad_config_values_exit_2_before_any_retriever_runs(tmp_path, head, needles):
    (tmp_path / "c.yaml").write_text(head + "dataset: demo\nretrievers:\n  bm25: {type: bm25}\n")
    proc = harness("run", "--config", "c.yaml", "--out", "o", "--no-progress", cwd=tmp_path)
    one_line_error(proc, *needles)
    assert not (tmp_path / "o").exists()


def test_long_retriever_name_exits_2(tmp_path):
    (tmp_path / "c.yaml").write_text(f"dataset: demo\nretrievers:\n  {'n' * 300}: {{type: bm25}}\n")
    one_line_error(harness("run", "--config", "c.yaml", "--out", "o", cwd=tmp_path), "at most 200 characters")


def test_lone_surrogate_in_corpus_exits_2_before_any_retriever_runs(tmp_path):
    data = copy_demo(tmp_path / "ds")
    with (data / "corpus.jsonl").open("a") as fh:
        fh.write(json.dumps({"_id": "bad", "text": "broken \ud800 text"}) + "\n")
    lines = (data / "corpus.jsonl").read_text().count("\n")
    (tmp_path / "c.yaml").write_text("dataset: ds\nretrievers:\n  bm25: {type: bm25}\n")
    proc = harness("run", "--config", "c.yaml", "--out", "o", "--no-progress", cwd=tmp_path)
    one_line_error(proc, f"corpus.jsonl:{lines}:", "text", "lone surrogate")
    assert not (tmp_path / "o" / "results.json").exists()
