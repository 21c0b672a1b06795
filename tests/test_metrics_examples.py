"""Every metric against hand-computed values: the worked examples of docs/architecture.md ("Metric
definitions"), then one case per rule (ties, duplicates, missing queries, unjudged queries, negative
grades, empty runs).

Each case is scored through both entry points, the dict path (``harness.evaluate`` on dicts) and the
array path (``Run`` + ``evaluate_run``); they must agree exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness import evaluate
from harness.errors import InputError
from harness.metrics.evaluate import CompiledQrels, evaluate_dicts, evaluate_run
from harness.run import Run

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

ALL = [
    "hit_rate@1",
    "hit_rate@3",
    "hit_rate",
    "mrr@2",
    "mrr",
    "precision@1",
    "precision@3",
    "precision@10",
    "recall@3",
    "recall",
    "ndcg@3",
    "ndcg",
    "ndcg_exp@3",
    "ndcg_exp",
    "map@3",
    "map",
    "r_precision",
]


def lg(r: int) -> float:
    """The discount's denominator at rank r: log2(r + 1)."""
    return math.log2(r + 1)


def scored(qrels, run, metrics=ALL):
    """Per-query values from both paths, asserted equal; also the means of both."""
    dict_pq = evaluate(qrels, run, metrics, per_query=True)
    arr = evaluate_run(qrels, Run.from_dict(run), metrics)
    assert arr.per_query() == dict_pq
    assert evaluate(qrels, run, metrics) == pytest.approx(arr.means(), abs=0)
    return dict_pq


def ranked(*docs: str) -> dict[str, float]:
    """A ranking with strictly decreasing scores, first doc best."""
    return {d: float(len(docs) - i) for i, d in enumerate(docs)}


# ---------------------------------------------------- worked examples (docs/architecture.md, "Metric definitions")
def test_design_ndcg_grades_1_3_0_0():
    qrels = {"q": {"a": 1, "b": 3}}  # only those two judged
    pq = scored(qrels, {"q": ranked("a", "b", "c", "d")}, ["ndcg", "ndcg@4"])
    dcg, idcg = 1 + 3 / lg(2), 3 + 1 / lg(2)
    assert dcg == pytest.approx(2.893, abs=5e-4) and idcg == pytest.approx(3.631, abs=5e-4)
    assert pq["q"]["ndcg"] == pytest.approx(0.7967, abs=5e-5)
    assert pq["q"]["ndcg@4"] == pq["q"]["ndcg"] == pytest.approx(dcg / idcg, rel=1e-12)


def test_design_ndcg_binary_0_1_0_1_1():
    qrels = {"q": {"b": 1, "d": 1, "e": 1}}
    pq = scored(qrels, {"q": ranked("a", "b", "c", "d", "e")}, ["ndcg@5"])
    dcg, idcg = 1 / lg(2) + 1 / lg(4) + 1 / lg(5), 1 + 1 / lg(2) + 1 / lg(3)
    assert dcg == pytest.approx(1.4484, abs=1e-4) and idcg == pytest.approx(2.1309, abs=1e-4)
    assert pq["q"]["ndcg@5"] == pytest.approx(0.6797, abs=5e-5)
    assert pq["q"]["ndcg@5"] == pytest.approx(dcg / idcg, rel=1e-12)


def test_design_ndcg_grades_3_0_2_1_0_1():
    grades = [3, 0, 2, 1, 0, 1]
    docs = [f"d{i}" for i in range(len(grades))]
    qrels = {"q": dict(zip(docs, grades))}
    pq = scored(qrels, {"q": ranked(*docs)}, ["ndcg", "ndcg@6"])
    dcg = sum(g / lg(r) for r, g in enumerate(grades, 1))
    idcg = sum(g / lg(r) for r, g in enumerate(sorted(grades, reverse=True), 1))
    assert round(dcg, 2) == 4.79 and round(idcg, 2) == 5.19
    assert round(pq["q"]["ndcg"], 2) == 0.92
    assert pq["q"]["ndcg"] == pq["q"]["ndcg@6"] == pytest.approx(dcg / idcg, rel=1e-12)


def test_design_mrr_first_relevant_at_3_1_2():
    qrels = {"q1": {"c": 1}, "q2": {"a": 1}, "q3": {"b": 1}}
    run = {q: ranked("a", "b", "c", "d") for q in qrels}
    pq = scored(qrels, run, ["mrr", "mrr@10"])
    assert [pq[q]["mrr"] for q in qrels] == [1 / 3, 1.0, 1 / 2]
    means = evaluate(qrels, run, ["mrr", "mrr@10"])
    assert means["mrr"] == means["mrr@10"] == pytest.approx(0.6111, abs=5e-5)
    assert means["mrr"] == pytest.approx((1 / 3 + 1 + 1 / 2) / 3, rel=1e-12)


def test_design_hit_rate_and_mrr_two_of_three_found():
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"z": 1}}
    run = {q: ranked("a", "b", "c", "d", "e") for q in qrels}
    means = evaluate(qrels, run, ["hit_rate@5", "mrr@5", "mrr"])
    assert means["hit_rate@5"] == pytest.approx(0.6667, abs=5e-5)
    assert means["mrr@5"] == means["mrr"] == pytest.approx(0.4444, abs=5e-5)
    assert means["mrr"] == pytest.approx((1 + 1 / 3 + 0) / 3, rel=1e-12)
    scored(qrels, run, ["hit_rate@5", "mrr@5", "mrr"])


def test_design_recall_3_of_5_in_top_10():
    docs = [f"d{i:02d}" for i in range(20)]
    qrels = {"q": {"d01": 1, "d04": 2, "d09": 1, "d12": 1, "missing": 1}}
    pq = scored(qrels, {"q": ranked(*docs)}, ["recall@10"])
    assert pq["q"]["recall@10"] == pytest.approx(0.6, abs=1e-15)


# ----------------------------------------------------------------------------- every metric by hand
# One query: grades by rank [2, 0, 1, -1, 3, unjudged]; one relevant doc (d9) never retrieved.
HAND_QRELS = {"q": {"d1": 2, "d2": 0, "d3": 1, "d4": -1, "d5": 3, "d9": 1}}
HAND_RUN = {"q": ranked("d1", "d2", "d3", "d4", "d5", "d6")}
R = 4  # relevant: d1, d3, d5, d9
IDEAL = [3, 2, 1, 1]


def _dcg(gains):
    return sum(g / lg(r) for r, g in enumerate(gains, 1))


HAND_EXPECTED = {
    "hit_rate@1": 1.0,
    "hit_rate@3": 1.0,
    "hit_rate": 1.0,
    "mrr@2": 1.0,
    "mrr": 1.0,
    "precision@1": 1.0,
    "precision@3": 2 / 3,
    "precision@10": 3 / 10,  # fewer retrieved than k: still divided by k
    "recall@3": 2 / R,
    "recall": 3 / R,
    "ndcg@3": _dcg([2, 0, 1]) / _dcg(IDEAL[:3]),
    "ndcg": _dcg([2, 0, 1, 0, 3, 0]) / _dcg(IDEAL),  # the negative grade gains 0
    "ndcg_exp@3": _dcg([3, 0, 1]) / _dcg([7, 3, 1]),
    "ndcg_exp": _dcg([3, 0, 1, 0, 7, 0]) / _dcg([7, 3, 1, 1]),
    "map@3": (1 / 1 + 2 / 3) / R,
    "map": (1 / 1 + 2 / 3 + 3 / 5) / R,
    "r_precision": 2 / R,  # top 4 hold d1, d3
}


def test_every_metric_by_hand():
    pq = scored(HAND_QRELS, HAND_RUN)
    for name, want in HAND_EXPECTED.items():
        assert pq["q"][name] == pytest.approx(want, rel=1e-12, abs=1e-15), name


def test_first_relevant_below_the_cutoff():
    qrels = {"q": {"c": 1, "e": 2}}
    pq = scored(qrels, {"q": ranked("a", "b", "c", "d", "e")})["q"]
    assert pq["hit_rate@1"] == 0.0 and pq["hit_rate@3"] == 1.0 and pq["hit_rate"] == 1.0
    assert pq["mrr@2"] == 0.0 and pq["mrr"] == 1 / 3
    assert pq["precision@1"] == 0.0 and pq["precision@3"] == 1 / 3 and pq["precision@10"] == 2 / 10
    assert pq["recall@3"] == 1 / 2 and pq["recall"] == 1.0
    assert pq["map@3"] == pytest.approx((1 / 3) / 2, rel=1e-12)
    assert pq["map"] == pytest.approx((1 / 3 + 2 / 5) / 2, rel=1e-12)
    assert pq["r_precision"] == 0.0  # top 2 hold neither
    assert pq["ndcg@3"] == pytest.approx((1 / lg(3)) / (2 + 1 / lg(2)), rel=1e-12)
    assert pq["ndcg_exp"] == pytest.approx((1 / lg(3) + 3 / lg(5)) / (3 + 1 / lg(2)), rel=1e-12)


def test_r_precision_when_fewer_retrieved_than_relevant():
    qrels = {"q": {d: 1 for d in "abcde"}}
    pq = scored(qrels, {"q": ranked("a", "x", "b")}, ["r_precision", "recall", "precision@5"])["q"]
    assert pq == {"r_precision": 2 / 5, "recall": 2 / 5, "precision@5": 2 / 5}


def test_cutoff_beyond_the_ideal_and_the_ranking():
    qrels = {"q": {"a": 2, "b": 1}}
    pq = scored(qrels, {"q": ranked("b", "a")}, ["ndcg@100", "ndcg", "map@100", "precision@100"])["q"]
    want = (1 + 2 / lg(2)) / (2 + 1 / lg(2))
    assert pq["ndcg@100"] == pq["ndcg"] == pytest.approx(want, rel=1e-12)
    assert pq["map@100"] == 1.0 and pq["precision@100"] == 2 / 100


def test_mean_is_over_judged_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
    run = {q: ranked("a", "b", "c", "d") for q in qrels}
    means = evaluate(qrels, run, ["mrr", "hit_rate@2"])
    assert means["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, rel=1e-12)
    assert means["hit_rate@2"] == 0.5


# ----------------------------------------------------------------------------- ties
def test_score_ties_go_to_the_larger_doc_id():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "c": 1.0, "b": 1.0}}
    assert scored(qrels, run, ["mrr"])["q"]["mrr"] == 1 / 3  # c, b, a
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["c", "b", "a"]


def test_ties_compare_strings_not_numbers():
    # "9" > "10" > "1" as strings (trec_eval's strcmp); numerically it would be 10, 9, 1
    run = {"q": {"1": 0.5, "10": 0.5, "9": 0.5, "2": 0.7}}
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["2", "9", "10", "1"]
    pq = scored({"q": {"10": 1}}, run, ["mrr", "precision@2", "precision@3"])["q"]
    assert pq == {"mrr": 1 / 3, "precision@2": 0.0, "precision@3": 1 / 3}


def test_ties_use_code_point_order():
    # uppercase sorts before lowercase, non-ASCII after both (== UTF-8 byte order)
    run = {"q": {"B": 1.0, "a": 1.0, "é": 1.0, "Z": 1.0}}
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["é", "a", "Z", "B"]
    pq = scored({"q": {"Z": 1, "é": 2}}, run, ["mrr", "ndcg@2"])["q"]
    assert pq["mrr"] == 1.0
    assert pq["ndcg@2"] == pytest.approx(2 / (2 + 1 / lg(2)), rel=1e-12)


def test_ties_only_break_within_equal_scores():
    run = {"q": {"a": 3.0, "z": 1.0, "m": 2.0, "y": 2.0, "b": 3.0}}
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["b", "a", "y", "m", "z"]
    pq = scored({"q": {"m": 1}}, run, ["mrr"])["q"]
    assert pq["mrr"] == 1 / 4


def test_scores_equal_in_float32_tie_as_in_trec_eval():
    # trec_eval keeps scores as C float: 1.0 and 1.0 + 1e-9 are a tie there, broken by doc id
    run = {"q": {"a": 1.0 + 1e-9, "b": 1.0, "c": 1.0 + 1e-6}}
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["c", "b", "a"]
    assert scored({"q": {"a": 1}}, run, ["mrr"])["q"]["mrr"] == 1 / 3
    assert dict(Run.from_dict(run).ranking("q"))["a"] == 1.0 + 1e-9  # the stored score keeps float64
    tiny = {"q": {"a": 0.0, "b": -6e-211}}  # both round to zero
    assert [d for d, _ in Run.from_dict(tiny).ranking("q")] == ["b", "a"]


def test_negative_and_mixed_scores_rank_descending():
    run = {"q": {"a": -0.5, "b": 0.0, "c": -2.0, "d": 1e-300}}
    assert [d for d, _ in Run.from_dict(run).ranking("q")] == ["d", "b", "a", "c"]
    assert scored({"q": {"a": 1}}, run, ["mrr"])["q"]["mrr"] == 1 / 3


def test_input_order_does_not_matter():
    qrels = {"q": {"a": 2, "b": 1, "x": 3}}
    items = [("a", 1.0), ("b", 1.0), ("c", 2.0), ("d", 0.5), ("x", 0.5)]
    base = scored(qrels, {"q": dict(items)})
    assert scored(qrels, {"q": dict(reversed(items))}) == base
    assert scored(qrels, {"q": dict(items[2:] + items[:2])}) == base


# ----------------------------------------------------------------------------- duplicates
def test_duplicate_doc_keeps_its_first_occurrence_and_is_counted():
    qrels = {"q": {"a": 1}}
    # the second "a" would rank first; the first one (score 0.1) is kept
    run = Run.from_lists({"q": [("b", 0.9), ("a", 0.1), ("a", 2.0), ("b", 5.0)]})
    assert run.ranking("q") == [("b", 0.9), ("a", 0.1)]
    assert run.duplicates_dropped == 2
    ev = evaluate_run(qrels, run, ["mrr", "precision@2"])
    assert ev.per_query() == {"q": {"mrr": 0.5, "precision@2": 0.5}}
    assert ev.counts["duplicates_dropped"] == 2
    # the list-of-pairs shape through the public API goes the same way
    assert evaluate(qrels, {"q": [("b", 0.9), ("a", 0.1), ("a", 2.0)]}, ["mrr"]) == {"mrr": 0.5}


def test_duplicate_in_arrays_counts_per_extra_copy():
    run = Run(["q1", "q2"], ["a", "b"], np.array([[0, 0, 0], [1, 0, 1]]), np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]))
    assert run.duplicates_dropped == 3
    assert run.ranking("q1") == [("a", 3.0)]
    assert run.ranking("q2") == [("a", 2.0), ("b", 1.0)]


# ----------------------------------------------------------------------------- query accounting
def test_query_missing_from_run_scores_zero_and_stays_in_the_mean():
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": ranked("a")}
    pq = scored(qrels, run)
    assert set(pq) == {"q1", "q2"}
    assert all(v == 0.0 for v in pq["q2"].values())
    assert evaluate(qrels, run, ["mrr", "ndcg@3"]) == {"mrr": 0.5, "ndcg@3": 0.5}
    ev = evaluate_dicts(qrels, run, ["mrr"])
    assert ev.counts["missing_from_run"] == 1 and ev.counts["queries"] == 2
    assert evaluate_run(qrels, Run.from_dict(run), ["mrr"]).counts == ev.counts


def test_query_with_empty_ranking_counts_as_missing():
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": ranked("a"), "q2": {}}
    assert evaluate(qrels, run, ["mrr"]) == {"mrr": 0.5}
    assert evaluate_dicts(qrels, run, ["mrr"]).counts["missing_from_run"] == 1
    assert evaluate_run(qrels, Run.from_dict(run), ["mrr"]).counts["missing_from_run"] == 1


def test_run_queries_not_in_qrels_are_ignored_and_counted():
    qrels = {"q1": {"a": 1}}
    run = {"q1": ranked("b", "a"), "extra1": ranked("a"), "extra2": ranked("a")}
    pq = scored(qrels, run, ["mrr"])
    assert pq == {"q1": {"mrr": 0.5}}
    assert evaluate(qrels, run, ["mrr"]) == {"mrr": 0.5}
    for ev in (evaluate_dicts(qrels, run, ["mrr"]), evaluate_run(qrels, Run.from_dict(run), ["mrr"])):
        assert ev.counts == {
            "queries": 1,
            "missing_from_run": 0,
            "not_in_qrels": 2,
            "no_relevant": 0,
            "duplicates_dropped": 0,
        }


def test_query_with_no_relevant_doc_scores_zero_and_is_counted():
    qrels = {"q1": {"a": 1}, "q2": {"a": 0, "b": -1}, "q3": {}}
    run = {q: ranked("a", "b") for q in qrels}
    pq = scored(qrels, run)
    for q in ("q2", "q3"):
        assert all(v == 0.0 for v in pq[q].values()), q
    assert evaluate(qrels, run, ["hit_rate@1", "ndcg"]) == {"hit_rate@1": 1 / 3, "ndcg": 1 / 3}
    assert evaluate_dicts(qrels, run, ["mrr"]).counts["no_relevant"] == 2
    assert evaluate_run(qrels, Run.from_dict(run), ["mrr"]).counts["no_relevant"] == 2


def test_negative_grades_are_not_relevant_and_gain_zero():
    qrels = {"q": {"a": -1, "b": -3, "c": 1}}
    pq = scored(qrels, {"q": ranked("a", "b", "c")})["q"]
    assert pq["hit_rate@1"] == 0.0 and pq["mrr"] == 1 / 3 and pq["r_precision"] == 0.0
    assert pq["ndcg"] == pytest.approx(1 / lg(3), rel=1e-12)  # IDCG counts only c
    assert pq["ndcg_exp"] == pytest.approx(1 / lg(3), rel=1e-12)
    assert pq["recall"] == 1.0 and pq["map"] == pytest.approx(1 / 3, rel=1e-12)


def test_grade_zero_is_judged_non_relevant():
    pq = scored({"q": {"a": 0, "b": 2}}, {"q": ranked("a", "b")}, ["precision@1", "ndcg", "ndcg_exp"])["q"]
    assert pq["precision@1"] == 0.0
    assert pq["ndcg"] == pytest.approx(1 / lg(2), rel=1e-12) == pq["ndcg_exp"]


def test_empty_run():
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}}
    pq = scored(qrels, {})
    assert all(v == 0.0 for vals in pq.values() for v in vals.values())
    ev = evaluate_dicts(qrels, {}, ALL)
    assert ev.counts["missing_from_run"] == 2
    assert set(evaluate(qrels, {}, ALL).values()) == {0.0}
    empty = Run([], [], np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0)))
    assert evaluate_run(qrels, empty, ALL).per_query() == pq


def test_run_of_depth_zero_for_judged_queries():
    qrels = {"q1": {"a": 1}}
    run = Run(["q1"], ["a"], np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0)))
    assert set(evaluate_run(qrels, run, ALL).means().values()) == {0.0}


def test_no_rounding():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    value = evaluate(qrels, {"q": ranked("x", "a")}, ["precision@3", "recall@3"])
    assert value == {"precision@3": 1 / 3, "recall@3": 1 / 3}


# ----------------------------------------------------------------------------- API shapes and errors
def test_per_query_is_in_qrels_order_and_means_are_floats():
    qrels = {"z": {"a": 1}, "a": {"a": 1}, "m": {"a": 1}}
    pq = evaluate(qrels, {"a": ranked("a")}, ["mrr"], per_query=True)
    assert list(pq) == ["z", "a", "m"]
    means = evaluate(qrels, {"a": ranked("a")}, "mrr,ndcg@10")
    assert list(means) == ["mrr", "ndcg@10"] and all(type(v) is float for v in means.values())


def test_metric_name_spellings():
    qrels, run = HAND_QRELS, HAND_RUN
    got = evaluate(qrels, run, ["P@3", "nDCG@3", "recall_3", "ndcg_cut.3", "success@3", "recip_rank", "Rprec"])
    assert got == {
        "precision@3": HAND_EXPECTED["precision@3"],
        "ndcg@3": HAND_EXPECTED["ndcg@3"],
        "recall@3": HAND_EXPECTED["recall@3"],
        "hit_rate@3": 1.0,
        "mrr": 1.0,
        "r_precision": HAND_EXPECTED["r_precision"],
    }


def test_compiled_qrels_are_reusable_across_runs_and_paths():
    cq = CompiledQrels(HAND_QRELS)
    a = evaluate_run(cq, Run.from_dict(HAND_RUN), ALL).per_query()
    b = evaluate_dicts(cq, HAND_RUN, ALL).per_query()
    c = evaluate(cq, HAND_RUN, ALL, per_query=True)
    assert a == b == c == scored(HAND_QRELS, HAND_RUN)


@pytest.mark.parametrize(
    "qrels, run, metrics, match",
    [
        ({}, {}, ["mrr"], "no judged queries"),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["nope@3"], "valid metrics"),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["precision"], "needs a cutoff"),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@0"], "cutoff must be >= 1"),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ild@10"], "embeddings"),
        ({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["mrr"], "finite"),
        ({"q": {"a": 1}}, {"q": {"a": float("inf")}}, ["mrr"], "finite"),
        ({"q": {"a": 1}}, {"q": [("a", float("nan"))]}, ["mrr"], "finite"),
        ({"q": {"a": 1}}, {"q": [("a", "high")]}, ["mrr"], "not a number"),
        ({"q": {"a": 1}}, [("a", 1.0)], ["mrr"], "mapping"),
        ({"q": {"a": "x"}}, {"q": {"a": 1.0}}, ["mrr"], "integer"),
    ],
)
def test_bad_input_raises_input_error(qrels, run, metrics, match):
    with pytest.raises(InputError, match=match):
        evaluate(qrels, run, metrics)
