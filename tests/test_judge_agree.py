"""``harness judge agree``: kappa, alpha and the confusion matrix against scikit-learn and
krippendorff, tau_AP against a hand computation, Kendall's tau against scipy; per retriever and per
system on real NFCorpus runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
import scipy.stats as scipy_stats
import sklearn.metrics as sk_metrics
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging.agree import Grades, agree, read_grades
from harness.stats.agreement import cohen_kappa, confusion, krippendorff_alpha_ordinal, tau_ap
from tests.conftest import build_tiny_bert, shared


def _reference(a, b):
    """scikit-learn's and krippendorff's figures (NaN where they are undefined)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = sk_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2, 3])
        kq = sk_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
        try:
            al = krippendorff.alpha(reliability_data=[a, b], level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
        except (ValueError, ZeroDivisionError):
            al = float("nan")
    return k, kq, al


def _close(x, y):
    return ((x is None or math.isnan(x)) and math.isnan(y)) or abs(x - y) <= 1e-9


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=60))
def test_kappa_and_alpha_equal_the_libraries(pairs):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    m = confusion(a, b)
    assert m.tolist() == sk_metrics.confusion_matrix(a, b, labels=[0, 1, 2, 3]).tolist()
    k, kq, al = _reference(a, b)
    assert _close(cohen_kappa(m), k)
    assert _close(cohen_kappa(m, "quadratic"), kq)
    assert _close(krippendorff_alpha_ordinal(m), al)


def test_tau_ap_by_hand():
    ref = [4, 3, 2, 1]  # reference ranking s1 s2 s3 s4
    # estimate s2 s1 s3 s4: C(2) = 0/1 (s2 is not above s1), C(3) = 2/2, C(4) = 3/3 -> 2/3 * 2 - 1
    assert tau_ap(ref, [3, 4, 2, 1]) == pytest.approx(1 / 3, abs=1e-12)
    # estimate s1 s2 s4 s3: C(2) = 1, C(3) = 2/2, C(4) = 2/3 -> 2/3 * 8/3 - 1 = 7/9: a swap at the
    # bottom costs less than the same swap at the top (Kendall's tau: 2/3 for both)
    assert tau_ap(ref, [4, 3, 1, 2]) == pytest.approx(7 / 9, abs=1e-12)
    assert scipy_stats.kendalltau(ref, [3, 4, 2, 1]).statistic == pytest.approx(2 / 3)
    assert tau_ap(ref, ref) == 1.0
    assert tau_ap(ref, ref[::-1]) == -1.0
    assert math.isnan(tau_ap([1], [1]))


def test_binary_and_per_retriever_from_the_pool_column(tmp_path):
    pool = tmp_path / "people.csv"
    pool.write_text(
        "query_id,query,doc_id,title,text,retrieved_by,best_rank,grade\n"
        "q1,,d1,,,bm25,1,2\nq1,,d2,,,bm25;dense,1,0\nq1,,d3,,,dense,2,3\nq2,,d4,,,dense,1,1\nq2,,d5,,,bm25,3,\n",
        encoding="utf-8",
    )
    judge = tmp_path / "judge.txt"
    judge.write_text("q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d4 1\nq2 0 d5 3\nq3 0 x 1\n", encoding="utf-8")
    rep = agree(read_grades(pool), read_grades(judge), threshold=1)
    assert rep["n"] == 4 and rep["only_a"] == 0 and rep["only_b"] == 2  # d5 ungraded by people
    assert rep["binary"] == {"threshold": 1, "agreement": 0.5, "base_rate_a": 0.75, "base_rate_b": 0.75}
    assert sorted(rep["by_retriever"]) == ["bm25", "dense"]
    assert rep["by_retriever"]["bm25"]["n"] == 2 and rep["by_retriever"]["dense"]["n"] == 3
    assert rep["by_retriever"]["dense"]["confusion"][3][0] == 1


def test_cli_refuses_a_grade_above_the_scale(tmp_path, capsys):
    a = tmp_path / "a.txt"
    a.write_text("q1 0 d1 4\n", encoding="utf-8")
    assert main(["judge", "agree", str(a), str(a)]) == 2
    assert "above the 0-3 scale" in capsys.readouterr().err


def _nfcorpus_folder(tmp_path: Path, capsys):
    """4 retrievers on NFCorpus test, top 10: bm25, bm25 without stemming or stop words, dense and
    their hybrid. The dense model is the tests' tiny 2-layer BERT (a real encoder, seconds to run;
    docs/judging.md quotes the same measurement with all-MiniLM-L6-v2)."""
    from harness.results import Results
    from harness.results.store import read_runs

    model = build_tiny_bert(tmp_path / "tiny-dense", head=False)
    cfg = tmp_path / "nf.yaml"
    cfg.write_text(
        f"dataset: {{path: {shared('nfcorpus')}, split: test}}\n"
        "metrics: [ndcg@10]\ndepth: 10\nseed: 0\nlatency_queries: 1\nwarmup_queries: 0\nbaseline: bm25\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_plain: {type: bm25, stemmer: null, stopwords: null}\n"
        f"  dense: {{type: dense, model: '{model}', max_length: 64}}\n  hybrid: {{type: hybrid, of: [bm25, dense]}}\n",
        encoding="utf-8",
    )
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "nf"), "--no-progress"]) == 0
    capsys.readouterr()
    return tmp_path / "nf", read_runs(Results.load(tmp_path / "nf"))


def _noisy(grades: dict, seed: int) -> dict:
    """A seeded noisy copy: a quarter of the grades moved by one step (within 0-3), a tenth redrawn."""
    rng = np.random.default_rng(seed)
    out = {}
    for k in sorted(grades):
        g = grades[k]
        u = rng.random()
        if u < 0.1:
            g = int(rng.integers(0, 4))
        elif u < 0.35:
            g = int(np.clip(g + rng.choice([-1, 1]), 0, 3))
        out[k] = g
    return out


def _write_qrels(path: Path, grades: dict) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(grades.items())), encoding="utf-8")
    return path


@pytest.mark.slow
def test_nfcorpus_agreement_equals_the_libraries(tmp_path, capsys):
    """NFCorpus test qrels (grades 1-2) plus the unjudged pairs of a bm25 + dense top-10 pool as 0,
    against a seeded noisy copy; 4 retrievers' nDCG@10 under each, Kendall's tau as scipy's."""
    from harness.judging.pool import pooled

    folder, runs = _nfcorpus_folder(tmp_path, capsys)
    people = read_grades(shared("nfcorpus") / "qrels" / "test.tsv").grades
    assert set(people.values()) == {1, 2}
    pairs = pooled({n: runs[n] for n in ("bm25", "dense")}, Grades(Path("x"), people).qrels(), depth=10)
    assert len(pairs) > 1000
    for q, d, _, _ in pairs:
        people[q, d] = 0
    a = _write_qrels(tmp_path / "people.txt", people)
    b = _write_qrels(tmp_path / "judge.txt", _noisy(people, seed=7))
    assert main(["judge", "agree", str(a), str(b), "--results", str(folder), "--metrics", "ndcg@10",
                 "--format", "json"]) == 0  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    keys = sorted(people)
    ga = [people[k] for k in keys]
    judged = read_grades(b).grades
    gb = [judged[k] for k in keys]
    k, kq, al = _reference(ga, gb)
    assert rep["n"] == len(keys)
    assert rep["confusion"] == sk_metrics.confusion_matrix(ga, gb, labels=[0, 1, 2, 3]).tolist()
    assert abs(rep["kappa"] - k) <= 1e-9 and abs(rep["kappa_quadratic"] - kq) <= 1e-9
    assert abs(rep["alpha"] - al) <= 1e-9
    assert 0.3 < rep["kappa_quadratic"] < 0.95  # noisy, not random
    assert sorted(rep["systems"]) == ["bm25", "bm25_plain", "dense", "hybrid"]
    xa = [rep["systems"][r]["ndcg@10"][0] for r in rep["systems"]]
    xb = [rep["systems"][r]["ndcg@10"][1] for r in rep["systems"]]
    assert abs(rep["tau"]["ndcg@10"] - scipy_stats.kendalltau(xa, xb).statistic) <= 1e-12
    assert rep["tau_ap"]["ndcg@10"] == tau_ap(xa, xb)
    assert {"bm25", "dense", "hybrid", "bm25_plain"} <= set(rep["by_retriever"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=12, unique=True), st.randoms())
def test_tau_ap_bounds_and_extremes(xs, rnd):
    ys = list(xs)
    rnd.shuffle(ys)
    assert tau_ap(xs, xs) == 1.0
    assert tau_ap(xs, [-x for x in xs]) == -1.0
    assert -1.0 <= tau_ap(xs, ys) <= 1.0
    if len(xs) == 2:  # two systems: tau_AP is Kendall's tau
        assert tau_ap(xs, ys) == pytest.approx(scipy_stats.kendalltau(xs, ys).statistic)
