"""harness.gate: the regression rule (drop beyond tolerance AND significant) on synthetic results."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.gate import CheckReport, Tolerances, check
from harness.gate.junit import to_junit
from harness.gate.render import to_markdown, to_text
from harness.results import Results

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

FP = "sha256:" + "a" * 64
METRICS = ("ndcg@10", "recall@100")


def make_results(
    scores: dict[str, dict[str, np.ndarray]], *, fingerprint: str | None = FP, failures=None, qids=None
) -> Results:
    """Results from per-query arrays ``{retriever: {metric: values}}``; summary = their means."""
    per_query, summary = {}, {}
    for name, mets in scores.items():
        n = len(next(iter(mets.values())))
        ids = qids or [f"q{i:03d}" for i in range(n)]
        per_query[name] = {q: {m: float(v[i]) for m, v in mets.items()} for i, q in enumerate(ids)}
        summary[name] = {m: float(np.mean(v)) for m, v in mets.items()}
    dataset = {"name": "syn", "split": "test", "fingerprint": fingerprint} if fingerprint else {}
    # schema 1's nested shape, upgraded by the loader: the helper does not depend on the storage layout
    data = {"manifest": {"dataset": dataset}, "summary": summary, "per_query": per_query, "failures": failures or {}}
    return Results.from_json(data)


def base_scores(n: int = 100, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {m: rng.uniform(0.2, 0.9, n) for m in METRICS}


def row(report: CheckReport, retriever: str, metric: str):
    return next(r for r in report.rows if r.retriever == retriever and r.metric == metric)


def test_same_results_pass():
    res = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    report = check(res, res)
    assert report.exit_code == 0 and not report.failed
    assert {r.verdict for r in report.rows} == {"ok"}
    assert len(report.rows) == 4
    assert all(r.delta == 0 and r.p_value == 1.0 and r.queries == 100 for r in report.rows)
    assert re.match(r"PASS( \(blind on [^)]*\))?: 0 regressions \(4 checks", report.headline()), report.headline()


def test_real_drop_is_a_regression_and_named():
    b = base_scores()
    c = {"ndcg@10": b["ndcg@10"] - 0.05, "recall@100": b["recall@100"].copy()}
    report = check(make_results({"bm25": b}), make_results({"bm25": c}))
    r = row(report, "bm25", "ndcg@10")
    assert r.verdict == "regression" and r.delta == pytest.approx(-0.05) and r.p_value < 0.001
    assert row(report, "bm25", "recall@100").verdict == "ok"
    assert report.exit_code == 1
    assert report.sorted_rows()[0].metric == "ndcg@10"  # regressions first
    md = to_markdown(report)
    assert re.search(r"FAIL( \(blind on [^)]*\))?: 1 regression", md) and "| **REGRESSION** | bm25 | ndcg@10 |" in md
    assert md.index("ndcg@10") < md.index("recall@100")


def test_drop_beyond_tolerance_but_one_query_is_not_significant():
    b = base_scores()
    c = {m: v.copy() for m, v in b.items()}
    c["ndcg@10"][0] -= 0.9 if b["ndcg@10"][0] > 0.9 else b["ndcg@10"][0]  # one query collapses
    c["ndcg@10"][1] = 0.0
    report = check(make_results({"bm25": b}), make_results({"bm25": c}), tolerances=0.005)
    r = row(report, "bm25", "ndcg@10")
    assert r.delta < -0.005 and r.p_value >= 0.05
    assert r.verdict == "not_significant" and report.exit_code == 0


def test_significant_drop_below_tolerance_is_ok():
    b = base_scores()
    c = {m: v - 0.004 for m, v in b.items()}  # every query a little worse: p tiny, delta small
    report = check(make_results({"bm25": b}), make_results({"bm25": c}))
    assert all(r.p_value < 0.001 and r.verdict == "ok" for r in report.rows)
    assert report.exit_code == 0


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=2, max_value=60),
    st.floats(min_value=0.0, max_value=0.05),
    st.integers(min_value=0, max_value=2**31),
)
def test_noise_below_tolerance_never_fails(n, tol, seed):
    rng = np.random.default_rng(seed)
    b = {m: rng.uniform(0, 1, n) for m in METRICS}
    c = {m: v + rng.uniform(-tol, tol, n) for m, v in b.items()}  # per-query noise within the tolerance
    report = check(make_results({"r": b}), make_results({"r": c}), tolerances=tol, permutations=200)
    assert report.exit_code == 0, to_text(report)


def test_improvement_is_reported_not_failed():
    b = base_scores()
    c = {m: v + 0.05 for m, v in b.items()}
    report = check(make_results({"bm25": b}), make_results({"bm25": c}))
    assert {r.verdict for r in report.rows} == {"improved"} and report.exit_code == 0


def test_missing_retriever_and_metric_fail():
    b = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    c = make_results({"bm25": {"ndcg@10": base_scores()["ndcg@10"]}})
    report = check(b, c)
    assert row(report, "bm25", "recall@100").verdict == "missing"
    assert row(report, "bm25", "ndcg@10").verdict == "ok"
    assert {r.verdict for r in report.rows if r.retriever == "dense"} == {"missing"}
    assert report.exit_code == 1
    assert "3 missing" in report.headline()


def test_failed_retriever_fails():
    b = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    c = make_results({"bm25": base_scores()}, failures={"dense": "RuntimeError: out of memory\ntraceback..."})
    report = check(b, c)
    rows = [r for r in report.rows if r.retriever == "dense"]
    assert {r.verdict for r in rows} == {"failed"} and "out of memory" in rows[0].note
    assert "traceback" not in rows[0].note and report.exit_code == 1


def test_new_retriever_and_metric_are_reported_not_failed():
    b = make_results({"bm25": {"ndcg@10": base_scores()["ndcg@10"]}})
    c = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    report = check(b, c)
    new = [r for r in report.rows if r.verdict == "new"]
    assert {(r.retriever, r.metric) for r in new} == {
        ("bm25", "recall@100"),
        ("dense", "ndcg@10"),
        ("dense", "recall@100"),
    }
    assert report.exit_code == 0


def test_changed_dataset_fails_unless_allowed():
    b = make_results({"bm25": base_scores()})
    c = make_results({"bm25": base_scores()}, fingerprint="sha256:" + "b" * 64)
    report = check(b, c)
    assert report.dataset.changed and report.problems and report.exit_code == 1
    assert all(r.verdict == "ok" for r in report.rows)  # the table is still there
    assert "dataset changed" in report.headline()
    allowed = check(b, c, allow_dataset_change=True)
    assert allowed.exit_code == 0 and not allowed.problems
    assert "allowed" in allowed.dataset_line() and "common queries" in allowed.dataset_line()


def test_changed_query_set_compares_common_queries_when_allowed():
    b_scores = base_scores(100)
    b = make_results({"bm25": b_scores})
    c_scores = {m: v[:60] for m, v in b_scores.items()}
    c = make_results({"bm25": c_scores}, fingerprint=None, qids=[f"q{i:03d}" for i in range(60)])
    assert check(b, c).exit_code == 1  # query set differs: a dataset change
    report = check(b, c, allow_dataset_change=True)
    r = row(report, "bm25", "ndcg@10")
    assert (
        r.queries == 60 and r.delta == pytest.approx(0) and r.baseline == pytest.approx(b_scores["ndcg@10"][:60].mean())
    )
    assert report.dataset.common_queries == 60 and report.exit_code == 0


def test_no_common_queries_is_bad_input():
    b = make_results({"bm25": base_scores(10)})
    c = make_results({"bm25": base_scores(10)}, qids=[f"x{i}" for i in range(10)])
    with pytest.raises(InputError, match="no query in common"):
        check(b, c, allow_dataset_change=True)


def test_empty_baseline_is_bad_input():
    with pytest.raises(InputError, match="no scores"):
        check(Results(), make_results({"bm25": base_scores()}))


def test_metric_and_retriever_filters():
    b = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    c = make_results({"bm25": {m: v - 0.1 for m, v in base_scores().items()}, "dense": base_scores(seed=2)})
    report = check(b, c, metrics=["nDCG@10"], retrievers=["dense"])
    assert [(r.retriever, r.metric) for r in report.rows] == [("dense", "ndcg@10")]
    assert report.exit_code == 0
    with pytest.raises(InputError, match=r"metric\(s\) map@5 \(it has: "):
        check(b, c, metrics=["map@5"])
    with pytest.raises(InputError, match=r"retriever.*colbert"):
        check(b, c, retrievers=["colbert"])


def test_tolerances_most_specific_wins(tmp_path):
    path = tmp_path / "tol.yaml"
    path.write_text(
        "default: 0.02\nalpha: 0.01\nmetrics: {nDCG@10: 0.005}\n"
        "retrievers:\n  bm25: {default: 0.03, recall@100: 0.04}\n  dense: {ndcg@10: 0.001}\n"
    )
    tol = Tolerances.load(path)
    assert tol.get("bm25", "recall@100") == 0.04
    assert tol.get("bm25", "ndcg@10") == 0.005  # the metric entry beats the retriever default
    assert tol.get("bm25", "mrr@10") == 0.03
    assert tol.get("dense", "ndcg@10") == 0.001
    assert tol.get("other", "ndcg@10") == 0.005 and tol.get("other", "mrr@10") == 0.02
    res = make_results({"bm25": base_scores()})
    report = check(res, res, tolerances=tol)
    assert report.alpha == 0.01 and row(report, "bm25", "recall@100").tolerance == 0.04
    assert check(res, res, tolerances=tol, alpha=0.1).alpha == 0.1  # explicit alpha wins


@pytest.mark.parametrize(
    "text, match",
    [
        ("defualt: 0.01\n", "unknown key"),
        ("metrics: {ndcg@x: 0.01}\n", "metrics"),
        ("metrics: {ndcg@10: -0.1}\n", "tolerance must be >= 0"),
        ("default: [1\n", "invalid YAML"),
        ("- 1\n", "must be a mapping"),
        ("retrievers: {bm25: {nope@3: 0.1}}\n", "retrievers: bm25: unknown metric"),
    ],
)
def test_bad_tolerances_file(tmp_path, text, match):
    path = tmp_path / "tol.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as e:
        Tolerances.load(path)
    assert str(path) in str(e.value)


def test_t_test_option_and_bad_test_name():
    b = base_scores()
    c = {m: v - 0.05 for m, v in b.items()}
    report = check(make_results({"r": b}), make_results({"r": c}), test="t")
    assert all(r.verdict == "regression" and r.p_value < 1e-6 for r in report.rows)
    assert "t-test" in report.rule()
    with pytest.raises(InputError, match="unknown test"):
        check(make_results({"r": b}), make_results({"r": c}), test="wilcoxon")


def test_summary_only_results_use_the_tolerance_alone():
    b = Results(summary={"bm25": {"ndcg@10": 0.40}})
    c = Results(summary={"bm25": {"ndcg@10": 0.35}})
    report = check(b, c)
    r = row(report, "bm25", "ndcg@10")
    assert r.verdict == "regression" and r.p_value is None and "tolerance only" in r.note


def test_junit_is_valid_and_counts_failures():
    b = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    c = make_results(
        {"bm25": {m: v - 0.05 for m, v in base_scores().items()}, "new": base_scores()},
        failures={"dense": "boom"},
    )
    report = check(b, c)
    root = ET.fromstring(to_junit(report))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(report.rows) + 1  # + the dataset case
    assert int(suite.get("failures")) == 4 == len([c for c in cases if c.find("failure") is not None])
    assert int(suite.get("skipped")) == 2
    failure = next(c for c in cases if c.get("name") == "ndcg@10" and c.get("classname") == "harness.check.bm25")
    assert "regression" in failure.find("failure").get("message")


def test_text_table_lists_failures_first():
    b = make_results({"a": base_scores(), "b": base_scores(seed=3)})
    c = make_results({"a": base_scores(), "b": {m: v - 0.1 for m, v in base_scores(seed=3).items()}})
    text = to_text(check(b, c))
    lines = [ln for ln in text.splitlines() if ln.startswith(("REGRESSION", "ok "))]
    assert lines[0].startswith("REGRESSION") and lines[-1].startswith("ok")
    assert re.search(r"FAIL( \(blind on [^)]*\))?: 2 regressions \(4 checks: 2 ok\)$", text.rstrip()), text[-300:]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_scores_are_bad_input_never_a_verdict(bad):
    b = base_scores()
    c = {m: v.copy() for m, v in b.items()}
    c["ndcg@10"][3] = bad
    current = make_results({"bm25": c})
    current.summary["bm25"]["ndcg@10"] = 0.5  # a finite mean: the per-query value is what is wrong
    with pytest.raises(InputError, match=r"per_query\.bm25\.q003\.ndcg@10: not a finite number"):
        check(make_results({"bm25": b}), current)
    with pytest.raises(InputError, match=r"summary\.bm25\.ndcg@10: not a finite number"):
        check(Results(summary={"bm25": {"ndcg@10": 0.4}}), Results(summary={"bm25": {"ndcg@10": bad}}))


@pytest.mark.parametrize("tol", [float("nan"), float("inf"), -0.01])
def test_non_finite_tolerance_or_alpha_in_the_api(tol):
    res = make_results({"bm25": base_scores()})
    with pytest.raises(InputError, match="tolerance"):
        check(res, res, tolerances=tol)
    with pytest.raises(InputError, match="alpha"):
        check(res, res, alpha=tol)


def test_per_query_scores_on_one_side_only_say_which_side():
    b = make_results({"bm25": base_scores()})
    c = Results(summary={"bm25": {m: float(v.mean()) - 0.05 for m, v in base_scores().items()}})
    report = check(b, c)
    r = row(report, "bm25", "ndcg@10")
    assert r.verdict == "regression" and r.p_value is None
    assert r.note == "no per-query scores in current: tolerance only"


def test_missing_rows_carry_the_baseline_value():
    b = make_results({"bm25": base_scores()})
    c = make_results({"bm25": {"ndcg@10": base_scores()["ndcg@10"]}})
    r = row(check(b, c), "bm25", "recall@100")
    assert r.verdict == "missing" and r.failing and r.baseline == pytest.approx(base_scores()["recall@100"].mean())


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.sampled_from(["baseline", "current"]),
    st.sampled_from(["summary", "per_query"]),
    st.integers(0, 19),
    st.sampled_from(METRICS),
)
def test_any_non_finite_value_anywhere_is_named_never_judged(bad, side, where, q, metric):
    scores = {"baseline": base_scores(20), "current": base_scores(20, seed=5)}
    if where == "per_query":
        scores[side][metric] = scores[side][metric].copy()
        scores[side][metric][q] = bad
        key = f"per_query.bm25.q{q:03d}.{metric}"
    else:
        key = f"summary.bm25.{metric}"
    b, c = make_results({"bm25": scores["baseline"]}), make_results({"bm25": scores["current"]})
    target = b if side == "baseline" else c
    target.summary["bm25"][metric] = bad if where == "summary" else 0.5  # a finite mean: the query is wrong
    with pytest.raises(InputError) as e:
        check(b, c, baseline_label="b.json", current_label="c.json")
    assert str(e.value) == f"{side} {side[0]}.json: {key}: not a finite number"
