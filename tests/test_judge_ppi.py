"""Prediction-powered intervals: ``harness.stats.ppi`` against ``ppi_py`` to 1e-9, the labelled set
(queries people graded in full), ``judge sample``, and the SciFact workflow end to end through
``harness evaluate --auto-qrels`` and ``harness report --auto-qrels``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.judging.pool import read_pool, write_pool
from harness.judging.ppi import split
from harness.judging.sample import draw, sampled_queries
from harness.stats.ppi import classical_mean_ci, ppi_mean_ci
from tests.conftest import shared


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 80), st.integers(1, 300), st.floats(0, 1), st.integers(0, 2**31))
def test_ppi_equals_ppi_py(n, big_n, noise, seed):
    rng = np.random.default_rng(seed)
    y = rng.random(n)
    yhat = np.clip(y + rng.normal(0, noise, n) + 0.05, 0, 1)
    yu = rng.random(big_n)
    iv, lam = ppi_mean_ci(y, yhat, yu, 0.05)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05)
    if np.isnan(lo[0]):  # a constant judge: ppi_py's interval is NaN; the harness's is the classical one
        c = classical_mean_ci(y, 0.05)
        assert lam == 0.0 and (iv.low, iv.high) == (c.low, c.high)
        return
    assert abs(iv.low - lo[0]) <= 1e-9 and abs(iv.high - hi[0]) <= 1e-9
    assert abs(iv.mean - ppi_py.ppi_mean_pointestimate(y, yhat, yu)[0]) <= 1e-9
    c = classical_mean_ci(y, 0.05)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert abs(c.low - lo) <= 1e-9 and abs(c.high - hi) <= 1e-9


def test_a_query_is_labelled_only_when_people_graded_every_pair_the_judge_did():
    judge = {"a": {"d1": 1, "d2": 0}, "b": {"d1": 2, "d3": 0}, "c": {"d1": 1}, "d": {"d9": 1}}
    human = {"a": {"d1": 1, "d2": 1, "x": 0}, "b": {"d1": 2}, "c": {"d1": 1}}
    s = split(human, judge)
    assert s.labelled == ["a", "c"] and s.incomplete == ["b"] and s.unlabelled == ["b", "d"]
    s = split(human, judge, labelled={"a", "d"})  # the sample: c is complete but was not drawn
    assert s.labelled == ["a"] and s.incomplete == ["d"] and s.unlabelled == ["b", "c", "d"]


def test_sample_is_seeded_uniform_and_order_free():
    ids = [f"q{i}" for i in range(50)]
    a = draw(ids, 10, seed=3)
    assert a == draw(list(reversed(ids)), 10, seed=3) and len(set(a)) == 10
    assert a != draw(ids, 10, seed=4)
    counts = {q: 0 for q in ids}
    for s in range(400):
        for q in draw(ids, 10, seed=s):
            counts[q] += 1
    assert min(counts.values()) > 40 and max(counts.values()) < 125  # expected 80 each


def _grade(q: str, d: str, salt: str, p_rel: float) -> int:
    u = int(hashlib.sha256(f"{salt}|{q}|{d}".encode()).hexdigest()[:12], 16) / 16**12
    return 0 if u >= p_rel else 1 + int(u / p_rel * 3) % 3


def scifact_pooled(tmp_path: Path) -> Path:
    """SciFact test run by bm25 and bm25 without stemming or stop words (``tmp_path/sf``), their top
    10 pooled into ``tmp_path/pool.csv``."""
    cfg = tmp_path / "sf.yaml"
    cfg.write_text(
        f"dataset: {{path: {shared('scifact')}, split: test}}\nmetrics: [ndcg@10]\ndepth: 10\nseed: 0\n"
        "latency_queries: 1\nwarmup_queries: 0\nbaseline: bm25\nretrievers:\n  bm25: {type: bm25}\n"
        "  bm25_plain: {type: bm25, stemmer: null, stopwords: null}\n",
        encoding="utf-8",
    )
    folder = tmp_path / "sf"
    assert main(["run", "--config", str(cfg), "--out", str(folder), "--no-progress"]) == 0
    assert main(["pool", str(folder), "--depth", "10", "--out", str(tmp_path / "pool.csv")]) == 0
    return folder


@pytest.mark.slow
def test_scifact_ppi_equals_ppi_py_and_is_narrower(tmp_path, capsys):
    """100 queries drawn by `judge sample` graded by "people" (a seeded rule), a noisy judge for
    every pooled pair; nDCG@10 of bm25 and of their difference with a second bm25."""
    from harness.io.trec import read_qrels
    from harness.metrics.evaluate import CompiledQrels, evaluate_run
    from harness.results import Results
    from harness.results.store import read_runs

    folder = scifact_pooled(tmp_path)
    assert main(["judge", "sample", str(tmp_path / "pool.csv"), "--queries", "100", "--seed", "11",
                 "--out", str(tmp_path / "sample.csv")]) == 0  # fmt: skip
    capsys.readouterr()
    sample = read_pool(tmp_path / "sample.csv")
    drawn = sampled_queries(tmp_path / "sample.csv")
    assert len(drawn) == 100 and {r.query_id for r in sample} == set(drawn)
    base = read_qrels(folder / "qrels.tsv")
    # "people" grade the sample in full; a judge that agrees with them most of the time grades the pool
    truth = {(r.query_id, r.doc_id): _grade(r.query_id, r.doc_id, "truth", 0.5 / r.best_rank**0.5)
             for r in read_pool(tmp_path / "pool.csv")}  # fmt: skip
    for r in sample:
        r.grade = truth[r.query_id, r.doc_id]
    write_pool(tmp_path / "sample.csv", sample)

    def noisy(k):
        g = truth[k]
        return g if _grade(*k, "noise", 0.25) == 0 else _grade(*k, "judge", 0.4)

    human = {q: dict(j) for q, j in base.items()}
    for r in sample:
        human[r.query_id][r.doc_id] = r.grade
    judge = {q: dict(j) for q, j in base.items()}
    for q, d in truth:
        judge[q][d] = noisy((q, d))
    for name, qrels in (("human.txt", human), ("judge.txt", judge)):
        (tmp_path / name).write_text(
            "".join(f"{q} 0 {d} {g}\n" for q in sorted(qrels) for d, g in sorted(qrels[q].items())), encoding="utf-8"
        )
    runs = read_runs(Results.load(folder))
    trec = {n: str(folder / Results.load(folder).run_files[n]["file"]) for n in runs}
    assert main(["evaluate", "--qrels", str(tmp_path / "human.txt"), "--auto-qrels", str(tmp_path / "judge.txt"),
                 "--labelled", str(tmp_path / "sample.csv"), "--run", trec["bm25"], "--run", trec["bm25_plain"],
                 "--metrics", "ndcg@10", "--format", "json"]) == 0  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_labelled"] == 100 and rep["n_unlabelled"] == 200

    def per_query(qrels, run, queries):
        cq = CompiledQrels({q: qrels[q] for q in queries})
        v = evaluate_run(cq, run, ["ndcg@10"]).values["ndcg@10"]
        pos = {q: i for i, q in enumerate(cq.query_ids)}
        return np.array([v[pos[q]] for q in queries])

    lab = sorted(drawn)
    unl = sorted(set(judge) - set(lab))
    y = {n: per_query(human, runs[n], lab) for n in runs}
    yh = {n: per_query(judge, runs[n], lab) for n in runs}
    yu = {n: per_query(judge, runs[n], unl) for n in runs}
    cases = [(rep["runs"]["bm25"]["ndcg@10"], y["bm25"], yh["bm25"], yu["bm25"])]
    d = rep["differences"]["bm25_plain - bm25"]["ndcg@10"]
    cases.append((d, y["bm25_plain"] - y["bm25"], yh["bm25_plain"] - yh["bm25"], yu["bm25_plain"] - yu["bm25"]))
    for got, yy, hh, uu in cases:
        lo, hi = ppi_py.ppi_mean_ci(yy, hh, uu, alpha=0.05)
        assert abs(got["ppi"]["low"] - lo[0]) <= 1e-9 and abs(got["ppi"]["high"] - hi[0]) <= 1e-9
        clo, chi = ppi_py.classical_mean_ci(yy, alpha=0.05)
        assert abs(got["classical"]["low"] - clo) <= 1e-9 and abs(got["classical"]["high"] - chi) <= 1e-9
        assert got["classical"]["n"] == 100 and got["n_unlabelled"] == 200
        assert got["ppi"]["high"] - got["ppi"]["low"] < got["classical"]["high"] - got["classical"]["low"]
    # the folder's view of the same: the report prints the PPI table against its baseline
    assert main(["report", str(folder), "--qrels", str(tmp_path / "human.txt"), "--auto-qrels",
                 str(tmp_path / "judge.txt"), "--labelled", str(tmp_path / "sample.csv")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "bm25_plain - bm25" in out and "100 queries graded by people" in out


def test_evaluate_refuses_auto_qrels_without_labelled_queries(tmp_path, capsys):
    (tmp_path / "h.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    (tmp_path / "j.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\n", encoding="utf-8")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 r\nq2 Q0 d1 1 1.0 r\n", encoding="utf-8")
    args = ["evaluate", "--qrels", str(tmp_path / "h.txt"), "--auto-qrels", str(tmp_path / "j.txt"),
            "--run", str(tmp_path / "r.trec"), "--metrics", "ndcg@10"]  # fmt: skip
    assert main(args) == 2
    assert "0 labelled queries" in capsys.readouterr().err


def test_sample_refuses_an_existing_file(tmp_path, capsys):
    p = Path(tmp_path / "s.csv")
    p.write_text("x\n", encoding="utf-8")
    (tmp_path / "pool.csv").write_text("query_id,doc_id,grade\nq1,d1,\n", encoding="utf-8")
    assert main(["judge", "sample", str(tmp_path / "pool.csv"), "--queries", "1", "--out", str(p)]) == 2
    assert p.read_text(encoding="utf-8") == "x\n"


def test_the_table_keeps_its_columns_apart_for_negative_intervals_and_long_names():
    """A difference whose interval is negative at both ends is 26 characters wide, as wide as the
    column it once had: the PPI and people-only cells ran together. Every row must read back as five
    cells separated by at least two spaces."""
    import re

    from harness.judging.ppi import render

    def iv(mean, low, high):
        return {"ppi": {"mean": mean, "low": low, "high": high}, "classical": {"mean": mean, "low": low - 0.01,
                                                                              "high": high + 0.01}}  # fmt: skip

    report = {
        "alpha": 0.05, "n_labelled": 100, "n_unlabelled": 200,
        "runs": {"bm25": {"ndcg@10": iv(0.7676, 0.7508, 0.7844)},
                 "a_retriever_with_a_rather_long_name": {"nugget_strict_vital@10": iv(0.5, 0.4, 0.6)}},
        "differences": {"bm25_nostem - bm25": {"recall@100": iv(-0.0185, -0.0272, -0.0099)}},
    }  # fmt: skip
    rows = render(report).splitlines()[2:-1]
    assert len(rows) == 3
    for row in rows:
        assert len(re.split(r"\s{2,}", row.strip())) == 5, row
    assert "-0.0185 [-0.0272, -0.0099]  -0.0185 [-0.0372, 0.0001]" in rows[2]
