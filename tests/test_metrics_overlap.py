"""check_overlap: a run scored against the wrong judgments is refused (or flagged) before scoring."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import InputError
from harness.metrics.evaluate import CompiledQrels, check_overlap, evaluate_run
from harness.run import Run

QRELS = {f"q{i}": {f"d{i}": 1, f"n{i}": 0} for i in range(10)}


def both(run_dict: dict) -> list:
    """The same run as a dict and as a Run (each path of check_overlap)."""
    return [run_dict, Run.from_dict(run_dict)]


@pytest.mark.parametrize("run", both({"x1": {"d1": 1.0}, "x2": {"d2": 1.0}}))
def test_no_common_query_is_refused_naming_both_files(run):
    with pytest.raises(InputError) as e:
        check_overlap(QRELS, run, run_label="bm25.trec", qrels_label="qrels/test.tsv")
    msg = str(e.value)
    assert msg.startswith("run bm25.trec shares no query ids with qrels qrels/test.tsv")
    assert "'x1'" in msg and "'q0'" in msg  # examples of each side


@pytest.mark.parametrize("run", both({"q1": {"other1": 2.0, "other2": 1.0}, "q2": {"other3": 1.0}, "zz": {"d5": 1.0}}))
def test_no_judged_document_retrieved_is_refused(run):
    # d5 is judged (for q5) and retrieved, but by a query the qrels do not judge: it does not count
    with pytest.raises(InputError, match="retrieves none of the documents judged in qrels Q") as e:
        check_overlap(QRELS, run, run_label="R", qrels_label="Q")
    assert "'other" in str(e.value) and "'d1'" in str(e.value)


@pytest.mark.parametrize("run", both({"q1": {"n1": 1.0}}))
def test_a_judged_non_relevant_document_is_overlap(run):
    """Grade 0 is a judgment: the run is about these qrels, it just finds nothing relevant."""
    warning = check_overlap(QRELS, run, run_label="R", qrels_label="Q")
    assert warning is not None and "ranks 1 of the 10 queries judged in qrels Q (10%)" in warning


@pytest.mark.parametrize("run", both({f"q{i}": {f"d{i}": 1.0, "zz": 0.5} for i in range(4)}))
def test_partial_overlap_warns_with_counts(run):
    warning = check_overlap(QRELS, run, run_label="bm25.trec", qrels_label="qrels.txt")
    assert warning == (
        "run bm25.trec ranks 4 of the 10 queries judged in qrels qrels.txt (40%); "
        "the other 6 score 0 and stay in the mean"
    )
    assert check_overlap(QRELS, run, run_label="a", qrels_label="b", min_share=0.4) is None


@pytest.mark.parametrize("run", both({f"q{i}": {f"d{i}": 1.0} for i in range(6)} | {"extra": {"d1": 1.0}}))
def test_enough_overlap_passes_quietly(run):
    assert check_overlap(CompiledQrels(QRELS), run, run_label="a", qrels_label="b") is None


def test_check_overlap_shares_the_vocabulary_map_with_evaluate_run():
    """On the array path the judged-doc positions computed for the check are the ones scoring reuses."""
    cq = CompiledQrels(QRELS)
    run = Run.from_dict({f"q{i}": {f"d{i}": 1.0} for i in range(10)})
    check_overlap(cq, run, run_label="a", qrels_label="b")
    cached = cq._pos_cache
    assert cached is not None and cached[0] is run.doc_ids
    ev = evaluate_run(cq, run, ["recall@10"])
    assert cq._pos_cache is cached
    assert np.all(ev.values["recall@10"] == 1.0)


def test_list_shaped_runs_are_checked_like_dicts():
    run = {"q1": [("d1", 2.0), ("x", 1.0)]}
    assert "ranks 1 of the 10" in check_overlap(QRELS, run, run_label="a", qrels_label="b")
    with pytest.raises(InputError, match="retrieves none"):
        check_overlap(QRELS, {"q1": [("x", 1.0)]}, run_label="a", qrels_label="b")
