"""``type: run_file``: a TREC run from another system scored in the same table, equal to trec_eval."""

from __future__ import annotations

import contextlib
import json
import textwrap
from pathlib import Path

import pytest

from harness import benchmark
from harness.api import run_config
from harness.cli import main as cli_main
from harness.config import load_config
from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.model import GoldenDataset, Query
from retrievers.run_file import RunFile
from tests.conftest import shared

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

TINY_RUN = """\
q1 Q0 d1 1 3.0 other
q1 Q0 d6 2 2.0 other
q1 Q0 d2 3 1.0 other
q1 Q0 d4 4 0.5 other
q2 Q0 d3 1 7.5 other
q9 Q0 d3 1 1.0 other
"""
METRICS = ["ndcg@10", "mrr@10", "recall@3", "map"]


def _run(dataset, retrievers, **kw):
    kw = {"metrics": METRICS, "depth": 10, "latency_queries": 2, "warmup_queries": 0, "show_progress": False} | kw
    return benchmark(dataset, retrievers, **kw)


def test_scores_like_evaluate_and_counts_missing_queries(tmp_path: Path, tiny_dataset) -> None:
    path = tmp_path / "other.trec"
    path.write_text(TINY_RUN)
    results = _run(tiny_dataset, {"other": {"type": "run_file", "path": str(path)}})
    assert results.failures == {}
    expected = evaluate_run(CompiledQrels(tiny_dataset.qrels), read_run(path), METRICS)
    assert results.summary["other"] == pytest.approx(expected.means(), abs=0, rel=0)
    assert results.query_scores("other") == expected.per_query()
    assert results.counts["other"]["missing_from_run"] == 1  # q3 is not in the file: it scores 0
    assert results.query_scores("other")["q3"]["ndcg@10"] == 0.0


def test_path_relative_to_config_and_cut_to_depth(tmp_path: Path, tiny_dataset) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "other.trec").write_text(TINY_RUN)
    config = tmp_path / "c.yaml"
    config.write_text(
        textwrap.dedent("""
        metrics: [ndcg@10, recall@3]
        depth: 2
        latency_queries: 1
        retrievers:
          other: {type: run_file, path: runs/other.trec}
        """)
    )
    results = run_config(load_config(config), config_dir=tmp_path, dataset=tiny_dataset, show_progress=False)
    assert results.failures == {}
    assert results.runs["other"].depth == 2
    assert results.manifest["retrievers"]["other"]["params"]["max_depth"] == 4


def test_unknown_doc_is_an_error_unless_allowed(tmp_path: Path, tiny_dataset) -> None:
    path = tmp_path / "other.trec"
    path.write_text(TINY_RUN + "q2 Q0 WSJ-0042 2 1.0 other\n")
    results = _run(
        tiny_dataset,
        {
            "strict": {"type": "run_file", "path": str(path)},
            "lenient": {"type": "run_file", "path": str(path), "allow_unknown_docs": True},
        },
    )
    error = results.failures["strict"]
    assert str(path) in error and "'WSJ-0042' (query 'q2') is not in the corpus" in error
    assert "allow_unknown_docs" in error
    assert "lenient" in results.summary


def test_missing_file_is_refused_before_any_work(tmp_path: Path, tiny_dataset) -> None:
    """benchmark() validates as ``harness run`` does (one validator): a run file that is not there
    is a clear error up front, not a failed row after the other retrievers ran."""
    from harness.errors import InputError

    with pytest.raises(InputError, match="run file not found") as e:
        _run(tiny_dataset, {"bm25": {"type": "bm25"}, "gone": {"type": "run_file", "path": str(tmp_path / "x")}})
    assert e.value.field == "retrievers.gone.path"


def test_file_gone_at_run_time_fails_that_retriever_only(tmp_path: Path) -> None:
    from harness.config import parse_config

    config = {"retrievers": {"bm25": {"type": "bm25"}, "gone": {"type": "run_file", "path": str(tmp_path / "x")}}}
    config |= {"metrics": METRICS, "depth": 10, "latency_queries": 2, "warmup_queries": 0}
    results = run_config(parse_config(config), show_progress=False)  # checked without its folder: no preflight
    assert "run file not found" in results.failures["gone"]
    assert "bm25" in results.summary


def test_search_returns_only_asked_queries(tmp_path: Path, tiny_dataset) -> None:
    path = tmp_path / "other.trec"
    path.write_text(TINY_RUN)
    rf = RunFile(path)
    rf.index(tiny_dataset.corpus)
    run = rf.search([Query(id="q2", text="?"), Query(id="q3", text="?")], 10)
    assert run.query_ids == ["q2"] and run.ranking("q2") == [("d3", 7.5)]
    assert run.doc_ids.tolist() == tiny_dataset.doc_ids


# ---------------------------------------------------------------------------- against trec_eval itself
TREC_NAMES = {"map": "map", "r_precision": "Rprec", "mrr": "recip_rank"}
KIND_NAMES = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "map": "map_cut", "hit_rate": "success"}
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_METRICS = [
    "map",
    "r_precision",
    "mrr",
    *(f"{kind}@{k}" for kind in ("precision", "recall", "ndcg", "map") for k in CUTS),
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
]


def trec_name(metric: str) -> str:
    if metric in TREC_NAMES:
        return TREC_NAMES[metric]
    kind, k = metric.split("@")
    return f"{KIND_NAMES[kind]}_{k}"


def trec_eval_output(path: Path) -> dict[str, dict[str, float]]:
    """``{query or 'all': {measure: value}}`` from trec_eval's stdout."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        measure, query, value = line.split()
        with contextlib.suppress(ValueError):  # runid, relstring
            out.setdefault(query, {})[measure] = float(value)
    return out


def judgments_only(qrels_path: Path) -> GoldenDataset:
    """No corpus, no query text: all a run file needs to be scored."""
    qrels = read_qrels(qrels_path)
    return GoldenDataset.build("trec_eval-tests", [], [Query(id=q, text=f"topic {q}") for q in qrels], qrels)


@pytest.mark.slow
@pytest.mark.parametrize(("run_name", "expected"), [("results.test", "out.test.aq"), ("results.trunc", "out.test.aqc")])
def test_run_file_equals_trec_eval(run_name: str, expected: str) -> None:
    folder = shared("trec_eval-tests") / "test"
    results = benchmark(
        judgments_only(folder / "qrels.test"),
        {"STANDARD": {"type": "run_file", "path": str(folder / run_name), "allow_unknown_docs": True}},
        metrics=TREC_METRICS,
        depth=1000,
        latency_queries=3,
        show_progress=False,
    )
    assert results.failures == {}
    reference = trec_eval_output(folder / expected)
    for metric in TREC_METRICS:
        # trec_eval prints 4 decimals
        assert results.summary["STANDARD"][metric] == pytest.approx(reference["all"][trec_name(metric)], abs=5e-5)
        for qid, values in results.query_scores("STANDARD").items():
            assert values[metric] == pytest.approx(reference[qid][trec_name(metric)], abs=5e-5), (qid, metric)


@pytest.mark.slow
def test_run_file_equals_pytrec_eval_exactly_through_a_config(tmp_path: Path) -> None:
    """The config route (a BEIR folder with an empty corpus) equals pytrec_eval to the last bit."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    folder = shared("trec_eval-tests") / "test"
    qrels = read_qrels(folder / "qrels.test")
    data = tmp_path / "judgments"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text("")
    (data / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"topic {q}"}) + "\n" for q in qrels))
    (data / "qrels" / "test.tsv").write_text((folder / "qrels.test").read_text())
    config = tmp_path / "trec.yaml"
    config.write_text(
        textwrap.dedent(f"""
        dataset: judgments
        metrics: [map, ndcg@10, precision@5, recall@100, mrr]
        depth: 1000
        latency_queries: 3
        retrievers:
          STANDARD: {{type: run_file, path: "{folder / "results.test"}", allow_unknown_docs: true}}
        """)
    )
    out = tmp_path / "out"
    assert cli_main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
    saved = json.loads((out / "results.json").read_text())
    run = read_run(folder / "results.test").to_dict()
    names = {
        "map": "map",
        "ndcg@10": "ndcg_cut_10",
        "precision@5": "P_5",
        "recall@100": "recall_100",
        "mrr": "recip_rank",
    }
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
    for metric, values in saved["per_query"]["STANDARD"].items():
        for qid, value in zip(saved["query_ids"], values):
            assert value == ref[qid][names[metric]], (qid, metric)
    assert (out / saved["run_files"]["STANDARD"]["file"]).is_file()
