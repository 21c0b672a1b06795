"""``type: python``: a team's class or function by import path, and the checks on what it returns."""

from __future__ import annotations

import math
import re
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from harness import benchmark
from harness.api import run_config
from harness.config import load_config
from harness.errors import InputError
from harness.registry import BuildContext
from harness.run import Run
from retrievers.custom import FunctionRetriever, PythonSpec
from tests.conftest import OVERLAP_CODE, Canned

TEAM_CODE = (
    OVERLAP_CODE
    + """

def search(queries, k):
    return {q.id: [("d1", 1.0), ("d3", 0.5)][:k] for q in queries}


class NoSearch:
    def index(self, corpus):
        pass


NOT_CALLABLE = 3
"""
)


@pytest.fixture
def team_module(tmp_path: Path) -> tuple[str, Path]:
    """A module with a unique name (imports are cached per process) in a folder of its own."""
    name = f"team_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TEAM_CODE)
    return name, tmp_path


def ctx(folder: Path, cache_dir: Path) -> BuildContext:
    return BuildContext(cache_dir=cache_dir, config_dir=folder, show_progress=False)


def test_spec_alias_class_and_dump() -> None:
    spec = PythonSpec.model_validate({"type": "python", "class": "pkg.mod:Cls", "params": {"a": 1}})
    assert spec.class_ == "pkg.mod:Cls"
    dumped = spec.model_dump(mode="json")
    assert dumped["class"] == "pkg.mod:Cls" and "class_" not in dumped


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"type": "python"}, "exactly one of 'class'"),
        ({"type": "python", "class": "a:B", "function": "a:f"}, "exactly one of 'class'"),
        ({"type": "python", "class": "no_colon"}, "package.module:Name"),
        ({"type": "python", "function": "a:f", "params": {"x": 1}}, "'params' goes with 'class'"),
        ({"type": "python", "class": "a:B", "surprise": 1}, "Extra inputs"),
    ],
)
def test_spec_errors(raw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PythonSpec.model_validate(raw)


def test_builds_class_from_config_folder_and_restores_sys_path(team_module, cache_dir) -> None:
    name, folder = team_module
    before = list(sys.path)
    obj = PythonSpec.model_validate({"type": "python", "class": f"{name}:Overlap", "params": {"boost": 2.0}}).build(
        ctx(folder, cache_dir)
    )
    assert type(obj.inner).__name__ == "Overlap" and obj.boost == 2.0
    assert sys.path == before


def test_builds_from_pythonpath(team_module, cache_dir, tmp_path_factory, monkeypatch) -> None:
    name, folder = team_module
    monkeypatch.syspath_prepend(str(folder))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    obj = PythonSpec.model_validate({"type": "python", "class": f"{name}:Overlap"}).build(ctx(elsewhere, cache_dir))
    assert obj.boost == 1.0


def test_function(team_module, cache_dir, tiny_dataset) -> None:
    name, folder = team_module
    obj = PythonSpec.model_validate({"type": "python", "function": f"{name}:search"}).build(ctx(folder, cache_dir))
    assert isinstance(obj.inner, FunctionRetriever)
    assert obj.search(tiny_dataset.queries[:1], 1) == {"q1": [("d1", 1.0)]}
    assert obj.params()["function"] == f"{name}:search"


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"class": "surely_not_a_module_xyz:Cls"}, "no module named 'surely_not_a_module_xyz' in the config's folder"),
        ({"class": "{mod}:Missing"}, "has no attribute 'Missing' .*Overlap"),
        ({"class": "{mod}:NoSearch"}, "without search\\(\\)"),
        ({"class": "{mod}:NOT_CALLABLE"}, "not a class"),
        ({"class": "{mod}:Overlap", "params": {"nope": 1}}, "unexpected keyword argument 'nope'.*signature"),
        ({"function": "{mod}:NOT_CALLABLE"}, "not a function"),
    ],
)
def test_build_errors(team_module, cache_dir, raw: dict, message: str) -> None:
    name, folder = team_module
    raw = {"type": "python", **{k: v.format(mod=name) if isinstance(v, str) else v for k, v in raw.items()}}
    with pytest.raises(InputError, match=message):
        PythonSpec.model_validate(raw).build(ctx(folder, cache_dir))


def test_missing_dependency_and_broken_module(tmp_path, cache_dir) -> None:
    dep = f"needs_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{dep}.py").write_text("import surely_not_installed_abc\n")
    broken = f"broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{broken}.py").write_text("raise RuntimeError('boom at import')\n")
    with pytest.raises(InputError, match="needs 'surely_not_installed_abc', which is not installed"):
        PythonSpec.model_validate({"type": "python", "class": f"{dep}:X"}).build(ctx(tmp_path, cache_dir))
    with pytest.raises(InputError, match="RuntimeError: boom at import"):
        PythonSpec.model_validate({"type": "python", "class": f"{broken}:X"}).build(ctx(tmp_path, cache_dir))


def test_config_with_class_and_function_scores_like_the_object(team_module, tiny_dataset) -> None:
    name, folder = team_module
    config_file = folder / "bench.yaml"
    config_file.write_text(
        textwrap.dedent(f"""
        dataset: demo
        metrics: [ndcg@10, mrr@10]
        depth: 10
        latency_queries: 2
        warmup_queries: 0
        retrievers:
          mine: {{type: python, class: "{name}:Overlap", params: {{boost: 1.0}}}}
          fn: {{type: python, function: "{name}:search"}}
        """)
    )
    results = run_config(load_config(config_file), config_dir=folder, dataset=tiny_dataset, show_progress=False)
    assert results.failures == {}
    sys.path.insert(0, str(folder))
    try:
        overlap = __import__(name).Overlap()
    finally:
        sys.path.remove(str(folder))
    direct = benchmark(
        tiny_dataset, {"mine": overlap}, metrics=["ndcg@10", "mrr@10"], depth=10, latency_queries=2, show_progress=False
    )
    assert results.per_query["mine"] == direct.per_query["mine"]
    assert results.manifest["retrievers"]["mine"]["spec"]["class"] == f"{name}:Overlap"


# ---------------------------------------------------------------------------- validation of what comes back
def returns(make) -> Canned:
    """A retriever whose search returns ``make(queries)`` (the value may depend on the queries asked)."""
    return Canned(lambda queries, k: make(queries))


def _fails_with(tiny_dataset, obj, pattern: str) -> None:
    results = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "team": obj},
        metrics=["ndcg@10"],
        depth=10,
        latency_queries=1,
        warmup_queries=0,
        show_progress=False,
    )
    assert "bm25" in results.summary, "a failing team retriever must not take the others down"
    assert "team" in results.failures, results.summary
    error = results.failures["team"]
    assert "'team'" in error
    assert re.search(pattern, error), error


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda qs: {q.id: [("d1", math.nan)] for q in qs}, r"query 'q\d', doc 'd1': score is nan"),
        (lambda qs: {q.id: [("d1", 1.0), ("d99", 0.5)] for q in qs}, r"query 'q\d': unknown doc id 'd99'"),
        (lambda qs: {q.id: ["d1", "d2"] for q in qs}, r"query 'q\d', item 0: expected a \(doc_id, score\) pair"),
        (lambda qs: {q.id: [("d1", 1.0, "extra")] for q in qs}, r"query 'q\d', item 0: expected a \(doc_id, score\)"),
        (lambda qs: {q.id: [{"id": "d1", "score": 1}] for q in qs}, r"item 0: expected a \(doc_id, score\) pair"),
        (lambda qs: {q.id: "d1" for q in qs}, r"query 'q\d': expected a list of \(doc_id, score\) pairs"),
        (lambda qs: {q.id: [("d1", "high")] for q in qs}, r"doc 'd1': score 'high' is not a number"),
        (lambda qs: [[("d1", 1.0)] for _ in qs], r"returned list; expected a Run or a mapping"),
        (lambda qs: None, r"search\(\) returned None"),
        (lambda qs: {"q-not-asked": [("d1", 1.0)]}, r"query 'q-not-asked', which was not asked"),
        (
            lambda qs: Run.from_lists({q.id: [("zz", 1.0)] for q in qs}),
            r"query 'q\d': unknown doc id 'zz'",
        ),
    ],
)
def test_bad_output_is_a_clear_local_failure(tiny_dataset, make, pattern: str) -> None:
    _fails_with(tiny_dataset, returns(make), pattern)


def test_good_output_shapes(tiny_dataset) -> None:
    """Run, {q: [(d, s)]}, {q: {d: s}}, generators and numpy scalars all score the same."""
    import numpy as np

    ranking = [("d1", 3.0), ("d6", 2.0), ("d4", 1.0)]
    shapes = {
        "pairs": returns(lambda qs: {q.id: ranking for q in qs}),
        "dict": returns(lambda qs: {q.id: dict(ranking) for q in qs}),
        "generator": returns(lambda qs: {q.id: (p for p in ranking) for q in qs}),
        "numpy": returns(lambda qs: {q.id: [(d, np.float32(s)) for d, s in ranking] for q in qs}),
        "run": returns(lambda qs: Run.from_lists({q.id: ranking for q in qs})),
        "function": lambda qs, k: {q.id: ranking[:k] for q in qs},
    }
    results = benchmark(tiny_dataset, shapes, metrics=["ndcg@10"], depth=10, latency_queries=1, show_progress=False)
    assert results.failures == {}
    values = {name: results.per_query[name] for name in shapes}
    assert all(v == values["pairs"] for v in values.values())
    assert results.manifest["retrievers"]["function"]["spec"]["function"].endswith("<lambda>")


def test_unknown_docs_allowed_when_asked(tiny_dataset) -> None:
    obj = returns(lambda qs: {q.id: [("d1", 1.0), ("elsewhere", 0.5)] for q in qs})
    obj.allow_unknown_docs = True
    results = benchmark(tiny_dataset, {"team": obj}, metrics=["ndcg@10"], latency_queries=1, show_progress=False)
    assert results.failures == {}
