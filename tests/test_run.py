"""``Run``: canonical order (score desc, ties doc id desc), duplicates, padding, constructors, transforms."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from harness.run import PAD, Run


def docs_of(run: Run, q: str) -> list[str]:
    return [d for d, _ in run.ranking(q)]


def test_arrays_are_sorted_into_canonical_order():
    run = Run(
        ["q1", "q2"],
        ["a", "b", "c", "d"],
        np.array([[0, 1, 2, 3], [3, 2, -1, -1]]),
        np.array([[0.1, 0.9, 0.5, 0.5], [1.0, 2.0, 0.0, 0.0]]),
    )
    assert docs_of(run, "q1") == ["b", "d", "c", "a"]
    assert run.ranking("q2") == [("c", 2.0), ("d", 1.0)]
    assert run.lengths.tolist() == [4, 2]
    assert run.indices[1].tolist() == [2, 3, PAD, PAD]
    assert run.depth == 4 and len(run) == 2


def test_padding_may_sit_anywhere_and_lengths_truncate():
    run = Run(["q"], ["a", "b", "c"], np.array([[-1, 2, -1, 0]]), np.array([[9.0, 1.0, 9.0, 2.0]]))
    assert run.ranking("q") == [("a", 2.0), ("c", 1.0)]
    cut = Run(["q"], ["a", "b", "c"], np.array([[0, 1, 2]]), np.array([[1.0, 3.0, 2.0]]), lengths=np.array([2]))
    assert cut.ranking("q") == [("b", 3.0), ("a", 1.0)]


def test_padding_stays_last_in_tied_rows():
    run = Run(["q"], ["a", "b", "c"], np.array([[-1, 0, -1, 1, 2]]), np.array([[5.0, 1.0, 5.0, 1.0, 1.0]]))
    assert docs_of(run, "q") == ["c", "b", "a"]
    assert run.indices[0].tolist() == [2, 1, 0, PAD, PAD]


def test_ties_at_float32_precision():
    """Scores equal as C floats tie (trec_eval stores scores as float) and go by doc id; scores keep float64."""
    run = Run(["q"], ["a", "b", "c"], np.array([[0, 1, 2]]), np.array([[1.0 + 1e-9, 1.0, 1.0 - 1e-9]]))
    assert run.ranking("q") == [("c", 1.0 - 1e-9), ("b", 1.0), ("a", 1.0 + 1e-9)]
    huge = Run(["q"], ["a", "b"], np.array([[0, 1]]), np.array([[1e301, 1e300]]))  # both overflow to inf in float32
    assert docs_of(huge, "q") == ["b", "a"]


def test_padding_scores_may_be_non_finite():
    run = Run(["q"], ["a"], np.array([[0, -1]]), np.array([[1.0, np.nan]]))
    assert run.ranking("q") == [("a", 1.0)]


def test_ties_by_doc_id_descending_in_code_point_order():
    ids = ["d10", "d9", "D9", "d1", "é", "e"]
    run = Run(["q"], ids, np.array([list(range(6))]), np.zeros((1, 6)))
    assert docs_of(run, "q") == sorted(ids, reverse=True) == ["é", "e", "d9", "d10", "d1", "D9"]


def test_ties_sorted_per_row_independently():
    ids = ["a", "b", "c"]
    run = Run(["q1", "q2"], ids, np.array([[0, 1, 2], [2, 0, 1]]), np.array([[1.0, 1.0, 0.0], [5.0, 1.0, 1.0]]))
    assert docs_of(run, "q1") == ["b", "a", "c"]
    assert docs_of(run, "q2") == ["c", "b", "a"]


def test_duplicates_keep_first_occurrence_in_input_order():
    run = Run(["q"], ["a", "b"], np.array([[1, 0, 1, 0]]), np.array([[0.1, 0.5, 0.9, 0.2]]))
    assert run.ranking("q") == [("a", 0.5), ("b", 0.1)]
    assert run.duplicates_dropped == 2
    lists = Run.from_lists({"q": [("x", 1.0), ("x", 1.0)], "r": [("x", 1.0)]})
    assert lists.duplicates_dropped == 1 and lists.ranking("q") == [("x", 1.0)]


def test_canonical_flag_trusts_the_order():
    run = Run(["q"], ["a", "b"], np.array([[0, 1]]), np.array([[1.0, 2.0]]), canonical=True)
    assert docs_of(run, "q") == ["a", "b"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(query_ids=["q", "q"], indices=[[0], [0]], scores=[[1.0], [1.0]]), "unique"),
        (dict(query_ids=["q"], indices=[[0, 1]], scores=[[1.0]]), "shape"),
        (dict(query_ids=["q", "r"], indices=[[0]], scores=[[1.0]]), "shape"),
        (dict(query_ids=["q"], indices=[0], scores=[1.0]), "shape"),
        (dict(query_ids=["q"], indices=[[0.0]], scores=[[1.0]]), "integers"),
        (dict(query_ids=["q"], indices=[[5]], scores=[[1.0]]), "past the end"),
        (dict(query_ids=["q"], indices=[[0]], scores=[[np.nan]]), "finite"),
        (dict(query_ids=["q"], indices=[[0]], scores=[[-np.inf]]), "finite"),
    ],
)
def test_bad_arrays(kwargs, match):
    with pytest.raises(InputError, match=match):
        Run(doc_ids=["a"], indices=np.asarray(kwargs.pop("indices")), scores=np.asarray(kwargs.pop("scores")), **kwargs)


def test_from_lists_with_a_fixed_vocabulary():
    run = Run.from_lists({"q": [("b", 1.0), ("c", 2.0)]}, doc_ids=["a", "b", "c"], name="bm25")
    assert run.doc_ids.tolist() == ["a", "b", "c"]
    assert run.indices[0, :2].tolist() == [2, 1]
    assert run.name == "bm25"
    with pytest.raises(InputError, match="unknown doc id 'z'"):
        Run.from_lists({"q": [("z", 1.0)]}, doc_ids=["a"])


@pytest.mark.parametrize(
    "rankings, match",
    [
        ({"q": [("a",)]}, "expected \\(doc_id, score\\)"),
        ({"q": ["abc"]}, "expected \\(doc_id, score\\)"),
        ({"q": [("a", None)]}, "not a number"),
        ({"q": [("a", float("inf"))]}, "finite"),
    ],
)
def test_from_lists_bad_items(rankings, match):
    with pytest.raises(InputError, match=match):
        Run.from_lists(rankings)


def test_from_dict_and_coerce_shapes_agree():
    as_dict = {"q1": {"a": 0.5, "b": 0.7}, "q2": {"c": 1.0}}
    a = Run.from_dict(as_dict)
    b = Run.coerce({"q1": [("a", 0.5), ("b", 0.7)], "q2": [("c", 1.0)]})
    c = Run.coerce(as_dict)
    assert a.to_dict() == b.to_dict() == c.to_dict() == as_dict
    assert list(a.items()) == [("q1", [("b", 0.7), ("a", 0.5)]), ("q2", [("c", 1.0)])]
    assert Run.coerce(a) is a
    # integer ids become strings; a generator of pairs is accepted
    d = Run.coerce({1: ((x, s) for x, s in [(7, 1), (8, 2)])})
    assert d.ranking("1") == [("8", 2.0), ("7", 1.0)]


@pytest.mark.parametrize("bad", [[("a", 1.0)], {"q": 3}, {"q": "abc"}])
def test_coerce_rejects_other_shapes(bad):
    with pytest.raises(InputError):
        Run.coerce(bad)


def test_access():
    run = Run.from_dict({"q1": {"a": 0.5, "b": 0.7}})
    assert "q1" in run and "q2" not in run
    assert list(run) == ["q1"]
    assert run["q1"] == [("b", 0.7), ("a", 0.5)]
    assert run.ranking("q2") == []
    with pytest.raises(KeyError):
        run["q2"]
    assert run.doc_pos == {"a": 0, "b": 1}
    assert "queries=1" in repr(run)


def test_cut_subset_with_name():
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"c": 5.0}}, name="x")
    top = run.cut(2)
    assert top.ranking("q1") == [("a", 3.0), ("b", 2.0)] and top.ranking("q2") == [("c", 5.0)]
    assert top.lengths.tolist() == [2, 1] and top.name == "x"
    sub = run.subset(["q2", "q9"])
    assert sub.query_ids == ["q2", "q9"]
    assert sub.ranking("q2") == [("c", 5.0)] and sub.ranking("q9") == [] and sub.lengths.tolist() == [1, 0]
    renamed = run.with_name("y")
    assert renamed.name == "y" and renamed.to_dict() == run.to_dict() and run.name == "x"


def test_metadata_survives_transforms():
    run = Run.from_lists({"q": [("a", 1.0), ("a", 0.5)]})
    assert run.cut(1).duplicates_dropped == 1
    assert run.with_name("n").duplicates_dropped == 1


def test_scores_round_trip_exactly():
    scores = [0.1 + 0.2, 1e-300, -0.0, 123456789.123456789]
    run = Run.from_lists({"q": [(f"d{i}", s) for i, s in enumerate(scores)]})
    assert sorted(s for _, s in run.ranking("q")) == sorted(scores)
