"""Properties every metric must have, checked with hypothesis on small adversarial inputs (ties, negative
grades, unjudged docs, empty rankings, queries on one side only)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness import evaluate
from harness.metrics.evaluate import evaluate_run
from harness.run import Run

KS = (1, 2, 3, 5, 10)
CUT_KINDS = ("hit_rate", "mrr", "precision", "recall", "ndcg", "ndcg_exp", "map")
CUT = [f"{kind}@{k}" for kind in CUT_KINDS for k in KS]
UNCUT = ["hit_rate", "mrr", "recall", "ndcg", "ndcg_exp", "map", "r_precision"]
ALL = CUT + UNCUT

DOCS = [f"d{i}" for i in range(12)] + ["10", "9", "Z"]
QUERIES = ["q1", "q2", "q3", "q4"]
SETTINGS = settings(max_examples=80, deadline=None)

grades = st.integers(-2, 3)
scores = st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]) | st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
qrels_st = st.dictionaries(st.sampled_from(QUERIES), st.dictionaries(st.sampled_from(DOCS), grades), min_size=1)
run_st = st.dictionaries(st.sampled_from(QUERIES), st.dictionaries(st.sampled_from(DOCS), scores))


def per_query(qrels, run, metrics=ALL):
    return evaluate(qrels, run, metrics, per_query=True)


@SETTINGS
@given(qrels_st, run_st)
def test_every_metric_is_between_0_and_1(qrels, run):
    for q, vals in per_query(qrels, run).items():
        for name, v in vals.items():
            assert 0.0 <= v <= 1.0 + 1e-12, (q, name, v)


@SETTINGS
@given(qrels_st, run_st)
def test_dict_path_equals_array_path(qrels, run):
    dict_path = per_query(qrels, run)
    array_path = evaluate_run(qrels, Run.from_dict(run), ALL).per_query()
    lists_path = evaluate(qrels, {q: list(r.items()) for q, r in run.items()}, ALL, per_query=True)
    assert dict_path == array_path == lists_path


@SETTINGS
@given(qrels_st, run_st, st.randoms(use_true_random=False))
def test_input_order_changes_nothing(qrels, run, rnd):
    def shuffled(d):
        items = list(d.items())
        rnd.shuffle(items)
        return dict(items)

    base = per_query(qrels, run)
    again = per_query(shuffled(qrels), {q: shuffled(r) for q, r in shuffled(run).items()})
    assert again == base  # same values per query (keys follow the qrels order)
    assert Run.from_dict(run).to_dict() == Run.from_dict({q: shuffled(r) for q, r in run.items()}).to_dict()


@SETTINGS
@given(qrels_st, run_st, st.integers(-3, 3))
def test_scaling_scores_by_a_power_of_two_changes_nothing(qrels, run, e):
    scaled = {q: {d: s * 2.0**e for d, s in r.items()} for q, r in run.items()}
    assert per_query(qrels, scaled) == per_query(qrels, run)


@SETTINGS
@given(qrels_st, run_st, st.integers(1, 6))
def test_appending_below_rank_k_changes_no_metric_at_k(qrels, run, extra):
    judged = [d for j in qrels.values() for d in j]
    longer = {}
    for q, r in run.items():
        low = min(r.values(), default=0.0) - 1000.0
        pool = [d for d in DOCS + judged if d not in r]
        longer[q] = {**r, **{d: low - i for i, d in enumerate(pool[:extra])}}
    before, after = per_query(qrels, run, CUT), per_query(qrels, longer, CUT)
    for q in before:
        depth = len(run.get(q, {}))
        for k in KS:
            if k <= depth:  # only docs after rank k were added
                for kind in CUT_KINDS:
                    assert after[q][f"{kind}@{k}"] == before[q][f"{kind}@{k}"], (q, kind, k)


@SETTINGS
@given(qrels_st, run_st, st.integers(1, 4), st.booleans())
def test_unjudged_docs_never_raise_a_metric(qrels, run, n, on_top):
    """Unjudged docs added above the ranking can only lower a metric; added below, they change nothing."""
    fresh = [f"unjudged{i}" for i in range(n)]
    changed = {}
    for q, r in run.items():
        edge = (max(r.values(), default=0.0) + 1000.0) if on_top else (min(r.values(), default=0.0) - 1000.0)
        changed[q] = {**r, **{d: edge + (i if on_top else -i) for i, d in enumerate(fresh)}}
    before, after = per_query(qrels, run), per_query(qrels, changed)
    for q in before:
        for name in ALL:
            if on_top:
                assert after[q][name] <= before[q][name] + 1e-15, (q, name)
            else:
                assert after[q][name] == pytest.approx(before[q][name], abs=1e-15), (q, name)


@SETTINGS
@given(qrels_st)
@example({"q1": dict.fromkeys(DOCS[:13], 1)})  # 13 relevant documents: the draw that needed recall@13
@example({"q1": dict.fromkeys(DOCS, 3)})  # every document the strategy can draw, all relevant
def test_perfect_ranking_scores_one(qrels):
    # judged docs by grade descending, then everything else: the ideal ranking
    run = {q: {d: float(g) for d, g in j.items()} for q, j in qrels.items()}
    # every cutoff a query can need: r relevant documents, up to every document the strategy draws from
    depths = range(1, len(DOCS) + 1)
    pq = per_query(qrels, run, ALL + [f"recall@{k}" for k in depths] + [f"precision@{k}" for k in depths])
    for q, j in qrels.items():
        r = sum(1 for g in j.values() if g >= 1)
        vals = pq[q]
        if r == 0:
            assert set(vals.values()) == {0.0}
            continue
        for name in ("ndcg", "ndcg_exp", "map", "r_precision", "mrr", "hit_rate", "recall", f"recall@{r}"):
            assert vals[name] == pytest.approx(1.0, rel=1e-12), (q, name)
        for k in KS:
            assert vals[f"ndcg@{k}"] == pytest.approx(1.0, rel=1e-12)
            assert vals[f"map@{k}"] == pytest.approx(min(k, r) / r, rel=1e-12)
        for k in range(1, r + 1):
            assert vals[f"precision@{k}"] == 1.0


@SETTINGS
@given(qrels_st, run_st)
def test_relations_between_metrics(qrels, run):
    depths = range(1, len(DOCS) + 1)  # tied to the strategy's documents, not a number that can fall behind it
    pq = per_query(qrels, run, ALL + [f"precision@{k}" for k in depths] + [f"recall@{k}" for k in depths])
    for q, v in pq.items():
        r = sum(1 for g in qrels[q].values() if g >= 1)
        for k in KS:
            assert v[f"hit_rate@{k}"] >= v[f"mrr@{k}"] >= v[f"hit_rate@{k}"] / k
            assert v[f"map@{k}"] <= v["map"] + 1e-15 and v[f"ndcg@{k}"] <= 1.0
            if r:  # rel_k counted two ways
                assert v[f"precision@{k}"] * k == pytest.approx(v[f"recall@{k}"] * r, abs=1e-12)
        for a, b in itertools.pairwise(KS):  # non-decreasing in k
            for kind in ("hit_rate", "mrr", "recall", "map"):
                assert v[f"{kind}@{a}"] <= v[f"{kind}@{b}"] + 1e-15, (q, kind, a, b)
        assert v["mrr"] == v["mrr@10"] or len(run.get(q, {})) > 10
        if r and r <= len(DOCS):
            assert v["r_precision"] == pytest.approx(v[f"precision@{r}"], abs=1e-15)
        assert v["hit_rate"] == float(v["mrr"] > 0)


@SETTINGS
@given(qrels_st, run_st)
def test_means_are_means_of_per_query_values(qrels, run):
    pq = per_query(qrels, run)
    means = evaluate(qrels, run, ALL)
    for name in ALL:
        assert means[name] == pytest.approx(float(np.mean([pq[q][name] for q in qrels])), abs=1e-15)


@SETTINGS
@given(qrels_st, run_st, st.integers(1, 12))
def test_cut_run_scores_like_the_metric_at_k(qrels, run, k):
    """Evaluating the top k of each ranking equals the metric at k (cutoff metrics only read the top k)."""
    full = Run.from_dict(run)
    at_k = evaluate_run(qrels, full, [f"{kind}@{k}" for kind in CUT_KINDS]).per_query()
    cut = evaluate_run(qrels, full.cut(k), [f"{kind}@{k}" for kind in CUT_KINDS]).per_query()
    assert at_k == cut


# judged@k and hits@k (tests/test_metric_registry.py has their references): the invariants that hold for them
ADDED = [f"{kind}@{k}" for kind in ("judged", "hits") for k in KS] + ["judged", "hits"]


@SETTINGS
@given(qrels_st, run_st, st.integers(1, 12))
def test_judged_and_hits_paths_agree_and_read_only_the_top_k(qrels, run, k):
    full = Run.from_dict(run)
    names = [*ADDED, f"judged@{k}", f"hits@{k}", f"precision@{k}"]
    arr = evaluate_run(qrels, full, names).per_query()
    assert evaluate(qrels, run, names, per_query=True) == arr
    cut = evaluate_run(qrels, full.cut(k), [f"judged@{k}", f"hits@{k}"]).per_query()
    for q, vals in arr.items():
        assert cut[q] == {f"judged@{k}": vals[f"judged@{k}"], f"hits@{k}": vals[f"hits@{k}"]}
        assert 0.0 <= vals[f"judged@{k}"] <= 1.0
        assert vals[f"hits@{k}"] == round(vals[f"precision@{k}"] * k)  # hits is P@k's numerator
        assert vals["hits"] == vals[f"hits@{max(KS)}"] or len(run.get(q, {})) > max(KS)


JUDGED = ["judged@1", "judged@3", "judged@10", "judged", "bpref", "ndcg@3", "map", "recall@5"]
wide_scores = scores | st.sampled_from([1e39, -1e39, 3.4028235e38, 3.4028236e38, 1.0000000001, 1.0000000002])


@SETTINGS
@given(qrels_st, st.dictionaries(st.sampled_from(QUERIES), st.dictionaries(st.sampled_from(DOCS), wide_scores)))
def test_dict_path_equals_array_path_on_judged_metrics_and_float32_ties(qrels, run):
    """The dict path places each judged document by counting the float32 keys above it (ties to the
    larger doc id): the same ranks as the array path's sort, beyond float32's range and for judged@k
    and bpref, which read every judged document (grade 0 and negatives too)."""
    dict_path = per_query(qrels, run, JUDGED)
    array_path = evaluate_run(qrels, Run.from_dict(run), JUDGED).per_query()
    assert dict_path == array_path
