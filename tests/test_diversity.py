"""ild@k (intra-list diversity): the formula, the runner hook, and the CLI end to end."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.metrics.diversity import embedding_metrics, ild
from harness.run import Run

# ---------------------------------------------------------------- the formula


def test_ild_hand_cases():
    e1, e2 = [1.0, 0.0], [0.0, 1.0]
    assert ild(np.array([e1, e2])) == pytest.approx(1.0)  # orthogonal: distance 1
    assert ild(np.array([e1, e1])) == pytest.approx(0.0)  # duplicates: 0
    assert ild(np.array([e1, [-1.0, 0.0]])) == pytest.approx(2.0)  # opposite: 2
    # pairs (e1, e1) 0, (e1, e2) 1, (e1, e2) 1 -> mean 2/3
    assert ild(np.array([e1, e1, e2])) == pytest.approx(2 / 3)
    # 60 degrees apart: 1 - cos 60 = 0.5; length does not matter
    assert ild(np.array([[3.0, 0.0], [0.5, 0.5 * np.sqrt(3)]])) == pytest.approx(0.5)


def test_ild_fewer_than_two_documents_is_zero():
    assert ild(np.zeros((0, 4))) == 0.0
    assert ild(np.ones((1, 4))) == 0.0


def test_ild_zero_vector_has_cosine_zero():
    assert ild(np.array([[0.0, 0.0], [1.0, 0.0]])) == pytest.approx(1.0)


def test_ild_rejects_a_vector():
    with pytest.raises(ValueError, match="2-D"):
        ild(np.ones(3))


def slow_ild(e: np.ndarray) -> float:
    pairs = list(combinations(range(len(e)), 2))
    if not pairs:
        return 0.0
    dist = [1 - float(e[i] @ e[j]) / (np.linalg.norm(e[i]) * np.linalg.norm(e[j])) for i, j in pairs]
    return sum(dist) / len(dist)


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(0, 8), st.integers(1, 5)),
        elements=st.floats(-10, 10).filter(lambda x: abs(x) > 1e-3),
    )
)
def test_ild_matches_pairwise_loop_and_is_order_free(e):
    value = ild(e)
    assert value == pytest.approx(slow_ild(e), abs=1e-9)
    assert -1e-12 <= value <= 2 + 1e-12
    assert ild(e[::-1]) == pytest.approx(value, abs=1e-12)


# ---------------------------------------------------------------- embedding_metrics (embeddings from the caller)


@pytest.fixture(scope="module")
def encoder(cache_dir):
    from retrievers.encoder import Encoder

    return Encoder(None, cache_dir=cache_dir, show_progress=False)


@pytest.mark.slow
def test_embedding_metrics_with_the_packaged_model(tiny_dataset, encoder):
    """The real packaged model's corpus matrix, handed over as an engine does: per-query values aligned
    with query_ids, equal to ild over the same vectors, espresso documents closer than unrelated ones."""
    from harness.metrics.diversity import matrix_embeddings

    docs = {d.id: d for d in tiny_dataset.corpus}
    matrix = encoder.encode_documents(list(tiny_dataset.corpus))
    run = Run.from_lists(
        {"q2": [("d3", 3.0), ("d5", 2.0), ("d1", 1.0)], "q1": [("d1", 2.0), ("d6", 1.0)]},
        doc_ids=tiny_dataset.doc_ids,
    )
    qids = ["q1", "q2", "q3"]  # q3 is missing from the run
    embed = matrix_embeddings(matrix, tiny_dataset.doc_ids)
    out = embedding_metrics(run, ["ild@2", "ild@10"], qids, embed)
    assert set(out) == {"ild@2", "ild@10"} and all(v.shape == (3,) for v in out.values())

    def expected(ids):
        return ild(encoder.encode_documents([docs[d] for d in ids]))

    assert out["ild@10"][0] == pytest.approx(expected(["d1", "d6"]))
    assert out["ild@10"][1] == pytest.approx(expected(["d3", "d5", "d1"]))
    assert out["ild@2"][1] == pytest.approx(expected(["d3", "d5"]))
    assert out["ild@10"][2] == 0.0 and out["ild@2"][2] == 0.0
    # two espresso documents are closer than bike / plants / coffee
    assert out["ild@10"][0] < out["ild@10"][1]
    one = embedding_metrics(run, ["ild@1"], qids, embed)
    assert one["ild@1"].tolist() == [0.0, 0.0, 0.0]


def test_embedding_metrics_use_the_callers_embeddings():
    """Whatever model the caller configured is the one measured: hand-made vectors, hand-computed ILD;
    the callable is asked once, for the distinct documents of the top k only."""
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 0.0], "d": [-1.0, 0.0]}
    asked: list[list[str]] = []

    def embed(ids):
        asked.append(list(ids))
        return np.array([vectors[d] for d in ids])

    run = Run.from_lists({"q1": [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)], "q2": [("c", 1.0), ("a", 0.5)]})
    out = embedding_metrics(run, ["ild@2", "ild@3"], ["q2", "q1", "q0"], embed)
    # q1 top 2: a b -> 1; top 3: a b c -> (1 + 0 + 1) / 3; q2: c a -> 0; q0 missing -> 0
    assert out["ild@2"].tolist() == [0.0, 1.0, 0.0]
    assert out["ild@3"] == pytest.approx([0.0, 2 / 3, 0.0])
    assert len(asked) == 1 and sorted(asked[0]) == ["a", "b", "c"]  # d is below every cutoff


def test_embedding_metrics_leave_out_documents_without_embeddings(caplog):
    from harness.metrics.diversity import matrix_embeddings

    embed = matrix_embeddings(np.array([[1.0, 0.0], [0.0, 1.0]]), ["d1", "d3"])
    run = Run.from_lists({"q1": [("d1", 3.0), ("ghost", 2.0), ("d3", 1.0)]})
    out = embedding_metrics(run, ["ild@3"], ["q1"], embed)
    assert out["ild@3"][0] == pytest.approx(1.0)  # d1 and d3 only
    assert "no embedding" in caplog.text and "ghost" in caplog.text


def test_embedding_metrics_check_their_inputs():
    embed = lambda ids: np.zeros((len(ids), 2))  # noqa: E731
    with pytest.raises(ValueError, match="ndcg@10"):
        embedding_metrics(Run.from_dict({}), ["ild@10", "ndcg@10"], ["q1"], embed)
    with pytest.raises(TypeError, match="callable"):
        embedding_metrics(Run.from_dict({"q1": {"a": 1.0}}), ["ild@10"], ["q1"], np.zeros((1, 2)))
    run = Run.from_lists({"q1": [("a", 2.0), ("b", 1.0)]})
    with pytest.raises(ValueError, match="shape"):
        embedding_metrics(run, ["ild@10"], ["q1"], lambda ids: np.zeros((1, 2)))


def test_metrics_layer_builds_no_encoder():
    """ild takes embeddings from the caller: the metrics package imports no adapter."""
    import ast
    from pathlib import Path

    import harness.metrics

    for path in Path(harness.metrics.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(n.split(".")[0] == "retrievers" for n in names), (path.name, names)


# ---------------------------------------------------------------- the CLI


@pytest.fixture
def cli(capsys):
    """``harness`` in this process (the model stays loaded); restores the logger ``main`` reconfigures."""
    import logging

    from harness.cli import main

    logger = logging.getLogger("harness")
    saved = (logger.handlers[:], logger.level, logger.propagate)

    def call(*args: str) -> tuple[int, str, str]:
        rc = main(list(args))
        captured = capsys.readouterr()
        return rc, captured.out, captured.err

    yield call
    logger.handlers[:], logger.level, logger.propagate = saved


@pytest.mark.slow
def test_harness_run_reports_ild_next_to_ndcg(tmp_path, cli):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        """
dataset: demo
metrics: [ndcg@10, ild@10, recall@100]
latency_queries: 3
warmup_queries: 1
retrievers:
  bm25: {type: bm25}
  bm25_mmr: {type: mmr, of: bm25, lambda: 0.5, relevance: scores}
""",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    rc, stdout, stderr = cli("run", "--config", str(cfg), "--out", str(out), "--no-progress")
    assert rc == 0, stderr
    res = json.loads((out / "results.json").read_text())
    assert list(res["summary"]["bm25_mmr"]) == ["ndcg@10", "ild@10", "recall@100"]
    assert res["summary"]["bm25_mmr"]["ild@10"] > res["summary"]["bm25"]["ild@10"]
    # MMR only re-orders: the top 100 holds the same documents
    assert res["summary"]["bm25_mmr"]["recall@100"] == res["summary"]["bm25"]["recall@100"]
    assert "| ndcg@10 | ild@10 |" in (out / "table.md").read_text()
    assert "ild@10" in stdout


def test_harness_evaluate_explains_that_ild_needs_embeddings(tmp_path, cli):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\n", encoding="utf-8")
    rc, _, err = cli("evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "ndcg@10,ild@10")
    assert rc == 2
    assert err.startswith("error: ") and "ild@10 needs document embeddings" in err and "harness run" in err
    assert len(err.strip().splitlines()) == 1
