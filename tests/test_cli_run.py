"""`harness run` end to end through the console entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import DatasetConfig
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import evaluate_run
from tests.conftest import bm25_config, copy_demo
from tests.conftest import run_harness as harness

pytestmark = pytest.mark.slow


def write_config(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "bench.yaml"
    p.write_text(body, encoding="utf-8")
    return p


def test_run_writes_a_self_contained_results_folder(tmp_path):
    cfg = write_config(
        tmp_path,
        """
dataset: demo
metrics: [ndcg@10, mrr@10, recall@100, map]
baseline: bm25
latency_queries: 5
retrievers:
  bm25: {type: bm25}
  bm25_rank: {type: bm25, backend: rank_bm25}
""",
    )
    out = tmp_path / "out"
    proc = harness("run", "--config", str(cfg), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    res = json.loads((out / "results.json").read_text())
    assert {"manifest", "summary", "per_query", "efficiency", "significance", "counts"} <= set(res)
    man = res["manifest"]
    assert man["dataset"]["fingerprint"].startswith("sha256:")
    assert man["config"]["retrievers"]["bm25"]["k1"] == 0.9
    assert man["versions"]["bm25s"] and man["git"] and man["machine"]["cpu_count"]
    assert (out / "table.md").is_file()
    # the folder re-scores on its own: saved runs + qrels.tsv reproduce the summary exactly
    qrels = read_qrels(out / "qrels.tsv")
    for name in ("bm25", "bm25_rank"):
        run = read_run(out / res["run_files"][name]["file"])
        assert evaluate_run(qrels, run, res["summary"][name]).means() == res["summary"][name]


def test_flags_override_the_config(tmp_path):
    cfg = write_config(tmp_path, "dataset: {path: nowhere, split: nope}\nretrievers: {bm25: {type: bm25}}\n")
    out = tmp_path / "o"
    proc = harness(
        "run", "--config", str(cfg), "--dataset", "demo", "--split", "test", "--out", str(out), "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "results.json").read_text())["manifest"]["dataset"]["name"] == "demo"


def test_default_out_folder_is_under_results(tmp_path):
    cfg = write_config(tmp_path, "dataset: demo\nlatency_queries: 2\nretrievers: {bm25: {type: bm25}}\n")
    proc = harness("run", "--config", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders = list((tmp_path / "results").iterdir())
    assert len(folders) == 1 and folders[0].name.endswith("-demo")
    assert (folders[0] / "results.json").is_file()


def test_refuses_to_write_into_a_foreign_folder(tmp_path):
    cfg = write_config(tmp_path, "dataset: demo\nretrievers: {bm25: {type: bm25}}\n")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious")
    proc = harness("run", "--config", str(cfg), "--out", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "not empty" in proc.stderr
    assert (out / "notes.txt").read_text() == "precious"


def test_bad_config_is_one_line_exit_2(tmp_path):
    cfg = write_config(tmp_path, "retrievers:\n  bm25: {type: bm25, k1: lots}\n")
    proc = harness("run", "--config", str(cfg))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "bench.yaml:2: retrievers.bm25.k1" in proc.stderr


# ---------------------------------------------------------------------- warnings at the end; --strict
def demo_with_a_missing_judged_doc(tmp_path: Path) -> Path:
    folder = copy_demo(tmp_path / "demo-plus")
    with (folder / "qrels" / "test.tsv").open("a", encoding="utf-8") as f:
        f.write("q01\tnot-in-corpus\t1\n")
    return folder


@pytest.mark.slow
def test_data_warnings_are_repeated_after_the_table_and_strict_makes_them_errors(tmp_path):
    cfg = bm25_config(tmp_path, str(demo_with_a_missing_judged_doc(tmp_path)))
    proc = harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    tail = proc.stderr.strip().splitlines()[-2:]
    assert tail[0].startswith("1 warning") and "--strict" in tail[0]
    assert "1 judged documents are not in corpus.jsonl" in tail[1]
    strict = harness("run", "--config", str(cfg), "--out", str(tmp_path / "strict"), "--no-progress", "--strict")
    assert strict.returncode == 2
    assert strict.stderr.startswith("error: ") and "(an error under --strict)" in strict.stderr
    assert strict.stderr.count("\n") == 1 and not (tmp_path / "strict" / "results.json").exists()


# ---------------------------------------------------------------------- default folder names
def test_a_corpus_golden_dataset_names_its_folder_after_the_golden_file():
    assert DatasetConfig(corpus="docs/", golden="support/questions.csv").label == "questions"
    assert DatasetConfig(corpus="docs/", golden="q.jsonl", name="support").label == "support"
    assert DatasetConfig(path="../data/scifact").label == "scifact"
    assert DatasetConfig().label == "demo"


@pytest.mark.slow
def test_default_out_folder_of_a_golden_set_is_not_called_demo(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Espresso needs a fine grind.", encoding="utf-8")
    (docs / "b.md").write_text("Cold brew steeps for twelve hours.", encoding="utf-8")
    rows = "question,relevant_ids\nhow fine for espresso,a.md\nhow long cold brew,b.md\n"
    (tmp_path / "support.csv").write_text(rows, encoding="utf-8")
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        "dataset: {corpus: docs, golden: support.csv}\nmetrics: [ndcg@10]\nlatency_queries: 1\n"
        "warmup_queries: 0\nretrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    proc = harness("run", "--config", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    made = [p.name for p in (tmp_path / "results").iterdir()]
    assert len(made) == 1 and made[0].endswith("-support") and "demo" not in made[0], made
