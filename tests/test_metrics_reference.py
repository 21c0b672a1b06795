"""Agreement with the reference implementations, per query, to 1e-9.

- pytrec_eval (trec_eval's own C code): every metric we share with trec_eval, on seeded random runs with
  heavy score ties, graded and negative grades, queries missing from either side, queries with nothing
  relevant; and with hypothesis on small adversarial cases. pytrec_eval leaves out judged queries that the
  run lacks (trec_eval without ``-c``); ours score them 0, which is checked separately.
- ranx: ``ndcg_exp@k`` against ``ndcg_burges@k`` (trec_eval has no exponential-gain nDCG), plus ``mrr@k``,
  ``hit_rate@k``, ``precision@k``. ranx sorts a ranking with an unstable argsort, so its tie order is
  arbitrary; it is handed our canonical order as strictly decreasing scores. ranx drops judgments below
  its relevance level (1) and uses graded gains, like ours.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import evaluate
from harness.metrics.evaluate import evaluate_run
from harness.run import Run

KS = (1, 2, 3, 5, 7, 10, 20)
TREC_MEASURES = {
    "ndcg",
    "map",
    "recip_rank",
    "Rprec",
    *(f"{m}.{','.join(map(str, KS))}" for m in ("ndcg_cut", "P", "recall", "map_cut", "success")),
    "recall.1000",
    "success.1000",
}


def _pairs() -> dict[str, str]:
    """Our metric name -> pytrec_eval's result key."""
    out = {"mrr": "recip_rank", "map": "map", "r_precision": "Rprec", "ndcg": "ndcg"}
    out |= {"recall": "recall_1000", "hit_rate": "success_1000"}  # uncut == cut at 1000 for runs this short
    cut = {"hit_rate": "success_{k}", "precision": "P_{k}", "recall": "recall_{k}", "ndcg": "ndcg_cut_{k}"}
    return out | _at_each(KS, cut | {"map": "map_cut_{k}"})


def _at_each(ks, names: dict[str, str]) -> dict[str, str]:
    """``ours@k`` -> the reference's key for every cutoff in ``ks`` (cutoff first, then ``names``'
    order): ``names`` maps our metric to the reference's, ``{k}`` standing for the cutoff."""
    return {f"{ours}@{k}": theirs.format(k=k) for k in ks for ours, theirs in names.items()}


PAIRS = _pairs()
OURS = list(PAIRS) + [f"mrr@{k}" for k in KS]
# doc ids whose string order differs from their numeric or case-folded order
POOL = [f"d{i}" for i in range(30)] + ["10", "9", "1", "D5", "d05", "é", "z", "Z", "a-b", "a_b"]


#: trec_eval (and so pytrec_eval) crashes on a query whose judgments are all negative: form_res_rels.c sizes
#: its grade histogram by max_rel + 1 <= 0. Such queries are scored 0 here (test_metrics_examples); the
#: cases sent to pytrec_eval give every judged query at least one grade >= 0.
TRECEVAL_CRASH = "all-negative judgments"


def random_case(seed: int, n_queries: int = 80) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        q = f"q{i}"
        kind = rng.random()
        if kind > 0.1:  # judged (10%: run only)
            judged = rng.choice(POOL, size=int(rng.integers(0, 15)), replace=False)
            grades = rng.integers(-2, 5, size=len(judged))
            if rng.random() < 0.1:
                grades = np.minimum(grades, 0)  # nothing relevant
            if len(grades) and grades.max() < 0:
                grades[0] = 0  # see TRECEVAL_CRASH
            qrels[q] = dict(zip(judged.tolist(), grades.tolist()))
        if kind < 0.85:  # ranked (15%: missing from the run)
            docs = rng.choice(POOL, size=int(rng.integers(0, 30)), replace=False)
            if rng.random() < 0.7:
                scores = rng.integers(0, 4, size=len(docs)) / 2.0  # heavy ties
            else:
                scores = np.round(rng.normal(size=len(docs)), 1)
            run[q] = dict(zip(docs.tolist(), scores.tolist()))
    qrels = {q: j for q, j in qrels.items() if j} or {"q0": {"d0": 1}}
    return qrels, run


def trec_eval(qrels: dict, run: dict, measures=frozenset(TREC_MEASURES)) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)


def cut_run(run: dict, k: int) -> dict:
    """The top k of each ranking in canonical order (what mrr@k sees)."""
    return {q: dict(r[:k]) for q, r in Run.from_dict(run).items()}


def assert_agrees(qrels: dict, run: dict) -> None:
    ours = evaluate(qrels, run, OURS, per_query=True)
    ours_arr = evaluate_run(qrels, Run.from_dict(run), OURS).per_query()
    ref = trec_eval(qrels, run)
    assert set(ref) == {q for q in qrels if q in run}
    for q, vals in ours.items():
        assert ours_arr[q] == pytest.approx(vals, abs=1e-12), q
        if q not in ref:  # missing from the run: 0 here, absent in trec_eval without -c
            assert set(vals.values()) == {0.0}, q
            continue
        for name, key in PAIRS.items():
            assert vals[name] == pytest.approx(ref[q][key], abs=1e-9), (q, name, run.get(q), qrels[q])
    for k in KS:
        ref_k = trec_eval(qrels, cut_run(run, k), {"recip_rank"})
        for q in ref_k:
            assert ours[q][f"mrr@{k}"] == pytest.approx(ref_k[q]["recip_rank"], abs=1e-9), (q, k)


@pytest.mark.parametrize("seed", range(8))
def test_random_runs_agree_with_pytrec_eval(seed):
    assert_agrees(*random_case(seed))


def test_random_case_covers_the_edge_cases():
    qrels, run = random_case(0)
    assert any(q not in run for q in qrels)
    assert any(q not in qrels for q in run)
    assert any(max(j.values()) <= 0 for j in qrels.values())
    assert any(g < 0 for j in qrels.values() for g in j.values())
    assert any(len(set(r.values())) < len(r) for r in run.values())


def test_scores_tied_only_in_float32_agree_with_pytrec_eval():
    """trec_eval ranks by the score as a C float: float64 scores a few ulps apart there are ties."""
    qrels, run = random_case(11)
    rng = np.random.default_rng(11)
    run = {q: {d: 0.7 + float(rng.integers(0, 40)) * 1e-9 for d in r} for q, r in run.items()}
    assert any(len(set(r.values())) > len({np.float32(v) for v in r.values()}) for r in run.values())
    assert_agrees(qrels, run)


def test_deep_runs_agree_with_pytrec_eval():
    rng = np.random.default_rng(42)
    ids = [f"doc{i}" for i in range(2000)]
    qrels, run = {}, {}
    for i in range(40):
        q = f"q{i}"
        docs = rng.choice(ids, size=int(rng.integers(100, 900)), replace=False).tolist()
        run[q] = dict(zip(docs, (rng.integers(0, 50, size=len(docs)) / 7).tolist()))
        judged = rng.choice(ids, size=int(rng.integers(5, 300)), replace=False).tolist()
        qrels[q] = dict(zip(judged, rng.integers(-1, 4, size=len(judged)).tolist()))
    assert_agrees(qrels, run)


@st.composite
def small_cases(draw):
    docs = st.sampled_from(["a", "b", "c", "d", "e", "f", "10", "9", "B"])
    queries = st.sampled_from(["q1", "q2", "q3"])
    judged = st.dictionaries(docs, st.integers(-2, 4), min_size=1).filter(lambda j: max(j.values()) >= 0)
    qrels = draw(st.dictionaries(queries, judged, min_size=1))  # filter: see TRECEVAL_CRASH
    near_one = st.sampled_from([1.0, 1.0 + 1e-9, 1.0 + 2e-8, 1.0 + 1e-7, 1.0 - 1e-8])  # equal in float32 or not
    score = st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5]) | near_one | st.floats(-1e6, 1e6, allow_nan=False, width=64)
    run = draw(st.dictionaries(queries, st.dictionaries(docs, score)))
    return qrels, run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_small_cases_agree_with_pytrec_eval(case):
    assert_agrees(*case)


@pytest.mark.slow
def test_graded_trec_qrels_agree_with_pytrec_eval():
    """trec_eval's graded qrels (-1..4) against its STANDARD run, through our loaders."""
    from harness.io.trec import read_qrels, read_run
    from tests.conftest import shared

    folder = shared("trec_eval-tests") / "test"
    qrels = read_qrels(folder / "qrels.rel_level")
    run = read_run(folder / "results.test").to_dict()
    assert any(g < 0 for j in qrels.values() for g in j.values()) and any(
        g > 1 for j in qrels.values() for g in j.values()
    )
    assert_agrees(qrels, run)


# ----------------------------------------------------------------------------- ranx
RANX_KS = (1, 3, 5, 10)


def _ranx_shaped(run: dict) -> dict:
    """Our canonical order as strictly decreasing scores (ranx's own tie order is arbitrary)."""
    return {q: {d: float(len(r) - i) for i, (d, _) in enumerate(r)} for q, r in Run.from_dict(run).items() if r}


@pytest.mark.slow  # ranx compiles its numba kernels on first use (about 10-60 s on a fresh install)
@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_ranx(seed):
    import warnings

    from ranx import evaluate as ranx_evaluate

    qrels, run = random_case(seed, n_queries=120)
    ranked = _ranx_shaped(run)
    common = [q for q in qrels if q in ranked]
    qrels_c, run_c = {q: qrels[q] for q in common}, {q: ranked[q] for q in common}
    same = {"mrr": "mrr@{k}", "hit_rate": "hit_rate@{k}", "precision": "precision@{k}"}
    pairs = {"ndcg_exp": "ndcg_burges"} | _at_each(RANX_KS, {"ndcg_exp": "ndcg_burges@{k}"} | same)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        ref = ranx_evaluate(qrels_c, run_c, list(pairs.values()), return_mean=False)
    ours = evaluate(qrels_c, run, list(pairs), per_query=True)
    for i, q in enumerate(common):
        for name, key in pairs.items():
            assert ours[q][name] == pytest.approx(float(ref[key][i]), abs=1e-9), (q, name)


def test_ndcg_exp_by_hand_matches_burges_formula():
    """ndcg_exp without ranx: gain 2^g - 1, ideal from every judged grade, negative grades gain 0."""
    qrels = {"q": {"a": 3, "b": -1, "c": 1, "d": 2, "e": 0}}
    run = {"q": {"b": 5.0, "a": 4.0, "x": 3.0, "c": 2.0}}
    got = evaluate(qrels, run, ["ndcg_exp@3", "ndcg_exp"], per_query=True)["q"]
    disc = [1 / math.log2(r + 1) for r in range(1, 6)]
    dcg = [0, 7, 0, 1]
    ideal = [7, 3, 1]
    assert got["ndcg_exp@3"] == pytest.approx(
        sum(g * w for g, w in zip(dcg[:3], disc)) / sum(g * w for g, w in zip(ideal, disc)), rel=1e-12
    )
    assert got["ndcg_exp"] == pytest.approx(
        sum(g * w for g, w in zip(dcg, disc)) / sum(g * w for g, w in zip(ideal, disc)), rel=1e-12
    )
