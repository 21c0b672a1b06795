"""The ``mmr`` stage: its config spec, its output ordering, and MMR in a real pipeline."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from pydantic import ValidationError

from harness.config import parse_config
from harness.errors import InputError
from harness.mmr import mmr_order
from harness.run import Run
from retrievers.mmr import MMR, MMRSpec, minmax

# ---------------------------------------------------------------- spec (no model needed)


def test_spec_reads_lambda_and_dumps_it_under_that_name():
    spec = MMRSpec.model_validate({"type": "mmr", "of": "dense", "lambda": 0.5})
    assert spec.lambda_ == 0.5 and spec.top_n == 100 and spec.relevance == "embedding"
    assert spec.inputs() == ["dense"]
    dumped = spec.model_dump(mode="json")
    assert dumped["lambda"] == 0.5 and "lambda_" not in dumped
    assert MMRSpec.model_validate(dumped) == spec
    assert MMRSpec.model_validate({"type": "mmr", "of": "bm25"}).lambda_ == 0.7


@pytest.mark.parametrize(
    ("extra", "loc"),
    [
        ({"lambda": 1.5}, "lambda"),
        ({"top_n": 0}, "top_n"),
        ({"relevance": "bm25"}, "relevance"),
        ({"lamda": 1}, "lamda"),
    ],
)
def test_spec_rejects_bad_values(extra, loc):
    with pytest.raises(ValidationError) as info:
        MMRSpec.model_validate({"type": "mmr", "of": "dense", **extra})
    assert info.value.errors()[0]["loc"] == (loc,)


def test_config_error_names_the_key():
    with pytest.raises(InputError, match=r"retrievers\.dense_mmr\.lambda"):
        parse_config(
            {
                "dataset": "demo",
                "retrievers": {"dense": {"type": "dense"}, "dense_mmr": {"type": "mmr", "of": "dense", "lambda": 2}},
            }
        )


def test_config_checks_the_input_exists():
    with pytest.raises(InputError, match="builds on 'nope'"):
        parse_config({"dataset": "demo", "retrievers": {"m": {"type": "mmr", "of": "nope"}}})


def test_minmax():
    assert minmax(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([7.0, 7.0])).tolist() == [1.0, 1.0]
    assert minmax(np.array([])).size == 0


# ---------------------------------------------------------------- the stage (real packaged model)


@pytest.fixture(scope="module")
def stage_factory(tiny_dataset, cache_dir):
    def make(**kw):
        stage = MMR(MMRSpec(of="input", **kw), cache_dir=cache_dir, show_progress=False)
        stage.index(tiny_dataset.corpus)
        return stage

    return make


def input_run(tiny_dataset) -> Run:
    """q1 ranks all six docs, q2 four, q3 none; scores hand-set."""
    return Run.from_lists(
        {
            "q1": [("d1", 9.0), ("d6", 8.5), ("d4", 7.0), ("d2", 3.0), ("d5", 2.0), ("d3", 1.0)],
            "q2": [("d3", 5.0), ("d1", 1.0), ("d6", 1.0), ("d4", 0.5)],
            "q3": [],
        },
        doc_ids=tiny_dataset.doc_ids,
    )


def reordered(tiny_dataset, stage) -> tuple[Run, Run]:
    """The input run and what ``stage`` makes of it at depth 10."""
    run = input_run(tiny_dataset)
    return run, stage.transform([run], tiny_dataset.queries, 10)


def expected_order(stage: MMR, run: Run, qid: str, top_n: int, lam: float, queries=None) -> list[str]:
    ranked = [d for d, _ in run.ranking(qid)]
    head, tail = ranked[:top_n], ranked[top_n:]
    docs = {d.id: d for d in stage._corpus}
    e = stage.encoder.encode_documents([docs[d] for d in head]).astype(np.float64)
    if queries is None:
        rel = minmax(np.array([s for _, s in run.ranking(qid)[:top_n]]))
    else:
        q = next(x for x in queries if x.id == qid)
        rel = e @ stage.encoder.encode_queries([q])[0].astype(np.float64)
    return [head[i] for i in mmr_order(rel, e @ e.T, lam)] + tail


@pytest.mark.slow
@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 0.7])
def test_scores_relevance_reorders_the_top_n_and_keeps_the_tail(tiny_dataset, stage_factory, lam):
    stage = stage_factory(relevance="scores", top_n=4, **{"lambda": lam})
    run, out = reordered(tiny_dataset, stage)
    for qid in ("q1", "q2"):
        got = [d for d, _ in out.ranking(qid)]
        assert got == expected_order(stage, run, qid, 4, lam)
        assert got[4:] == [d for d, _ in run.ranking(qid)][4:]  # tail untouched
        assert sorted(got) == sorted(d for d, _ in run.ranking(qid))
        scores = [s for _, s in out.ranking(qid)]
        assert all(a > b for a, b in pairwise(scores))  # strictly decreasing: no tie to re-sort
    assert out.ranking("q3") == []
    # the canonical re-sort of what we return leaves the MMR order as it is
    assert Run.from_dict(out.to_dict(), doc_ids=tiny_dataset.doc_ids).to_dict() == out.to_dict()
    assert [d for d, _ in Run.coerce(out.to_dict()).ranking("q1")] == [d for d, _ in out.ranking("q1")]


@pytest.mark.slow
def test_embedding_relevance_uses_query_cosine(tiny_dataset, stage_factory):
    stage = stage_factory(relevance="embedding", **{"lambda": 0.5})
    run, out = reordered(tiny_dataset, stage)
    for qid in ("q1", "q2"):
        got = [d for d, _ in out.ranking(qid)]
        assert got == expected_order(stage, run, qid, 100, 0.5, tiny_dataset.queries)


@pytest.mark.slow
def test_lambda_one_with_scores_keeps_the_input_order_even_on_ties(tiny_dataset, stage_factory):
    stage = stage_factory(relevance="scores", **{"lambda": 1.0})
    run, out = reordered(tiny_dataset, stage)
    for qid in ("q1", "q2"):
        # q2 has a tie (d1, d6 at 1.0): the input's canonical order (doc id desc: d6 before d1) stays
        assert [d for d, _ in out.ranking(qid)] == [d for d, _ in run.ranking(qid)]
    assert [d for d, _ in out.ranking("q2")][1:3] == ["d6", "d1"]


@pytest.mark.slow
def test_lambda_zero_moves_a_near_duplicate_down(tiny_dataset, stage_factory):
    # q1's input ranks two espresso documents first; pure novelty picks a non-coffee doc second
    stage = stage_factory(relevance="scores", **{"lambda": 0.0})
    out = stage.transform([input_run(tiny_dataset)], tiny_dataset.queries, 10)
    got = [d for d, _ in out.ranking("q1")]
    assert got[0] == "d1" and got[1] not in {"d6", "d4"}


@pytest.mark.slow
def test_output_is_cut_to_k_and_single_query_calls_agree(tiny_dataset, stage_factory):
    stage = stage_factory(relevance="embedding", top_n=3, **{"lambda": 0.3})
    run = input_run(tiny_dataset)
    full = stage.transform([run], tiny_dataset.queries, 10)
    cut = stage.transform([run], tiny_dataset.queries, 2)
    assert cut.depth == 2
    q1 = [q for q in tiny_dataset.queries if q.id == "q1"]
    one = stage.transform([run.subset(["q1"])], q1, 10)
    assert one.ranking("q1") == full.ranking("q1")
    assert [d for d, _ in cut.ranking("q1")] == [d for d, _ in full.ranking("q1")][:2]


@pytest.mark.slow
def test_unknown_doc_and_misuse_are_errors(tiny_dataset, stage_factory, cache_dir):
    stage = stage_factory()
    foreign = Run.from_lists({"q1": [("zz", 1.0)]})
    with pytest.raises(InputError, match=r"'zz'.*not in the corpus"):
        stage.transform([foreign], tiny_dataset.queries, 10)
    with pytest.raises(InputError, match="one input run"):
        stage.transform([], tiny_dataset.queries, 10)
    fresh = MMR(MMRSpec(of="x"), cache_dir=cache_dir, show_progress=False)
    with pytest.raises(RuntimeError, match="before index"):
        fresh.transform([input_run(tiny_dataset)], tiny_dataset.queries, 10)


# ---------------------------------------------------------------- in a real pipeline


@pytest.mark.slow
def test_mmr_raises_ild_over_dense_on_the_demo(demo_dataset, cache_dir):
    from harness.api import benchmark
    from harness.results.table import to_markdown

    res = benchmark(
        demo_dataset,
        {"dense": {"type": "dense"}, "dense_mmr": {"type": "mmr", "of": "dense", "lambda": 0.5}},
        metrics=["ndcg@10", "ild@10"],
        cache_dir=cache_dir,
        latency_queries=3,
        warmup_queries=1,
        show_progress=False,
    )
    assert not res.failures
    assert list(res.summary["dense_mmr"]) == ["ndcg@10", "ild@10"]
    dense, mmr = res.summary["dense"], res.summary["dense_mmr"]
    assert mmr["ild@10"] > dense["ild@10"]
    assert res.efficiency["dense_mmr"]["components"] == ["dense", "dense_mmr"]
    assert res.manifest["retrievers"]["dense_mmr"]["spec"]["lambda"] == 0.5
    table = to_markdown(res)
    assert "ndcg@10 | ild@10" in table and "dense_mmr" in table


@pytest.mark.slow
def test_queries_dense_encoded_are_not_encoded_again_by_mmr(tiny_dataset, cache_dir):
    """Query embeddings are computed once per run: dense's batch, then MMR, then single-query
    latency calls all read the same memo (and give the very same vectors)."""
    from retrievers.dense import Dense

    dense = Dense(cache_dir=cache_dir, show_progress=False)
    dense.index(tiny_dataset.corpus)
    queries = [type(q)(id=q.id, text=q.text + " (shared memo probe)") for q in tiny_dataset.queries]
    run = dense.search(queries, k=6)
    encoded_by_dense = dense.encoder.encoded
    stage = MMR(MMRSpec(of="dense"), cache_dir=cache_dir, show_progress=False)
    stage.index(tiny_dataset.corpus)
    before = stage.encoder.encoded
    stage.transform([run], queries, 6)
    for q in queries:  # the latency loop's one-query calls
        dense.search([q], k=6)
    assert stage.encoder.encoded == before and dense.encoder.encoded == encoded_by_dense
    assert np.array_equal(stage.encoder.encode_queries(queries), dense.encoder.encode_queries(queries))
    assert dense.efficiency_extra(6)["cache_hit_rate"] is not None
