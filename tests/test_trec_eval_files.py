"""trec_eval's own test suite (../shared/data/trec_eval-tests, see its SOURCE.md): our loaders and metrics
reproduce trec_eval's printed output, at its 4 printed decimals, for every measure we share.

trec_eval prints ``measure<TAB>query<TAB>value`` with ``%.4f``; we format our value the same way and
compare the strings. Without ``-c`` trec_eval averages over the queries that are both judged and ranked;
with ``-c`` over every judged query (ours always does the latter, so the former restricts the qrels).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import evaluate_run
from harness.run import Run
from tests.conftest import shared

pytestmark = pytest.mark.slow

_CUT = {
    "P": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "success": "hit_rate",
}
_PLAIN = {"map": "map", "Rprec": "r_precision", "recip_rank": "mrr", "ndcg": "ndcg"}


def ours(measure: str) -> str | None:
    """Our metric name for a trec_eval measure, or None when we do not share it."""
    if measure in _PLAIN:
        return _PLAIN[measure]
    m = re.fullmatch(r"([A-Za-z_]+?)_(\d+)", measure)
    if m and m.group(1) in _CUT:
        return f"{_CUT[m.group(1)]}@{m.group(2)}"
    return None


def expected(path: Path) -> dict[tuple[str, str], str]:
    """``{(measure, query or 'all'): printed value}`` for the measures we share."""
    out = {}
    for line in path.read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        if ours(measure):
            out[(measure, query)] = value
    return out


def folder() -> Path:
    return shared("trec_eval-tests") / "test"


def check(out_file: str, qrels_file: str, run_file: str, *, complete: bool, cut: int | None = None) -> int:
    """Score and compare; returns how many printed values were compared."""
    base = folder()
    want = expected(base / out_file)
    qrels = read_qrels(base / qrels_file)
    run = read_run(base / run_file)
    if cut is not None:
        run = run.cut(cut)
    if not complete:  # trec_eval without -c: only queries both judged and ranked
        qrels = {q: j for q, j in qrels.items() if q in run}
    metrics = sorted({ours(m) for m, _ in want})
    ev = evaluate_run(qrels, run, metrics)
    per_query, means = ev.per_query(), ev.means()
    mismatches = []
    for (measure, query), value in want.items():
        got = means[ours(measure)] if query == "all" else per_query[query][ours(measure)]
        if f"{got:.4f}" != value:
            mismatches.append(f"{measure} {query}: trec_eval {value}, ours {got!r}")
    assert not mismatches, "\n".join(mismatches)
    return len(want)


def num_q(out_file: str) -> int:
    for line in (folder() / out_file).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        if measure == "num_q" and query == "all":
            return int(value)
    raise AssertionError(f"no num_q in {out_file}")


def test_parsing_of_measure_names():
    assert ours("P_5") == "precision@5" and ours("ndcg_cut_23") == "ndcg@23" and ours("map_cut_100") == "map@100"
    assert ours("recall_2000") == "recall@2000" and ours("success_1") == "hit_rate@1" and ours("Rprec") == "r_precision"
    assert ours("Rprec_mult_0.20") is None and ours("relative_P_5") is None and ours("ndcg_rel") is None
    assert ours("gm_map") is None and ours("iprec_at_recall_0.10") is None and ours("set_P") is None


def test_default_measures():
    """``trec_eval qrels.test results.test`` -> out.test (map, Rprec, recip_rank, P_k)."""
    assert check("out.test", "qrels.test", "results.test", complete=False) >= 12


def test_qrels_with_comment_lines():
    """``trec_eval qrels.test.with-comments results.test`` -> out.test too."""
    base = folder()
    with_comments, plain = read_qrels(base / "qrels.test.with-comments"), read_qrels(base / "qrels.test")
    assert with_comments["301"].pop("CR#93E-1860") == plain["301"].pop("CR93E-1860") == 0  # '#' inside a docno
    assert with_comments == plain
    check("out.test", "qrels.test.with-comments", "results.test", complete=False)


def test_all_trec_measures():
    """``trec_eval -m all_trec`` -> out.test.a: adds ndcg, ndcg_cut, map_cut, recall, success."""
    assert check("out.test.a", "qrels.test", "results.test", complete=False) == 43


def test_all_trec_measures_per_query():
    """``-m all_trec -q`` -> out.test.aq, every query."""
    assert check("out.test.aq", "qrels.test", "results.test", complete=False) == 4 * 43


def test_complete_with_a_truncated_run():
    """``-m all_trec -q -c`` on results.trunc (query 302 missing, extra text after column 6) -> out.test.aqc."""
    run = read_run(folder() / "results.trunc")
    assert set(run.query_ids) == {"301", "303"} and len(run.ranking("303")) == 84
    check("out.test.aqc", "qrels.test", "results.trunc", complete=True)
    qrels = read_qrels(folder() / "qrels.test")
    ev = evaluate_run(qrels, run, ["map"])
    assert ev.counts["queries"] == num_q("out.test.aqc") == 3 and ev.counts["missing_from_run"] == 1


def test_complete_and_cut_at_100():
    """``-q -c -M100`` -> out.test.aqcM: trec_eval keeps the top 100 by its own ranking."""
    check("out.test.aqcM", "qrels.test", "results.trunc", complete=True, cut=100)


def test_measure_parameters():
    """``-m P.5,7,3 -m recall.20,2000 -mndcg_cut.10,20,23.4 -msuccess.2,5,20`` -> out.test.meas_params.

    trec_eval reads the cutoff 23.4 as 23."""
    want = expected(folder() / "out.test.meas_params")
    assert {m for m, _ in want} >= {"P_3", "P_7", "recall_2000", "ndcg_cut_23", "success_2", "success_20"}
    check("out.test.meas_params", "qrels.test", "results.test", complete=False)


def test_comment_test_files():
    """TREC 2024 RAG qrels (grades 0-3, '#' inside doc ids) and a run with 301 queries, 31 of them judged."""
    base = folder()
    qrels = read_qrels(base / "qrels.comment.test")
    assert any("#" in d for j in qrels.values() for d in j)
    run = read_run(base / "results.comment.test")
    ev = evaluate_run({q: j for q, j in qrels.items() if q in run}, run, ["map"])
    assert ev.counts["queries"] == num_q("out.comment.test") == 31
    assert ev.counts["not_in_qrels"] == len(run) - 31
    check("out.comment.test", "qrels.comment.test", "results.comment.test", complete=False)


def test_ties_and_padded_scores_in_results_test():
    """results.test pads scores with spaces and has score ties: trec_eval's order is ours."""
    run = read_run(folder() / "results.test")
    assert len(run) == 3 and set(run.lengths.tolist()) == {500}
    for q in run.query_ids:
        ranking = run.ranking(q)
        for (d1, s1), (d2, s2) in itertools.pairwise(ranking):
            assert s1 > s2 or (s1 == s2 and d1 > d2)


def test_run_to_dict_round_trip_matches():
    base = folder()
    run = read_run(base / "results.test")
    again = Run.from_dict(run.to_dict())
    assert [again.ranking(q) for q in run.query_ids] == [run.ranking(q) for q in run.query_ids]
