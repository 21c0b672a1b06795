"""The hybrid stage: config validation, fusion through the runner, composed cost."""

from __future__ import annotations

import pytest

from harness import fusion
from harness.api import benchmark
from harness.config import parse_config
from harness.errors import InputError
from harness.model import Query
from harness.run import Run
from retrievers.hybrid import Hybrid, HybridSpec
from tests.conftest import Canned


def fixed(rankings) -> Canned:
    """A team's retriever: returns fixed rankings as plain dicts (no Run)."""
    return Canned(lambda queries, k: {q.id: rankings.get(q.id, [])[:k] for q in queries})


def _config(hybrid: dict) -> dict:
    return {
        "dataset": "demo",
        "retrievers": {"bm25": {"type": "bm25"}, "bm25r": {"type": "bm25", "backend": "rank_bm25"}, "hybrid": hybrid},
    }


def test_spec_parses_and_names_its_inputs():
    cfg = parse_config(_config({"type": "hybrid", "of": ["bm25", "bm25r"], "fusion": "weighted", "weights": [1, 3]}))
    spec = cfg.specs()["hybrid"]
    assert isinstance(spec, HybridSpec)
    assert spec.inputs() == ["bm25", "bm25r"]
    assert spec.normalize == "minmax" and spec.rrf_k == 60


@pytest.mark.parametrize(
    ("hybrid", "message"),
    [
        ({"type": "hybrid", "of": ["bm25", "bm25r"], "weights": [1]}, "1 weights for 2 retrievers"),
        ({"type": "hybrid", "of": ["bm25", "nope"]}, "builds on 'nope'"),
        ({"type": "hybrid", "of": ["bm25", "bm25r"], "fusion": "borda"}, "rrf"),
        ({"type": "hybrid", "of": ["bm25", "bm25r"], "normalise": "minmax"}, "retrievers.hybrid"),
        ({"type": "hybrid", "of": []}, "retrievers.hybrid.of"),
        ({"type": "hybrid", "of": ["bm25", "bm25"]}, "names a retriever twice"),
    ],
)
def test_bad_specs_are_input_errors(hybrid, message):
    with pytest.raises(InputError) as e:
        parse_config(_config(hybrid))
    assert message in str(e.value)


def test_transform_is_the_fusion_restricted_to_the_queries():
    a = Run.from_dict({"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d5": 1.0}})
    b = Run.from_dict({"q1": {"d2": 9.0, "d3": 1.0}, "q2": {}})
    queries = [Query(id="q2", text="x"), Query(id="q1", text="y")]
    out = Hybrid(of=["a", "b"]).transform([a, b], queries, k=2)
    assert out.query_ids == ["q2", "q1"]
    assert out.ranking("q1") == fusion.rrf([a, b]).ranking("q1")[:2]
    w = Hybrid(of=["a", "b"], fusion="weighted", normalize="zscore", weights=[1, 1]).transform([a, b], queries, 10)
    assert w.ranking("q1") == fusion.weighted([a, b], weights=[1, 1], normalize="zscore").ranking("q1")


def test_hybrid_in_the_runner_fuses_any_number_and_adds_its_parts_cost(tiny_dataset):
    one = fixed({"q1": [("d1", 2.0), ("d4", 1.0)], "q2": [("d3", 1.0)]})
    two = fixed({"q1": [("d6", 5.0), ("d1", 4.0)], "q3": [("d5", 1.0)]})
    results = benchmark(
        tiny_dataset,
        {
            "bm25": {"type": "bm25"},
            "one": one,
            "two": two,
            "hybrid": {"type": "hybrid", "of": ["bm25", "one", "two"]},
            "weighted": {"type": "hybrid", "of": ["one", "two"], "fusion": "weighted", "weights": [0.25, 0.75]},
        },
        metrics=["ndcg@10"],
        latency_queries=3,
        warmup_queries=0,
        show_progress=False,
    )
    assert not results.failures
    eff = results.efficiency
    assert eff["hybrid"]["components"] == ["bm25", "one", "two", "hybrid"]
    for key in ("index_seconds", "search_seconds"):
        assert eff["hybrid"][key] >= eff["bm25"][key] + eff["one"][key] + eff["two"][key]
    assert eff["hybrid"]["latency_ms_p50"] is not None
    # q1 under weighted fusion: one -> d1 1, d4 0; two -> d6 1, d1 0
    assert dict(results.runs["weighted"].ranking("q1")) == pytest.approx({"d1": 0.25, "d6": 0.75, "d4": 0.0})
    assert results.summary["hybrid"]["ndcg@10"] > 0
