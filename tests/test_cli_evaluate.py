"""``harness evaluate`` as a user runs it (a subprocess): formats, JSON shape, and one-line errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from harness import evaluate
from tests.conftest import run_harness

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

QRELS = "q1 0 d1 1\nq1 0 d2 2\nq1 0 d9 -1\nq2 0 d3 1\nq3 0 d4 0\n"
RUN_A = "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d2 3 0.5 a\nq3 Q0 d4 1 1.0 a\nq9 Q0 d1 1 1.0 a\n"
RUN_B = "# run b\nq1 Q0 d2 1 3 b\nq1 Q0 d1 2 3 b extra text\nq2 Q0 d3 1 0.5 b\n"


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_harness("evaluate", *args, cwd=cwd)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"qrels": tmp_path / "qrels.txt", "a": tmp_path / "bm25.trec", "b": tmp_path / "dense.run"}
    out["qrels"].write_text(QRELS)
    out["a"].write_text(RUN_A)
    out["b"].write_text(RUN_B)
    return out


def per_query_of_both(files: dict[str, Path], metrics: str, fmt: str) -> subprocess.CompletedProcess[str]:
    """``harness evaluate`` of both runs, per query, in ``fmt``."""
    q, a, b = files["qrels"], files["a"], files["b"]
    return cli("--qrels", q, "--run", a, "--run", b, "--metrics", metrics, "--format", fmt, "--per-query")


def test_json_shape_and_values(files):
    metrics = "ndcg@10,mrr,precision@1,recall@2,hit_rate@1,map,r_precision"
    r = per_query_of_both(files, metrics, "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = json.loads(r.stdout)
    assert list(out) == ["runs"] and list(out["runs"]) == ["bm25", "dense"]
    names = ["ndcg@10", "mrr", "precision@1", "recall@2", "hit_rate@1", "map", "r_precision"]
    a = out["runs"]["bm25"]
    assert set(a) == {"metrics", "per_query", "counts"}
    assert list(a["metrics"]) == names and list(a["per_query"]) == ["q1", "q2", "q3"]
    assert a["counts"] == {
        "queries": 3,
        "missing_from_run": 1,
        "not_in_qrels": 1,
        "no_relevant": 1,
        "duplicates_dropped": 1,
    }
    assert out["runs"]["dense"]["counts"]["missing_from_run"] == 1  # q3
    # the same numbers as the Python API on the same data
    qrels = {"q1": {"d1": 1, "d2": 2, "d9": -1}, "q2": {"d3": 1}, "q3": {"d4": 0}}
    run_b = {"q1": {"d2": 3.0, "d1": 3.0}, "q2": {"d3": 0.5}}
    assert out["runs"]["dense"]["metrics"] == evaluate(qrels, run_b, names)
    assert out["runs"]["dense"]["per_query"] == evaluate(qrels, run_b, names, per_query=True)
    assert a["per_query"]["q1"]["mrr"] == 1.0 and a["per_query"]["q1"]["precision@1"] == 1.0


def test_json_without_per_query(files):
    r = cli("--qrels", files["qrels"], "--run", files["a"], "--format", "json")
    out = json.loads(r.stdout)
    assert set(out["runs"]["bm25"]) == {"metrics", "counts"}
    assert list(out["runs"]["bm25"]["metrics"]) == [
        "ndcg@10",
        "mrr@10",
        "recall@100",
        "hit_rate@5",
        "precision@5",
        "map@100",
    ]


def test_csv_is_full_precision(files):
    r = per_query_of_both(files, "ndcg@10,mrr", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["run", "query", "ndcg@10", "mrr"]
    assert [row[:2] for row in rows[1:]] == [[n, q] for n in ("bm25", "dense") for q in ("all", "q1", "q2", "q3")]
    bm25_all = rows[1]
    assert float(bm25_all[3]) == pytest.approx((1 + 0 + 0) / 3, abs=0)  # repr: no rounding
    assert bm25_all[3] == repr(1 / 3)


def test_markdown(files):
    r = cli("--qrels", files["qrels"], "--run", files["a"], "--metrics", "mrr,map", "--format", "markdown")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "| run | query | mrr | map |"
    assert lines[1].startswith("|---|---|---:|")
    assert lines[2] == f"| bm25 | all | {1 / 3:.4f} | {(1 + 1) / 2 / 3:.4f} |"
    assert any("1 missing from the run" in line and "1 duplicate docs dropped" in line for line in lines)


def test_table_is_the_default(files):
    r = cli("--qrels", files["qrels"], "--run", files["b"], "--metrics", "mrr")
    assert r.returncode == 0, r.stderr
    assert "dense" in r.stdout and "mrr" in r.stdout and f"{2 / 3:.4f}" in r.stdout
    assert "3 judged queries" in r.stdout


def test_beir_qrels_and_colliding_run_names(tmp_path, files):
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t1\nq3\td4\t0\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "run.trec").write_text(RUN_A)
    (tmp_path / "y" / "run.trec").write_text(RUN_B)
    r = cli(
        "--qrels",
        beir,
        "--run",
        "x/run.trec",
        "--run",
        "y/run.trec",
        "--metrics",
        "mrr",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert list(runs) == ["x/run.trec", "y/run.trec"]
    assert runs["x/run.trec"]["metrics"]["mrr"] == pytest.approx(1 / 3)


# ----------------------------------------------------------------------------- errors: exit 2, one line, no traceback
BAD = {
    "non-integer grade": ("qrels", "q1 0 d1 1\nq1 0 d2 1.5\n", 2),
    "too few qrels columns": ("qrels", "q1 0 d1 1\nq1 d2\n", 2),
    "conflicting grades": ("qrels", "q1 0 d1 1\nq1 0 d1 0\n", 2),
    "non-UTF-8 qrels": ("qrels", b"q1 0 d1 1\nq1 0 d\xe92 1\n", 2),
    "NaN score": ("run", "q1 Q0 d1 1 1.0 a\nq1 Q0 d2 2 nan a\n", 2),
    "inf score": ("run", "q1 Q0 d1 1 inf a\n", 1),
    "too few run columns": ("run", "# header\nq1 Q0 d1 1 1.0\n", 2),
    "non-numeric score": ("run", "q1 Q0 d1 1 high a\n", 1),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_with_file_and_line(tmp_path, files, case):
    which, content, line = BAD[case]
    bad = tmp_path / ("bad_qrels.txt" if which == "qrels" else "bad.trec")
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    args = ["--qrels", bad if which == "qrels" else files["qrels"], "--run", bad if which == "run" else files["a"]]
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {bad}:{line}: "), lines[0]


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_missing_file(tmp_path, files, which):
    missing = tmp_path / "nope.txt"
    r = cli(
        "--qrels", missing if which == "qrels" else files["qrels"], "--run", missing if which == "run" else files["a"]
    )
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"error: {missing}: {which} file not found"]


def test_unknown_metric_lists_the_valid_ones(files):
    r = cli("--qrels", files["qrels"], "--run", files["a"], "--metrics", "ndcg@10,bogus@3")
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: ") and "'bogus@3'" in line
    for name in ("hit_rate", "mrr", "precision@k", "recall", "ndcg", "ndcg_exp", "map", "r_precision"):
        assert name in line


def test_embedding_metric_is_refused_in_one_line(files):
    r = cli("--qrels", files["qrels"], "--run", files["a"], "--metrics", "ild@10")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert "embeddings" in line


def test_usage_errors_exit_2(files):
    r = cli("--run", files["a"])
    assert r.returncode == 2 and "--qrels" in r.stderr
    r = cli("--qrels", files["qrels"], "--run", files["a"], "--format", "xml")
    assert r.returncode == 2 and "invalid choice" in r.stderr
