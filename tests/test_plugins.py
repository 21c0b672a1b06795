"""Plugins: a package registers retriever types under the entry-point group
``retrieval_harness.retrievers``; configs can use them and ``harness retrievers`` lists them.

The "installed package" is a real ``*.dist-info`` folder with ``entry_points.txt`` on ``sys.path``,
found by ``importlib.metadata`` exactly as pip-installed plugins are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import benchmark
from harness.cli import main as cli_main
from harness.errors import InputError
from harness.registry import ENTRY_POINT_GROUP, _entry_points, available_types, spec_class

REPO = Path(__file__).resolve().parent.parent

PLUGIN_MODULE = '''
"""A plugin module."""
from typing import Literal

from harness.registry import SpecBase


class ConstantSpec(SpecBase):
    """Always ranks the same documents (a plugin for tests).

    Second line, not shown in listings.
    """

    type: Literal["constant"] = "constant"
    docs: list[str] = ["d1"]

    def build(self, ctx):
        return Constant(self.docs)


class Constant:
    def __init__(self, docs):
        self.docs = docs

    def index(self, corpus):
        pass

    def search(self, queries, k):
        return {q.id: [(d, float(len(self.docs) - i)) for i, d in enumerate(self.docs[:k])] for q in queries}
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """An installed distribution ``harness-constant-plugin`` declaring three types."""
    module = f"constant_plugin_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(PLUGIN_MODULE)
    dist = tmp_path / "harness_constant_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-constant-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(f"""
        [{ENTRY_POINT_GROUP}]
        constant = {module}:ConstantSpec
        broken = {module}_missing:Spec
        bm25 = {module}:ConstantSpec
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _entry_points.cache_clear()
    yield tmp_path, module
    _entry_points.cache_clear()


def test_registry_finds_plugin_types(plugin) -> None:
    _, module = plugin
    types = available_types()
    assert types["constant"] == f"{module}:ConstantSpec"
    assert types["bm25"] == "retrievers.bm25:BM25Spec", "built-ins win over a plugin of the same name"
    assert spec_class("constant").__name__ == "ConstantSpec"
    with pytest.raises(InputError, match=r"'broken' needs .*_missing"):
        spec_class("broken")


def test_plugin_type_in_a_benchmark(plugin, tiny_dataset) -> None:
    results = benchmark(
        tiny_dataset,
        {"c": {"type": "constant", "docs": ["d1", "d6"]}},
        metrics=["ndcg@10"],
        latency_queries=1,
        show_progress=False,
    )
    assert results.failures == {}
    assert results.runs["c"].ranking("q1") == [("d1", 2.0), ("d6", 1.0)]


def test_harness_retrievers_lists_plugin(plugin, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["retrievers", "--format", "json"]) == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    _, module = plugin
    assert listed["constant"] == {
        "name": "constant",
        "target": f"{module}:ConstantSpec",
        "source": "plugin harness-constant-plugin",
        "description": "Always ranks the same documents (a plugin for tests).",
        "ok": True,
        "extra": "plugin",  # a plugin's own package brings what it needs (harness.extras maps the built-ins)
    }
    assert listed["broken"]["ok"] is False and "not available" in listed["broken"]["description"]
    for name in ("bm25", "dense", "python", "http", "run_file"):
        assert listed[name]["source"] == "built-in" and listed[name]["ok"], listed[name]
    assert listed["bm25"]["target"] == "retrievers.bm25:BM25Spec"
    assert listed["python"]["description"].startswith("Your own Python class")


def test_harness_retrievers_command_line(plugin) -> None:
    """As a user runs it: a fresh process that sees the plugin through PYTHONPATH."""
    folder, _ = plugin
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "retrievers"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any("constant" in line and "plugin" in line for line in lines), proc.stdout
    assert any(line.lstrip("│ ").startswith("run_file") for line in lines), proc.stdout
    assert "shadowed by the built-in" in proc.stderr
