"""The examples of docs/own-retriever.md, run as a user runs them: the HTTP twin as its own process,
``harness run`` and the benchmark script as commands, in a copy of ``examples/``."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
DOC = REPO / "docs" / "own-retriever.md"
DEMO = REPO / "datasets" / "demo"
NAMES = ["bm25", "tfidf", "tfidf_http", "tfidf_run_file"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env(), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{args}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of examples/, as a user would have next to their own code."""
    root = tmp_path_factory.mktemp("own-retriever")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "examples"


@pytest.fixture(scope="module")
def service(workdir: Path) -> Iterator[str]:
    """``python serve_my_retriever.py --port 0``; the first line it prints is its URL."""
    proc = subprocess.Popen(
        [sys.executable, "serve_my_retriever.py", "--corpus", str(DEMO / "corpus.jsonl"), "--port", "0"],
        cwd=workdir,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()  # blocks until the server is listening (or died)
        assert line.startswith("http://127.0.0.1:"), f"server did not start: {line!r} {proc.stderr.read()}"
        yield line
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cli_results(workdir: Path, service: str) -> dict:
    config = workdir / "own_retriever.yaml"
    config.write_text(config.read_text().replace("http://127.0.0.1:8765/search", service))
    out = workdir.parent / "out-cli"
    run([sys.executable, "-m", "harness", "run", "--config", str(config), "--out", str(out), "--no-progress"], workdir)
    return json.loads((out / "results.json").read_text())


def test_examples_import_nothing_from_the_harness() -> None:
    for name in ("my_retriever.py", "serve_my_retriever.py"):
        tree = ast.parse((EXAMPLES / name).read_text())
        modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in modules if m.split(".")[0] in ("harness", "retrievers")], (name, modules)


def test_run_file_is_what_the_example_writes(workdir: Path) -> None:
    out = workdir.parent / "tfidf.trec"
    cmd = ["my_retriever.py", "--corpus", str(DEMO / "corpus.jsonl"), "--queries", str(DEMO / "queries.jsonl")]
    run([sys.executable, *cmd, "--k", "20", "--out", str(out)], workdir)
    assert out.read_text() == (EXAMPLES / "runs" / "tfidf.trec").read_text()


def test_class_http_twin_and_run_file_in_one_table(cli_results: dict) -> None:
    assert cli_results["failures"] == {}
    assert list(cli_results["summary"]) == NAMES
    per_query = cli_results["per_query"]
    assert per_query["tfidf"] == per_query["tfidf_http"] == per_query["tfidf_run_file"]
    assert per_query["tfidf"] != per_query["bm25"]
    assert cli_results["summary"]["tfidf"]["ndcg@10"] > 0.5


def test_benchmark_script_gives_the_same_numbers(workdir: Path, service: str, cli_results: dict) -> None:
    out = workdir.parent / "out-script"
    proc = run([sys.executable, "benchmark_script.py", "--url", service, "--out", str(out)], workdir)
    assert "| tfidf_http |" in proc.stdout and "lowest nDCG@10 queries" in proc.stdout
    script = json.loads((out / "results.json").read_text())
    for key in ("summary", "per_query", "counts", "significance", "intervals", "failures"):
        assert script[key] == cli_results[key], key


def test_doc_snippets_are_the_example_files() -> None:
    """Every code block of the doc that starts with ``# examples/NAME`` is a verbatim part of that file."""
    blocks = re.findall(r"```\w*\n(# (examples/\S+)\n.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 3
    for block, name in blocks:
        body = block.split("\n", 1)[1]
        assert body.strip() in (REPO / name).read_text(), f"docs/own-retriever.md drifted from {name}"


def test_doc_links_exist() -> None:
    for link in re.findall(r"\]\(\.\./([^)#]+)\)", DOC.read_text()):
        assert (REPO / link).exists(), link


# ---------------------------------------------------------------------- the README as written
def quick_start() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quick start", 1)[1].split("```", 2)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines()[1:] if line.strip()]


def test_readme_quick_start_runs_in_a_new_shell_after_the_setup_commands():
    lines = quick_start()
    # the commands live in .venv/bin: the block starts by putting them on PATH
    assert lines[0] == "source .venv/bin/activate", lines[0]
    subcommands = harness("--help").stdout
    for line in lines[1:]:
        words = line.split()
        assert words[0] == "harness", line
        assert words[1] in subcommands, line
        for flag in ("--config", "--qrels", "--run", "--baseline", "--current"):
            if flag in words:
                target = words[words.index(flag) + 1]
                assert (REPO / target).exists() or target.startswith("/tmp/"), f"{line}: {target} does not exist"
