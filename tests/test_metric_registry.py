"""The metric registry: one declaration per metric, everything else derived from it; and the two
metrics added through it, ``judged@k`` and ``hits@k``, hand-computed and against their references.

References:
- ``hits@k`` (ranx: the COUNT of relevant documents in the top k): ranx ``hits@k`` (handed our canonical
  order as strictly decreasing scores, since ranx's tie order is an unstable argsort), and trec_eval's
  ``P.k * k`` through pytrec_eval, on the runs as they are, ties included (trec_eval breaks them as we do).
- ``judged@k`` (ir_measures ``Judged@k``: judged in the top k / min(k, retrieved), any grade counting as
  judged): ir_measures' own provider (canonical order as decreasing scores: it breaks ties by doc id
  ascending, trec_eval descending), and pytrec_eval's ``P.k`` on qrels where every judgment is made
  relevant (so ``P.k * k`` counts judged documents in trec_eval's own tie order), ties included.
"""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import defaults, evaluate, metrics
from harness.errors import InputError
from harness.metrics import parse_metric, parse_metrics, registry, valid_names
from harness.metrics.core import ideal_length
from harness.metrics.evaluate import evaluate_dicts, evaluate_run
from harness.run import Run

# ----------------------------------------------------------------------------- the registry


def test_every_metric_is_declared_once_with_its_formula():
    specs = registry.specs()
    assert {"hit_rate", "mrr", "precision", "recall", "hits", "ndcg", "ndcg_exp", "map", "r_precision"} <= set(specs)
    assert {"judged", "ild"} <= set(specs)
    for kind, s in specs.items():
        assert s.kind == kind and s.formula and s.description, kind
        assert s.cutoff in ("required", "optional", "none")
    # derived views agree with the declarations (KINDS: a deprecated alias for one release)
    with pytest.deprecated_call():
        KINDS = metrics.KINDS
    with pytest.deprecated_call():
        assert list(defaults.METRICS) == metrics.DEFAULT_METRICS
    assert list(KINDS) == list(specs)
    assert KINDS["precision"] == (True, False, specs["precision"].description)
    assert KINDS["r_precision"][:2] == (False, False)
    assert KINDS["ndcg"][:2] == (False, True)
    assert valid_names().split(", ") == [s.pattern for s in specs.values()]
    assert "judged[@k]" in valid_names() and "hits[@k]" in valid_names() and "ild@k" in valid_names()
    assert [k for k, s in specs.items() if s.needs_embeddings] == ["ild"]
    assert parse_metric("ild@10").needs_embeddings and not parse_metric("judged@10").needs_embeddings


def test_aliases_parse_to_their_kind():
    for kind, s in registry.specs().items():
        for alias in s.aliases:
            sample = f"{alias}@5" if s.cutoff != "none" else alias
            assert parse_metric(sample).kind == kind, alias
    assert parse_metric("success@5") == parse_metric("hit_rate@5")  # still the 0/1 rate
    assert parse_metric("hits@5").kind == "hits"  # no longer an alias of hit_rate: ranx's count
    assert parse_metric("Judged@10").name == "judged@10"
    assert parse_metric("judged").k is None


def test_ideal_length_derives_from_the_registry():
    assert ideal_length(parse_metrics("recall@5,judged@3,hits@9"), 50) == 0
    assert ideal_length(parse_metrics("ndcg@10,ndcg_exp@20"), 50) == 20
    assert ideal_length(parse_metrics("ndcg"), 50) == 50


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made in a test vanish after it."""
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    monkeypatch.setattr(registry, "_ALIASES", dict(registry._ALIASES))


def test_adding_a_metric_is_one_function_and_its_registration(scratch_registry):
    @registry.register("last_rel_rank", cutoff="optional", aliases=("lrr",))
    def last_rel_rank(r, k):
        """Rank of the last relevant document in the top k, 0 if none (a toy metric for this test)."""
        kk = r.depth if k is None else min(k, r.depth)
        sel = r.rel_cols < kk
        last = np.zeros(r.nq)
        np.maximum.at(last, r.rel_rows[sel], r.rel_cols[sel] + 1.0)
        return last

    assert "last_rel_rank[@k]" in valid_names()
    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"z": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"y": 1.0}}
    want = {"q1": {"last_rel_rank@2": 1.0, "lrr": 3.0}, "q2": {"last_rel_rank@2": 0.0, "lrr": 0.0}}
    got_dict = evaluate_dicts(qrels, run, ["last_rel_rank@2", "lrr"]).per_query()
    got_arr = evaluate_run(qrels, Run.from_dict(run), ["last_rel_rank@2", "lrr"]).per_query()
    assert (
        got_dict
        == got_arr
        == {q: {"last_rel_rank@2": v["last_rel_rank@2"], "last_rel_rank": v["lrr"]} for q, v in want.items()}
    )


def test_a_metric_is_declared_once(scratch_registry):
    def f(r, k):
        """doc."""

    with pytest.raises(ValueError, match="registered twice"):
        registry.register("ndcg", cutoff="optional")(f)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("new_one", cutoff="optional", aliases=("success",))(f)
    with pytest.raises(ValueError, match="docstring"):
        registry.register("undocumented", cutoff="optional")(lambda r, k: None)
    with pytest.raises(ValueError, match="cutoff"):
        registry.register("x", cutoff="sometimes")(f)


# ----------------------------------------------------------------------------- names and their errors


@pytest.mark.parametrize("name", ["map@٣", "ndcg@²", "P_٥", "recall.１０", "hits@三"])
def test_cutoffs_must_be_ascii_digits(name):
    with pytest.raises(InputError, match="ASCII digits") as e:
        parse_metric(name)
    assert e.value.field == "metrics"
    assert not e.value.message.startswith("metrics")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("ndcg@" + "9" * 5000, "too large"),
        ("foo@3", "unknown metric 'foo@3'"),
        ("precision", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("ndcg@0", ">= 1"),
    ],
)
def test_errors_put_the_field_in_field_not_in_the_message(name, match):
    with pytest.raises(InputError, match=match) as e:
        parse_metric(name)
    assert e.value.field == "metrics"
    assert not e.value.message.lower().startswith("metrics")
    assert str(e.value).startswith("metrics: ") and not str(e.value).startswith("metrics: metrics")


@settings(max_examples=300, deadline=None)
@given(
    st.text() | st.builds(lambda kind, k: f"{kind}@{k}", st.sampled_from(["ndcg", "map", "hits", "judged"]), st.text())
)
def test_any_text_parses_or_is_an_input_error(text):
    """Hostile names (lone surrogates, non-ASCII digits, control characters) never crash the parser."""
    try:
        m = parse_metric(text)
    except InputError as e:
        assert e.field == "metrics" and e.message
        return
    assert m.k is None or (m.k >= 1 and str(m.k).isascii())
    assert parse_metric(m.name) == m


# ----------------------------------------------------------------------------- judged@k and hits@k by hand

QRELS = {
    "q1": {"a": 2, "b": 0, "c": -1, "d": 1},
    "q2": {"e": 1},  # missing from the run
    "q3": {"f": 0},  # f ties with g; g ranks first (doc id descending)
    "q5": {"h": 1, "i": 3},
}
RUN = {
    "q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6, "c": 0.5},  # a x b y c: judged a, b, c; relevant a
    "q3": {"f": 1.0, "g": 1.0},
    "q4": {"a": 1.0},  # not judged: ignored
    "q5": {"i": 2.0, "h": 1.0, "j": 0.5},
}
HAND = {
    "q1": {
        "judged@1": 1.0,
        "judged@2": 1 / 2,
        "judged@3": 2 / 3,
        "judged@5": 3 / 5,
        "judged@10": 3 / 5,
        "judged": 3 / 5,
        "hits@1": 1.0,
        "hits@3": 1.0,
        "hits@10": 1.0,
        "hits": 1.0,
        "hit_rate@3": 1.0,
    },
    "q2": dict.fromkeys(
        [
            "judged@1",
            "judged@2",
            "judged@3",
            "judged@5",
            "judged@10",
            "judged",
            "hits@1",
            "hits@3",
            "hits@10",
            "hits",
            "hit_rate@3",
        ],
        0.0,
    ),
    "q3": {
        "judged@1": 0.0,
        "judged@2": 1 / 2,
        "judged@3": 1 / 2,
        "judged@5": 1 / 2,
        "judged@10": 1 / 2,
        "judged": 1 / 2,
        "hits@1": 0.0,
        "hits@3": 0.0,
        "hits@10": 0.0,
        "hits": 0.0,
        "hit_rate@3": 0.0,
    },
    "q5": {
        "judged@1": 1.0,
        "judged@2": 1.0,
        "judged@3": 2 / 3,
        "judged@5": 2 / 3,
        "judged@10": 2 / 3,
        "judged": 2 / 3,
        "hits@1": 1.0,
        "hits@3": 2.0,
        "hits@10": 2.0,
        "hits": 2.0,
        "hit_rate@3": 1.0,
    },
}


def test_judged_and_hits_by_hand():
    names = list(HAND["q1"])
    got_dict = evaluate(QRELS, RUN, names, per_query=True)
    got_arr = evaluate_run(QRELS, Run.from_dict(RUN), names).per_query()
    assert got_dict == got_arr == HAND  # exact: every value is a small ratio of integers


def test_judged_needs_no_relevant_document_and_counts_every_grade():
    qrels = {"q": {"a": 0, "b": -2, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "z": 1.0}}
    assert evaluate(qrels, run, ["judged@2", "judged@3", "hits@3", "ndcg@3"]) == {
        "judged@2": 1.0,
        "judged@3": 2 / 3,
        "hits@3": 0.0,
        "ndcg@3": 0.0,
    }


def test_judged_alongside_other_metrics_leaves_them_unchanged():
    qrels, run = random_case(5)
    base = ["ndcg@10", "map", "recall@20", "precision@5", "mrr"]
    alone = evaluate_run(qrels, Run.from_dict(run), base).values
    both = evaluate_run(qrels, Run.from_dict(run), [*base, "judged@10"]).values
    for m in base:
        assert np.array_equal(alone[m], both[m]), m


# ----------------------------------------------------------------------------- references on random runs

KS = (1, 2, 3, 5, 10, 20)


def random_case(seed: int, n_queries: int = 120):
    """Judged grades -2..4 (zeros and negatives judged too), heavy score ties, queries missing on either
    side; each judged query has a grade >= 0 (trec_eval crashes on all-negative judgments)."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(40)] + ["10", "9", "B", "a-b", "é"]
    qrels, run = {}, {}
    for i in range(n_queries):
        q = f"q{i}"
        u = rng.random()
        if u > 0.1:
            judged = rng.choice(pool, size=int(rng.integers(1, 20)), replace=False).tolist()
            grades = rng.integers(-2, 5, size=len(judged))
            grades[0] = max(grades[0], 0)
            qrels[q] = dict(zip(judged, grades.tolist()))
        if u < 0.9:
            docs = rng.choice(pool, size=int(rng.integers(0, 30)), replace=False).tolist()
            scores = rng.integers(0, 4, size=len(docs)) / 2.0 if rng.random() < 0.7 else rng.normal(size=len(docs))
            run[q] = dict(zip(docs, np.asarray(scores, dtype=np.float64).tolist()))
    return qrels, run


def canonical_scores(run: dict) -> dict:
    """Our canonical order (trec_eval's) as strictly decreasing scores, for references that break ties
    another way."""
    return {q: {d: float(len(r) - i) for i, (d, _) in enumerate(r)} for q, r in Run.from_dict(run).items() if r}


def ours(qrels: dict, run: dict, names: list[str]) -> dict:
    a = evaluate(qrels, run, names, per_query=True)
    b = evaluate_run(qrels, Run.from_dict(run), names).per_query()
    assert a == b
    return a


@pytest.mark.parametrize("seed", range(4))
def test_hits_agrees_with_pytrec_eval_precision_times_k(seed):
    qrels, run = random_case(seed)
    got = ours(qrels, run, [f"hits@{k}" for k in KS])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{','.join(map(str, KS))}"}).evaluate(run)
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties present
    for q, vals in got.items():
        for k in KS:
            want = round(ref[q][f"P_{k}"] * k) if q in ref else 0.0
            assert vals[f"hits@{k}"] == want, (q, k)


@pytest.mark.parametrize("seed", range(4))
def test_judged_agrees_with_pytrec_eval_on_all_judged_made_relevant(seed):
    qrels, run = random_case(seed)
    got = ours(qrels, run, [f"judged@{k}" for k in KS])
    every_judged_relevant = {q: dict.fromkeys(j, 1) for q, j in qrels.items()}
    ref = pytrec_eval.RelevanceEvaluator(every_judged_relevant, {f"P.{','.join(map(str, KS))}"}).evaluate(run)
    for q, vals in got.items():
        n = len(run.get(q, {}))
        for k in KS:
            want = round(ref[q][f"P_{k}"] * k) / min(k, n) if q in ref and n else 0.0
            assert vals[f"judged@{k}"] == pytest.approx(want, abs=1e-12), (q, k)


@pytest.mark.parametrize("seed", range(4))
def test_judged_agrees_with_ir_measures(seed):
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = random_case(seed)
    got = ours(qrels, run, ["judged", *(f"judged@{k}" for k in KS)])
    measures = [ir_measures.Judged, *(ir_measures.Judged @ k for k in KS)]
    provider = ir_measures.providers.registry["judged"]
    ref: dict[tuple[str, str], float] = {}
    for m in provider.iter_calc(measures, qrels, canonical_scores(run)):
        ref[(m.query_id, str(m.measure).replace("Judged", "judged"))] = m.value
    checked = 0
    for q, vals in got.items():
        for name, v in vals.items():
            if q in canonical_scores(run):
                assert v == pytest.approx(ref[(q, name)], abs=1e-12), (q, name)
                checked += 1
            else:  # ir_measures skips a query the run lacks; ours scores it 0 (trec_eval -c)
                assert v == 0.0
    assert checked > 300


@pytest.mark.slow  # ranx compiles its numba kernels on first use
@pytest.mark.parametrize("seed", range(3))
def test_hits_agrees_with_ranx(seed):
    import warnings

    ranx = pytest.importorskip("ranx")
    qrels, run = random_case(seed)
    got = ours(qrels, run, [f"hits@{k}" for k in KS])
    shaped = canonical_scores(run)
    common = [q for q in qrels if q in shaped and max(qrels[q].values()) >= 1]  # ranx needs a relevant doc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rq = ranx.Qrels({q: qrels[q] for q in common})
        rr = ranx.Run({q: shaped[q] for q in common})
        ranx.evaluate(rq, rr, [f"hits@{k}" for k in KS], save_results_in_run=True)
    for k in KS:
        scores = rr.scores[f"hits@{k}"]
        for q in common:
            assert got[q][f"hits@{k}"] == pytest.approx(scores[q], abs=1e-12), (q, k)


def test_folder_spelling_finds_the_folders_name_of_each_metric_asked_and_names_every_one_it_lacks():
    """The one pick gate, power and the all-pairs tests share: ``NDCG@10`` finds the folder's
    ``ndcg@10``, in the order asked, each once, blanks skipped; every missing name in one line."""
    from harness.metrics.names import folder_spelling

    have = ["ndcg@10", "recall@100", "MRR@10"]
    assert folder_spelling(["Recall@100", "NDCG@10", " ", "ndcg@10", "mrr@10"], have, "x") == [
        "recall@100",
        "ndcg@10",
        "MRR@10",
    ]
    with pytest.raises(InputError) as e:
        folder_spelling(["map@100", "ndcg@10", "P@5"], have, "no per-query scores for metric(s)")
    assert str(e.value).endswith("no per-query scores for metric(s) map@100, P@5 (it has: ndcg@10, recall@100, MRR@10)")
    assert e.value.field == "--metrics"
