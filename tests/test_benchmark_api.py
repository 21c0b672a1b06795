"""``harness.benchmark``: the engine of ``harness run`` from a script, with the same numbers and the
same results folder; ``Results.table()`` and ``Results.to_dataframe()``."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pandas as pd
import pytest

import harness.results
from harness import Results, benchmark
from harness.cli import main as cli_main
from harness.datasets import demo_path
from harness.errors import InputError
from tests.conftest import OVERLAP_CODE

METRICS = ["ndcg@10", "mrr@10", "recall@20"]
FAST = {"latency_queries": 3, "warmup_queries": 1, "show_progress": False}


@pytest.fixture
def team(tmp_path: Path):
    """The team's module in a folder of its own, and an instance of its class."""
    name = f"overlap_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(OVERLAP_CODE)
    namespace: dict = {}
    exec(OVERLAP_CODE, namespace)
    return name, tmp_path, namespace["Overlap"]


def test_same_numbers_and_folder_as_harness_run(team, tmp_path: Path) -> None:
    name, folder, overlap = team
    config = folder / "compare.yaml"
    config.write_text(
        textwrap.dedent(f"""
        dataset: demo
        metrics: [{", ".join(METRICS)}]
        depth: 20
        baseline: bm25
        latency_queries: 3
        warmup_queries: 1
        stats: {{bootstrap: 200, permutations: 500}}
        retrievers:
          bm25: {{type: bm25}}
          mine: {{type: python, class: "{name}:Overlap", params: {{boost: 2.0}}}}
        """)
    )
    cli_out = tmp_path / "cli"
    assert cli_main(["run", "--config", str(config), "--out", str(cli_out), "--no-progress"]) == 0

    results = benchmark(
        "demo",
        {"bm25": {"type": "bm25"}, "mine": overlap(boost=2.0)},
        metrics=METRICS,
        depth=20,
        baseline="bm25",
        stats={"bootstrap": 200, "permutations": 500},
        latency_queries=3,
        warmup_queries=1,
        show_progress=False,
    )
    assert isinstance(results, Results) and Results is harness.results.Results
    api_out = results.save(tmp_path / "api")

    cli = json.loads((cli_out / "results.json").read_text())
    api = json.loads((api_out / "results.json").read_text())
    for key in ("summary", "per_query", "counts", "significance", "intervals", "failures"):
        assert cli[key] == api[key], key
    assert api["manifest"]["dataset"]["fingerprint"] == cli["manifest"]["dataset"]["fingerprint"]

    def listing(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    assert listing(api_out) == listing(cli_out)
    for name in ("bm25", "mine"):
        assert cli["run_files"][name]["file"] == api["run_files"][name]["file"]
        assert cli["run_files"][name]["sha256"] == api["run_files"][name]["sha256"]
    assert (api_out / "qrels.tsv").read_text() == (cli_out / "qrels.tsv").read_text()
    assert Results.load(api_out).summary == results.summary

    # `harness compare` on the stored run files: the same scorer, so the same numbers
    files = [str(cli_out / cli["run_files"][n]["file"]) for n in ("bm25", "mine")]
    cmp_out = tmp_path / "compare"
    argv = ["compare", *files, "--qrels", str(cli_out / "qrels.tsv"), "--metrics", ",".join(METRICS)]
    argv += ["--bootstrap", "200", "--permutations", "500", "--out", str(cmp_out)]
    assert cli_main(argv) == 0
    cmp = json.loads((cmp_out / "results.json").read_text())
    for key in ("summary", "per_query", "significance"):  # stored runs keep their retriever names
        assert cmp[key] == cli[key], key
    assert cmp["query_ids"] == cli["query_ids"]


def test_dataset_as_demo_path_or_object(demo_dataset) -> None:
    retrievers = {"bm25": {"type": "bm25"}}
    by_name = benchmark("demo", retrievers, metrics=METRICS, **FAST)
    by_path = benchmark(demo_path(), retrievers, metrics=METRICS, **FAST)
    by_object = benchmark(demo_dataset, retrievers, metrics=METRICS, **FAST)
    assert by_name.per_query == by_path.per_query == by_object.per_query


def test_table_and_dataframes(tiny_dataset) -> None:
    namespace: dict = {}
    exec(OVERLAP_CODE, namespace)
    results = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "mine": namespace["Overlap"]()},
        metrics=METRICS,
        baseline="bm25",
        stats={"bootstrap": 100, "permutations": 100},
        **FAST,
    )
    table = results.table()
    assert "| retriever |" in table and "bm25" in table and "mine" in table
    assert results.table("markdown") == table
    assert "mine" in results.table("csv")
    with pytest.raises(InputError, match="unknown table format 'pdf'"):
        results.table("pdf")

    summary = results.to_dataframe()
    assert summary.index.name == "retriever" and list(summary.index) == ["bm25", "mine"]
    assert [c for c in summary.columns if " " not in c] == METRICS
    assert summary.loc["mine", "ndcg@10 ci_low"] == results.intervals["mine"]["ndcg@10"][0]
    assert summary.loc["mine", "ndcg@10 p"] == results.significance["mine"]["ndcg@10"].p_holm
    assert summary.loc["mine", "ndcg@10"] == results.summary["mine"]["ndcg@10"]

    long = results.to_dataframe(per_query=True)
    assert list(long.columns) == ["retriever", "query_id", "metric", "value"]
    assert len(long) == 2 * len(tiny_dataset.queries) * len(METRICS)
    means = long.groupby(["retriever", "metric"])["value"].mean().unstack()
    pd.testing.assert_frame_equal(means[METRICS], summary[METRICS], check_names=False, check_exact=False, rtol=1e-12)
    wide = long.pivot_table(index="query_id", columns=["retriever", "metric"], values="value")
    assert wide.loc["q1", ("mine", "ndcg@10")] == results.query_scores("mine")["q1"]["ndcg@10"]


def test_empty_results_dataframes() -> None:
    assert Results().to_dataframe().empty
    assert list(Results().to_dataframe(per_query=True).columns) == ["retriever", "query_id", "metric", "value"]


def test_composed_spec_over_an_object(tiny_dataset) -> None:
    """A spec may build on an object by its name (the runner shares the object's run)."""
    pytest.importorskip("retrievers.hybrid")
    namespace: dict = {}
    exec(OVERLAP_CODE, namespace)
    results = benchmark(
        tiny_dataset,
        {"bm25": {"type": "bm25"}, "mine": namespace["Overlap"](), "both": {"type": "hybrid", "of": ["bm25", "mine"]}},
        metrics=METRICS,
        **FAST,
    )
    assert results.failures == {}
    assert results.manifest["retrievers"]["both"]["inputs"] == ["bm25", "mine"]


@pytest.mark.slow
def test_stage_spec_over_an_object_mmr(tiny_dataset) -> None:
    """MMR (a stage, packaged embedding model) re-orders the team's run."""
    namespace: dict = {}
    exec(OVERLAP_CODE, namespace)
    results = benchmark(
        tiny_dataset,
        {"mine": namespace["Overlap"](), "diverse": {"type": "mmr", "of": "mine", "lambda": 0.5}},
        metrics=METRICS,
        **FAST,
    )
    assert results.failures == {}, results.failures
    assert results.manifest["retrievers"]["diverse"]["inputs"] == ["mine"]
    assert {d for d, _ in results.runs["diverse"].ranking("q1")} == {d for d, _ in results.runs["mine"].ranking("q1")}
    assert results.efficiency["diverse"]["components"] == ["mine", "diverse"]


@pytest.mark.parametrize(
    "retrievers, kw, message",
    [
        ({}, {}, "at least one retriever"),
        ({"x": {"k1": 1}}, {}, "needs a 'type'"),
        ({"x": {"type": "no_such_type"}}, {}, "unknown retriever type 'no_such_type'"),
        ({"x": {"type": "bm25", "k1": -1}}, {}, "retrievers.x.k1"),
        ({"x": {"type": "bm25"}}, {"baseline": "y"}, "baseline 'y' is not one of the retrievers"),
        ({"x": {"type": "mmr", "of": "nobody"}}, {}, "builds on 'nobody'"),
    ],
)
def test_errors(tiny_dataset, retrievers, kw, message: str) -> None:
    with pytest.raises(InputError, match=message):
        benchmark(tiny_dataset, retrievers, metrics=METRICS, **FAST, **kw)


def test_class_instead_of_instance(tiny_dataset) -> None:
    namespace: dict = {}
    exec(OVERLAP_CODE, namespace)
    with pytest.raises(InputError, match=r"is the class Overlap; pass an instance \(Overlap\(...\)\)"):
        benchmark(tiny_dataset, {"mine": namespace["Overlap"]}, metrics=METRICS, **FAST)


def test_object_without_methods_fails_only_itself(tiny_dataset) -> None:
    results = benchmark(tiny_dataset, {"bm25": {"type": "bm25"}, "odd": object()}, metrics=METRICS, **FAST)
    assert "bm25" in results.summary
    assert "no index(corpus) and search(queries, k)" in results.failures["odd"]


def test_run_config_and_benchmark_resolve_the_same_config(tmp_path: Path, monkeypatch) -> None:
    """One validator and one set of defaults: the same run built as a config (``harness run``) and as
    a ``benchmark()`` call resolves to the same config, and the recorded configs are equal."""
    from harness.api import WIRING, benchmark_config, run_config
    from harness.config import parse_config
    from harness.engine import Session

    monkeypatch.chdir(tmp_path)
    options = {"metrics": METRICS, "baseline": "bm25", "depth": 20, "stats": {"bootstrap": 50, "permutations": 60}}
    specs = {
        "bm25": {"type": "bm25"},
        "fused": {"type": "hybrid", "of": ["bm25", "bm25_b"]},
        "bm25_b": {"type": "bm25"},
    }
    from_yaml = parse_config({"dataset": "demo", "retrievers": specs, **options}, config_dir=tmp_path)
    from_call, objects = benchmark_config("demo", specs, **options)
    assert objects == {}
    assert from_call == from_yaml  # every default (depth, permutations, latency_queries...) from one place
    assert from_call.latency_queries == 100 and from_call.stats.alpha == 0.05 and from_call.timeout_s is None

    a = Session.from_config(from_yaml, config_dir=tmp_path, **WIRING)
    b = Session.from_config(from_call, config_dir=tmp_path, dataset="demo", split="test", **WIRING)
    assert a.config_record == b.config_record
    assert a.settings == b.settings and a.stats == b.stats and a.graph.order == b.graph.order

    fast = {"latency_queries": 2, "warmup_queries": 0}
    by_config = run_config(
        parse_config({"dataset": "demo", "retrievers": specs, **options, **fast}), show_progress=False
    )
    by_call = benchmark("demo", specs, **options, **fast)
    assert by_config.manifest["config"] == by_call.manifest["config"]
    assert by_config.per_query == by_call.per_query
