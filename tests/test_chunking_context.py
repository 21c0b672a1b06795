"""Context metrics (harness.metrics.context): hand-computed examples, and the cases where each one
reduces to a trec_eval measure, checked against pytrec_eval."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics.context import (
    context_precision,
    context_recall,
    precision_at_tokens,
    recall_at_tokens,
    taken_in_budget,
)

# One query, 5 ranked chunks, 3 relevant documents (units) A, B, C; C is never retrieved.
#   rank  tokens  covers
#   0     100     A
#   1     50      -
#   2     120     B
#   3     40      A      (a second chunk of A)
#   4     30      -
TOKENS = [np.array([100, 50, 120, 40, 30])]
COVERS = [
    np.array(
        [
            [1, 0, 0],
            [0, 0, 0],
            [0, 1, 0],
            [1, 0, 0],
            [0, 0, 0],
        ],
        dtype=bool,
    )
]


def test_budget_stops_at_the_first_chunk_that_does_not_fit():
    # cumulative 100, 150, 270, 310, 340
    assert taken_in_budget(TOKENS[0], 99) == 0
    assert taken_in_budget(TOKENS[0], 100) == 1
    assert taken_in_budget(TOKENS[0], 269) == 2  # chunk 2 (120) does not fit: stop, do not skip to chunk 3
    assert taken_in_budget(TOKENS[0], 270) == 3
    assert taken_in_budget(TOKENS[0], 10_000) == 5


@pytest.mark.parametrize(
    ("budget", "recall", "precision"),
    [
        (99, 0.0, 0.0),  # empty context
        (100, 1 / 3, 100 / 100),  # A
        (200, 1 / 3, 100 / 150),  # A, junk(50); B does not fit
        (270, 2 / 3, 220 / 270),  # A, junk, B
        (310, 2 / 3, 260 / 310),  # + A again: no new unit, relevant tokens
        (512, 2 / 3, 260 / 340),  # everything: C is never retrieved
    ],
)
def test_recall_and_precision_at_tokens_hand_computed(budget, recall, precision):
    assert recall_at_tokens(TOKENS, COVERS, budget)[0] == pytest.approx(recall, abs=1e-15)
    assert precision_at_tokens(TOKENS, COVERS, budget)[0] == pytest.approx(precision, abs=1e-15)


def test_context_precision_and_recall_hand_computed():
    # top 1: A -> precision 1/1, recall 1/3; top 3: A, -, B -> 2/3, 2/3; top 10 (5 retrieved): 3/5, 2/3
    assert context_precision(COVERS, 1)[0] == 1.0
    assert context_recall(COVERS, 1)[0] == pytest.approx(1 / 3)
    assert context_precision(COVERS, 3)[0] == pytest.approx(2 / 3)
    assert context_recall(COVERS, 3)[0] == pytest.approx(2 / 3)
    assert context_precision(COVERS, 10)[0] == pytest.approx(3 / 5)  # over what was retrieved, not k
    assert context_recall(COVERS, 10)[0] == pytest.approx(2 / 3)


def test_answer_strings_as_units_a_chunk_may_cover_several():
    # answers "12 to 18 hours" and "coarse grind": chunk 0 holds both, chunk 1 neither
    covers = [np.array([[True, True], [False, False]])]
    tokens = [np.array([60, 60])]
    assert context_recall(covers, 1)[0] == 1.0
    assert recall_at_tokens(tokens, covers, 64)[0] == 1.0
    assert precision_at_tokens(tokens, covers, 128)[0] == 0.5


def test_queries_with_nothing_retrieved_or_no_relevant_unit_score_zero():
    tokens = [np.array([], dtype=np.int64), np.array([10, 10])]
    covers = [np.zeros((0, 2), dtype=bool), np.zeros((2, 0), dtype=bool)]
    for values in (
        recall_at_tokens(tokens, covers, 100),
        precision_at_tokens(tokens, covers, 100),
        context_precision(covers, 5),
        context_recall(covers, 5),
    ):
        assert values.tolist() == [0.0, 0.0]


def test_relevance_vector_accepted_where_units_do_not_matter():
    rel = [np.array([True, False, True])]
    assert context_precision(rel, 2)[0] == 0.5
    assert precision_at_tokens([np.array([5, 5, 5])], rel, 15)[0] == pytest.approx(10 / 15)
    with pytest.raises(ValueError, match="relevant units"):
        context_recall(rel, 2)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="3 rows for 2 ranked"):
        recall_at_tokens([np.array([1, 2])], [np.zeros((3, 1), dtype=bool)], 5)


# ------------------------------------------------------------- reductions to trec_eval measures

_ranking = st.lists(st.integers(0, 14), min_size=0, max_size=12, unique=True)
_relevant = st.sets(st.integers(0, 14), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_ranking, _relevant), min_size=1, max_size=5), st.integers(1, 12))
def test_reduce_to_pytrec_eval_recall_and_precision(queries, k):
    """Whole documents as chunks, one token each: context_recall@k and recall@{k}tok are trec_eval's
    recall.k; precision@{k}tok and context_precision@k are P.k when at least k were retrieved."""
    import pytrec_eval

    qrels = {f"q{i}": {f"d{d}": 1 for d in rel} for i, (_, rel) in enumerate(queries)}
    run = {f"q{i}": {f"d{d}": float(100 - r) for r, d in enumerate(rk)} for i, (rk, _) in enumerate(queries)}
    run = {q: (r or {"d99": 0.0}) for q, r in run.items()}  # pytrec_eval drops empty rankings
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"recall.{k}", f"P.{k}"}).evaluate(run)
    covers, tokens, full = [], [], []
    for i, (_, rel) in enumerate(queries):
        ranked = [int(d[1:]) for d in run[f"q{i}"]]
        units = sorted(rel)
        covers.append(np.array([[d == u for u in units] for d in ranked], dtype=bool).reshape(len(ranked), len(units)))
        tokens.append(np.ones(len(ranked), dtype=np.int64))
        full.append(len(ranked) >= k)
    recall = np.array([ev[f"q{i}"][f"recall_{k}"] for i in range(len(queries))])
    prec = np.array([ev[f"q{i}"][f"P_{k}"] for i in range(len(queries))])
    np.testing.assert_allclose(context_recall(covers, k), recall, rtol=0, atol=1e-12)
    np.testing.assert_allclose(recall_at_tokens(tokens, covers, k), recall, rtol=0, atol=1e-12)
    full = np.array(full)
    np.testing.assert_allclose(precision_at_tokens(tokens, covers, k)[full], prec[full], rtol=0, atol=1e-12)
    np.testing.assert_allclose(context_precision(covers, k)[full], prec[full], rtol=0, atol=1e-12)
