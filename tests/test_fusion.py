"""Rank fusion: hand-computed cases, and a brute-force dict implementation as the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import fusion
from harness.errors import InputError
from harness.run import Run

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

A = Run.from_dict({"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})
B = Run.from_dict({"q1": {"d3": 0.9, "d4": 0.5}})


def test_rrf_hand_computed_missing_doc_adds_nothing():
    fused = fusion.rrf([A, B])  # k = 60, weight 1 each
    got = fused.ranking("q1")
    # d3: rank 3 in A, rank 1 in B; d4 only in B (rank 2); d2 only in A (rank 2): d2 and d4 tie
    expected = [("d3", 1 / 63 + 1 / 61), ("d1", 1 / 61), ("d4", 1 / 62), ("d2", 1 / 62)]
    assert [d for d, _ in got] == [d for d, _ in expected]  # the d2/d4 tie goes to the larger doc id
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-15)


def test_rrf_weights_and_k():
    got = fusion.rrf([A, B], k=0, weights=[2, 1]).ranking("q1")
    assert dict(got) == pytest.approx({"d1": 2 / 1, "d3": 2 / 3 + 1 / 1, "d2": 2 / 2, "d4": 1 / 2})
    assert [d for d, _ in got] == ["d1", "d3", "d2", "d4"]


def test_weighted_minmax_hand_computed():
    # A -> d1 1, d2 .5, d3 0; B -> d3 1, d4 0; a doc missing from a run gets 0 there
    got = fusion.weighted([A, B]).ranking("q1")
    assert dict(got) == pytest.approx({"d1": 0.5, "d3": 0.5, "d2": 0.25, "d4": 0.0})
    assert [d for d, _ in got] == ["d3", "d1", "d2", "d4"]  # tie d1/d3: larger doc id first
    got = dict(fusion.weighted([A, B], weights=[0.8, 0.2]).ranking("q1"))
    assert got == pytest.approx({"d1": 0.8, "d2": 0.4, "d3": 0.2, "d4": 0.0})


def test_weighted_zscore_missing_doc_gets_the_run_minimum():
    za = math.sqrt(1.5)  # z of 3 and 1 in [3, 2, 1] (population std sqrt(2/3))
    got = dict(fusion.weighted([A, B], normalize="zscore").ranking("q1"))
    assert got == pytest.approx(
        {
            "d1": 0.5 * za + 0.5 * -1.0,  # d1 is missing from B: B's lowest z, -1
            "d2": 0.5 * 0.0 + 0.5 * -1.0,
            "d3": 0.5 * -za + 0.5 * 1.0,
            "d4": 0.5 * -za + 0.5 * -1.0,  # missing from A: A's lowest z
        }
    )


def test_minmax_of_equal_scores_is_one_and_beats_missing():
    one = Run.from_dict({"q1": {"x": 5.0}})
    got = dict(fusion.weighted([one, B]).ranking("q1"))
    assert got == pytest.approx({"x": 0.5, "d3": 0.5, "d4": 0.0})


def test_query_missing_from_a_run_and_three_runs():
    c = Run.from_dict({"q1": {"d4": 7.0}, "q2": {"d9": 1.0, "d8": 0.5}})
    fused = fusion.rrf([A, B, c])
    assert fused.query_ids == ["q1", "q2"]
    assert dict(fused.ranking("q2")) == pytest.approx({"d9": 1 / 61, "d8": 1 / 62})
    assert dict(fused.ranking("q1"))["d4"] == pytest.approx(1 / 62 + 1 / 61)
    w = dict(fusion.weighted([A, B, c]).ranking("q2"))
    assert w == pytest.approx({"d9": 1 / 3, "d8": 0.0})


def test_shared_vocabulary_and_depth_cut():
    corpus = ["d1", "d2", "d3", "d4"]
    a = Run.from_dict(A.to_dict(), doc_ids=corpus)
    b = Run.from_dict(B.to_dict(), doc_ids=corpus)
    fused = fusion.rrf([a, b], depth=2)
    assert fused.doc_ids is a.doc_ids
    assert [d for d, _ in fused.ranking("q1")] == ["d3", "d1"]


def test_empty_rankings():
    empty = Run.from_dict({"q1": {}})
    assert fusion.rrf([empty, empty]).ranking("q1") == []
    assert dict(fusion.weighted([empty, B], normalize="zscore").ranking("q1")) == pytest.approx({"d3": 0.5, "d4": -0.5})


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: fusion.rrf([]), "of"),
        (lambda: fusion.rrf([A, B], weights=[1.0]), "weights"),
        (lambda: fusion.weighted([A, B], weights=[1.0, -1.0]), "weights"),
        (lambda: fusion.rrf([A], k=-1), "rrf_k"),
        (lambda: fusion.weighted([A], normalize="softmax"), "normalize"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments(call, field):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field


# ---------------------------------------------------------------------- oracle
def _ref_rrf(runs, k, w):
    out: dict[str, dict[str, float]] = {}
    for wi, run in zip(w, runs):
        for q, ranking in run.items():
            row = out.setdefault(q, {})
            for rank, (d, _) in enumerate(ranking, 1):
                row[d] = row.get(d, 0.0) + wi / (k + rank)
    return out


def _ref_weighted(runs, w, method):
    out: dict[str, dict[str, float]] = {}
    qids = [q for r in runs for q in r.query_ids]
    for q in dict.fromkeys(qids):
        docs = list(dict.fromkeys(d for r in runs for d, _ in r.ranking(q)))
        row = dict.fromkeys(docs, 0.0)
        for wi, run in zip(w, runs):
            ranking = run.ranking(q)
            if not ranking:
                continue
            s = np.array([x for _, x in ranking])
            if method == "minmax":
                z = (s - s.min()) / (s.max() - s.min()) if s.max() > s.min() else np.ones_like(s)
                floor = 0.0
            else:
                z = (s - s.mean()) / s.std() if s.std() > 0 else np.zeros_like(s)
                floor = float(z.min())
            got = dict(zip([d for d, _ in ranking], z))
            for d in docs:
                row[d] += wi * got.get(d, floor)
        out[q] = row
    return out


_runs = st.lists(
    st.dictionaries(
        st.sampled_from(["q1", "q2", "q3"]),
        st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(-50, 50).map(float), max_size=8),
        max_size=3,
    ),
    min_size=1,
    max_size=4,
)


def _check_canonical(run: Run) -> None:
    """Score descending as trec_eval sees it (float32), ties by doc id descending."""
    for _, ranking in run.items():
        keys = [(float(np.float32(s)), d) for d, s in ranking]
        assert keys == sorted(keys, reverse=True)


@settings(max_examples=60, deadline=None)
@given(_runs, st.integers(0, 100))
def test_rrf_matches_reference(dicts, k):
    runs = [Run.from_dict(d) for d in dicts]
    w = [1.0] * len(runs)
    fused = fusion.rrf(runs, k=k)
    ref = _ref_rrf(runs, k, w)
    assert set(fused.query_ids) == set(ref)
    for q, row in ref.items():
        assert dict(fused.ranking(q)) == pytest.approx(row)
    _check_canonical(fused)


@settings(max_examples=60, deadline=None)
@given(_runs, st.sampled_from(["minmax", "zscore"]), st.data())
def test_weighted_matches_reference(dicts, method, data):
    runs = [Run.from_dict(d) for d in dicts]
    w = data.draw(st.lists(st.floats(0, 3), min_size=len(runs), max_size=len(runs)))
    fused = fusion.weighted(runs, weights=w, normalize=method)
    for q, row in _ref_weighted(runs, w, method).items():
        assert dict(fused.ranking(q)) == pytest.approx(row, abs=1e-9)
    _check_canonical(fused)


@settings(max_examples=40, deadline=None)
@given(_runs)
def test_rrf_of_one_run_keeps_its_order_and_run_order_does_not_matter(dicts):
    run = Run.from_dict(dicts[0])
    assert [[d for d, _ in r] for _, r in fusion.rrf([run]).items()] == [[d for d, _ in r] for _, r in run.items()]
    runs = [Run.from_dict(d) for d in dicts]
    forward, backward = fusion.rrf(runs), fusion.rrf(runs[::-1])
    for q in forward.query_ids:
        assert dict(forward.ranking(q)) == pytest.approx(dict(backward.ranking(q)))
