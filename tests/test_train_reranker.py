"""``harness train-reranker``: the real training path on the demo dataset, with a tiny base model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.run import Run
from harness.training.reranker import TrainConfig, mine_examples, split_queries
from retrievers import rerank
from tests.conftest import build_tiny_bert


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-base"), head=False)


def test_split_is_seeded_disjoint_and_capped(demo_dataset):
    cfg = TrainConfig(dataset="demo", validation_fraction=0.25, max_queries=10, seed=3)
    train, val = split_queries(demo_dataset, cfg)
    again = split_queries(demo_dataset, cfg)
    assert [q.id for q in train] == [q.id for q in again[0]] and [q.id for q in val] == [q.id for q in again[1]]
    assert len(train) == 10 and not {q.id for q in train} & {q.id for q in val}
    other = split_queries(demo_dataset, cfg.model_copy(update={"seed": 4}))
    assert [q.id for q in other[1]] != [q.id for q in val]


def test_mined_groups_mix_hard_and_random_negatives(demo_dataset):
    cfg = TrainConfig(dataset="demo", negatives=4, hard_fraction=0.5, hard_depth=5)
    queries = demo_dataset.queries[:12]
    text = {d.id: d.content for d in demo_dataset.corpus}
    corpus_ids = list(text)
    hard = {q.id: corpus_ids[:8] for q in queries}  # a fake first stage: the same 8 docs for everyone
    candidates = Run.from_lists({q: [(d, 8.0 - i) for i, d in enumerate(ds)] for q, ds in hard.items()})
    groups = mine_examples(demo_dataset, queries, [candidates], cfg)
    n_pos = sum(1 for q in queries for d, g in demo_dataset.qrels[q.id].items() if g >= 1 and d in text)
    assert len(groups) == n_pos
    by_text = {v: k for k, v in text.items()}
    for group in groups:
        assert len(group) == 5 and group[0][2] == 1.0 and all(y == 0.0 for _, _, y in group[1:])
        qid = next(q.id for q in queries if q.text == group[0][0])
        relevant = {d for d, g in demo_dataset.qrels[qid].items() if g >= 1}
        negatives = [by_text[d] for _, d, _ in group[1:]]
        assert not relevant & set(negatives) and len(set(negatives)) == 4
        pool = set(corpus_ids[:5]) | {d for d, g in demo_dataset.qrels[qid].items() if g <= 0}
        assert sum(d in pool for d in negatives) >= 2  # the hard half
    assert mine_examples(demo_dataset, queries, [candidates], cfg) == groups  # seeded


@pytest.mark.slow
def test_train_reranker_cli_end_to_end(tiny_base, tmp_path, monkeypatch, capsys):
    """Default --out lands where the rerank stage looks; the folder loads; training.json says what happened."""
    from sentence_transformers import CrossEncoder

    monkeypatch.delenv(rerank.RERANKER_ENV, raising=False)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    args = ["train-reranker", "--dataset", "demo", "--split", "test", "--base", str(tiny_base), "--epochs", "2"]
    args += ["--max-queries", "12", "--negatives", "3", "--max-length", "64", "--validation-depth", "10"]
    assert main([*args, "--no-progress", "--first-stage", "hybrid"]) == 0
    out = tmp_path / "models" / "reranker"
    assert "reranker saved to" in capsys.readouterr().out
    assert rerank.default_reranker() == str(out)

    report = json.loads((out / "training.json").read_text())
    assert report["config"]["seed"] == 0 and report["config"]["base"] == str(tiny_base)
    assert report["queries"]["train"] == 12 and report["queries"]["validation"] > 0
    assert [e["epoch"] for e in report["epochs"]] == [1, 2]
    assert report["best_epoch"] in (1, 2)
    best = report["epochs"][report["best_epoch"] - 1]["validation"]
    assert best["best_ndcg@10"] == max(e["validation"]["best_ndcg@10"] for e in report["epochs"])
    assert report["recommended_interpolate"] == best["best_alpha"]
    assert report["validation_first_stage"]["name"] == "hybrid"
    assert set(report["timings"]) >= {"mining_seconds", "train_seconds", "validation_seconds", "total_seconds"}

    model = CrossEncoder(str(out))
    assert model.num_labels == 1 and model.max_seq_length == 64
    stage = rerank.Rerank(of="x", show_progress=False, cache_dir=tmp_path)  # model: the default reranker
    assert stage.location == str(out.resolve())


def test_bad_arguments_exit_2(capsys):
    assert main(["train-reranker", "--dataset", "demo", "--validation-fraction", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--validation-fraction" in err and len(err.strip().splitlines()) == 1
    assert main(["train-reranker", "--dataset", "/no/such/dataset", "--split", "train"]) == 2
