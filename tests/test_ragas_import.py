"""RAGAS evaluation datasets in (harness.io.ragas, ``harness convert --golden-format ragas``): the
ragas #2816 example, RAGAS's CSV, and a RAGAS file made from the demo's judgments and a BM25 ranking
scored equal to pytrec_eval on the original."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path

import pytest

from harness.cli import main
from harness.io.trec import read_qrels, read_run
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

DEMO = Path(__file__).resolve().parents[1] / "datasets" / "demo"
SCIFACT = SHARED_DATA / "scifact"

#: ragas PR #2816's example: retrieved doc_1, doc_3, doc_7, doc_2, doc_9; doc_1 and doc_7 relevant
EXAMPLE = {
    "user_input": "What is the capital of France?",
    "retrieved_contexts": ["Paris is the capital.", "Lyon is a city.", "France's capital is Paris.", "Nice.", "Brest."],
    "retrieved_context_ids": ["doc_1", "doc_3", "doc_7", "doc_2", "doc_9"],
    "reference_context_ids": ["doc_1", "doc_7"],
    "response": "Paris",
    "reference": "Paris is the capital of France.",
}


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _evaluate(folder: Path, metrics: str) -> dict[str, dict[str, float]]:
    code, out, err = _cli(
        "evaluate",
        "--qrels",
        str(folder / "qrels" / "test.tsv"),
        "--run",
        str(folder / "runs" / "ragas.trec"),
        "--metrics",
        metrics,
        "--per-query",
        "--format",
        "json",
    )
    assert code == 0, err
    return json.loads(out)["runs"]["ragas"]["per_query"]


def test_the_2816_example_scores_trec_evals_ndcg(tmp_path: Path) -> None:
    (tmp_path / "ex.jsonl").write_text(json.dumps(EXAMPLE) + "\n" + json.dumps({"user_input": "no ids"}) + "\n")
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "ex.jsonl"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 0, err
    assert "1 samples without reference_context_ids left out" in err and err.count("\n") == 1
    got = _evaluate(tmp_path / "d", "ndcg@5")["q1"]["ndcg@5"]
    # DCG = 1/log2(2) + 1/log2(4) (ranks 1 and 3), IDCG = 1/log2(2) + 1/log2(3): trec_eval's formula
    assert got == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)), abs=1e-12)
    assert round(got, 4) == 0.9197  # the PR's example claims 0.9307
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ref = pytrec_eval.RelevanceEvaluator({"q1": {"doc_1": 1, "doc_7": 1}}, {"ndcg_cut_5"}).evaluate(
        {"q1": {d: 5.0 - i for i, d in enumerate(EXAMPLE["retrieved_context_ids"])}}
    )
    assert abs(ref["q1"]["ndcg_cut_5"] - got) <= 1e-12
    assert read_run(tmp_path / "d" / "runs" / "ragas.trec").ranking("q1")[0] == ("doc_1", 5.0)
    docs = [json.loads(line) for line in (tmp_path / "d" / "corpus.jsonl").read_text().splitlines()]
    assert [d["_id"] for d in docs] == EXAMPLE["retrieved_context_ids"]
    queries = [json.loads(line) for line in (tmp_path / "d" / "queries.jsonl").read_text().splitlines()]
    assert queries == [
        {
            "_id": "q1",
            "text": EXAMPLE["user_input"],
            "metadata": {"response": "Paris", "reference": EXAMPLE["reference"]},
        }
    ]


def _ragas_csv(path: Path, samples: list[dict]) -> None:
    """As ``EvaluationDataset.to_csv`` writes: csv.DictWriter, list cells as Python's str(list)."""
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(samples[0]))
        w.writeheader()
        for s in samples:
            w.writerow(s)


def test_csv_with_integer_ids(tmp_path: Path) -> None:
    sample = {**EXAMPLE, "retrieved_context_ids": [1, 3, 7, 2, 9], "reference_context_ids": [1, 7]}
    _ragas_csv(tmp_path / "ex.csv", [sample, {**sample, "reference_context_ids": []}])
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "ex.csv"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 0, err
    assert read_qrels(tmp_path / "d" / "qrels" / "test.tsv") == {"q1": {"1": 1, "7": 1}}
    assert round(_evaluate(tmp_path / "d", "ndcg@5")["q1"]["ndcg@5"], 4) == 0.9197
    # nothing is overwritten: the same folder again stops
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "ex.csv"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 2 and "ragas.trec: already exists" in err


def test_bad_cells_are_located(tmp_path: Path) -> None:
    _ragas_csv(tmp_path / "bad.csv", [EXAMPLE, {**EXAMPLE, "reference_context_ids": "doc_1, doc_7"}])
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "bad.csv"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 2 and "bad.csv:3: reference_context_ids: expected a list" in err
    (tmp_path / "bad.jsonl").write_text(json.dumps({**EXAMPLE, "retrieved_contexts": ["only one"]}) + "\n")
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "bad.jsonl"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 2 and "bad.jsonl:1: retrieved_contexts: 1 texts for the 5 ids" in err
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "x"}) + "\n")
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / "q.jsonl"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 2 and "no user_input" in err
    assert not (tmp_path / "d").exists()


def through_ragas(tmp_path: Path, dataset: Path, fmt: str, depth: int = 20) -> int:
    """``dataset``'s judgments (relevant: grade >= 1) and a BM25 top ``depth`` as a RAGAS file, converted:
    every query's metrics from the converted folder equal pytrec_eval's on the original qrels
    (binarised) and run, to 1e-12. Returns the number of queries compared."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    (tmp_path / "c.yaml").write_text(
        f"dataset: {{path: {json.dumps(str(dataset))}}}\nlatency_queries: 1\nwarmup_queries: 0\ndepth: {depth}\n"
        "retrievers:\n  bm25: {type: bm25}\n"
    )
    code, _, err = _cli("run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 0, err
    run = read_run(next((tmp_path / "r" / "runs").glob("bm25-*.trec")))
    qrels = read_qrels(dataset / "qrels" / "test.tsv")
    texts = {
        json.loads(line)["_id"]: json.loads(line)["text"]
        for line in (dataset / "queries.jsonl").read_text().splitlines()
    }
    relevant = {q: {d: 1 for d, g in j.items() if g >= 1} for q, j in qrels.items()}
    relevant = {q: j for q, j in relevant.items() if j}
    order = list(relevant)
    samples = [
        {
            "user_input": texts[q],
            "retrieved_context_ids": [d for d, _ in run.ranking(q)],
            "reference_context_ids": list(relevant[q]),
        }
        for q in order
    ]
    if fmt == "jsonl":
        (tmp_path / "set.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples))
    else:
        _ragas_csv(tmp_path / "set.csv", samples)
    code, _, err = _cli(
        "convert", "--golden", str(tmp_path / f"set.{fmt}"), "--golden-format", "ragas", "--out", str(tmp_path / "d")
    )
    assert code == 0, err
    ours = _evaluate(tmp_path / "d", "ndcg@10,map,recall@10,precision@5,mrr")
    measures = {
        "ndcg@10": "ndcg_cut_10",
        "map": "map",
        "recall@10": "recall_10",
        "precision@5": "P_5",
        "mrr": "recip_rank",
    }
    ref = pytrec_eval.RelevanceEvaluator(relevant, set(measures.values())).evaluate(
        {q: dict(run.ranking(q)) for q in run.query_ids if q in relevant}
    )
    assert len(ours) == len(relevant)
    for i, q in enumerate(order):
        for ours_name, theirs in measures.items():
            assert abs(ours[f"q{i + 1}"][ours_name] - ref[q][theirs]) <= 1e-12, (q, ours_name)
    return len(ours)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_beir_set_through_ragas_scores_as_pytrec_eval_on_the_original(tmp_path: Path, fmt: str) -> None:
    assert through_ragas(tmp_path, DEMO, fmt) > 50


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason="needs ../shared/data/scifact")
def test_scifact_through_ragas_scores_as_pytrec_eval_on_the_original(tmp_path: Path) -> None:
    """SciFact's 300 test queries, a BM25 top 100 over its 5,183 abstracts."""
    assert through_ragas(tmp_path, SCIFACT, "jsonl", depth=100) == 300
