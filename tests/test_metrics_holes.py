"""Measures robust to holes in the judgments: ``bpref`` and judged-only (trec_eval ``-J``) evaluation.

Hand-computed cases first, then per-query agreement with pytrec_eval (trec_eval's C code):
``bpref`` and, with ``judged_docs_only_flag=True``, ``ndcg_cut_10``, ``P_10``, ``map`` (and a few
more), on hypothesis-drawn runs full of unjudged documents and score ties, on both scoring paths
(the dict path and the array path of a :class:`Run`).
"""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import evaluate
from harness.metrics.evaluate import evaluate_run
from harness.metrics.names import parse_metric
from harness.run import Run

# --------------------------------------------------------------------------- by hand


def test_bpref_by_hand():
    # judged: a, b relevant (R = 2); n1, n2, n3 judged non-relevant (N = 3); u unjudged
    qrels = {"q": {"a": 1, "b": 2, "n1": 0, "n2": 0, "n3": 0}}
    # ranking: n1, u, a, n2, b  ->  a has 1 non-relevant above: 1 - min(1,2)/min(3,2) = 1/2
    #                               b has 2 above: 1 - 2/2 = 0           bpref = (1/2 + 0) / 2 = 1/4
    run = {"q": {"n1": 5, "u": 4, "a": 3, "n2": 2, "b": 1}}
    assert evaluate(qrels, run, ["bpref"])["bpref"] == pytest.approx(0.25)
    # unjudged documents change nothing: drop u, or put ten more on top
    run2 = {"q": {"n1": 5, "a": 3, "n2": 2, "b": 1} | {f"x{i}": 10 + i for i in range(10)}}
    assert evaluate(qrels, run2, ["bpref"])["bpref"] == pytest.approx(0.25)
    # relevant above every non-relevant: 1 each; an unretrieved relevant doc adds 0
    assert evaluate(qrels, {"q": {"a": 2, "b": 1, "n1": 0}}, ["bpref"])["bpref"] == 1.0
    assert evaluate(qrels, {"q": {"a": 2, "n1": 1}}, ["bpref"])["bpref"] == 0.5
    # no judged non-relevant at all (N = 0): every retrieved relevant doc counts 1
    assert evaluate({"q": {"a": 1, "b": 1}}, {"q": {"u": 3, "a": 2}}, ["bpref"])["bpref"] == 0.5
    # nothing relevant: 0
    assert evaluate({"q": {"n1": 0}}, {"q": {"n1": 1}}, ["bpref"])["bpref"] == 0.0


def test_bpref_negative_grades_count_as_unjudged():
    qrels = {"q": {"a": 1, "n": 0, "neg": -1}}
    assert evaluate(qrels, {"q": {"neg": 3, "a": 2, "n": 1}}, ["bpref"])["bpref"] == 1.0
    assert evaluate(qrels, {"q": {"n": 3, "neg": 2, "a": 1}}, ["bpref"])["bpref"] == 0.0


def test_bpref_takes_no_cutoff():
    from harness.errors import InputError

    assert parse_metric("bpref").k is None
    with pytest.raises(InputError, match="takes no cutoff"):
        parse_metric("bpref@10")


def test_judged_only_by_hand():
    # R = 2 (a grade 2, b grade 1); n judged 0; u1, u2 unjudged; neg graded -1 (trec_eval: not pooled)
    qrels = {"q": {"a": 2, "b": 1, "n": 0, "neg": -1}}
    run = {"q": {"u1": 6, "a": 5, "u2": 4, "neg": 3, "n": 2, "b": 1}}
    # full ranking: u1 a u2 neg n b -> P@2 = 1/2, AP = (1/2 + 2/6) / 2
    full = evaluate(qrels, run, ["precision@2", "map", "ndcg@2", "judged@4"])
    assert full["precision@2"] == 0.5
    assert full["map"] == pytest.approx((1 / 2 + 2 / 6) / 2)
    # condensed: a n b -> P@2 = 1/2, AP = (1/1 + 2/3) / 2, nDCG@2 = 2 / (2 + 1/log2(3))
    cond = evaluate(qrels, run, ["precision@2", "map", "ndcg@2", "judged@4"], judged_only=True)
    assert cond["precision@2"] == 0.5
    assert cond["map"] == pytest.approx((1 + 2 / 3) / 2)
    assert cond["ndcg@2"] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    # judged@k measures the holes: on the full ranking either way (a, neg of u1 a u2 neg)
    assert cond["judged@4"] == full["judged@4"] == 0.5
    # the array path agrees
    arr = evaluate_run(qrels, Run.coerce(run), ["precision@2", "map", "ndcg@2", "judged@4"], judged_only=True)
    assert arr.means() == pytest.approx(cond)


def test_judged_only_is_the_same_as_deleting_unjudged_docs():
    qrels = {"q1": {"a": 1, "b": 0, "c": 3}, "q2": {"x": 1}}
    run = {"q1": {"z": 9, "b": 8, "y": 7, "c": 6, "a": 6}, "q2": {"w": 3, "x": 1}}
    kept = {"q1": {"b": 8, "c": 6, "a": 6}, "q2": {"x": 1}}
    ms = ["ndcg@3", "precision@2", "map", "mrr", "recall@2", "bpref"]
    assert evaluate(qrels, run, ms, judged_only=True, per_query=True) == evaluate(qrels, kept, ms, per_query=True)


# --------------------------------------------------------------------------- against pytrec_eval

DOCS = [f"d{i}" for i in range(14)] + ["10", "9", "Z", "é"]
QUERIES = ["q1", "q2", "q3", "q4", "q5"]
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.0]) | st.floats(-50, 50, allow_nan=False, allow_subnormal=False)


@st.composite
def cases(draw):
    """Judgments over part of the documents (most of a ranking unjudged), grades -2..3, heavy ties."""
    qrels = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=5, unique=True)):
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-2, 3), max_size=8))
        if not judged or max(judged.values()) < 0:  # trec_eval crashes on all-negative queries
            judged[draw(st.sampled_from(DOCS))] = draw(st.integers(0, 3))
        qrels[q] = judged
    run = draw(st.dictionaries(st.sampled_from(QUERIES), st.dictionaries(st.sampled_from(DOCS), SCORES, max_size=14)))
    return qrels, run


PAIRS_J = {"ndcg@10": "ndcg_cut_10", "precision@10": "P_10", "map": "map", "ndcg@3": "ndcg_cut_3",
           "precision@3": "P_3", "map@5": "map_cut_5", "mrr": "recip_rank", "recall@5": "recall_5"}  # fmt: skip
TREC_J = {"ndcg_cut.3,10", "P.3,10", "map", "map_cut.5", "recip_rank", "recall.5"}


def _compare(ours: dict, ref: dict, pairs: dict) -> None:
    # pytrec_eval leaves out judged queries the run lacks (ours score them 0): compare the shared ones
    for q, vals in ref.items():
        for mine, theirs in pairs.items():
            assert ours[q][mine] == pytest.approx(vals[theirs], abs=1e-12), (q, mine)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_bpref_equals_pytrec_eval(case):
    qrels, run = case
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    _compare(evaluate(qrels, run, ["bpref"], per_query=True), ref, {"bpref": "bpref"})
    _compare(evaluate_run(qrels, Run.coerce(run), ["bpref"]).per_query(), ref, {"bpref": "bpref"})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_judged_only_equals_pytrec_eval_judged_docs_only(case):
    qrels, run = case
    ref = pytrec_eval.RelevanceEvaluator(qrels, TREC_J, judged_docs_only_flag=True).evaluate(run)
    ms = list(PAIRS_J)
    _compare(evaluate(qrels, run, ms, per_query=True, judged_only=True), ref, PAIRS_J)
    _compare(evaluate_run(qrels, Run.coerce(run), ms, judged_only=True).per_query(), ref, PAIRS_J)
    # bpref ignores unjudged documents already: -J changes nothing
    both = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, judged_docs_only_flag=True).evaluate(run)
    _compare(evaluate(qrels, run, ["bpref"], per_query=True, judged_only=True), both, {"bpref": "bpref"})
