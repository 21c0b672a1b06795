"""``harness judge sample --active``: pi from the judge's probabilities, the record, rounds with
--after, and hostile input (one located line, exit 2, nothing written)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.judging.pool import read_pool, write_pool

COLS = ("p_0", "p_1", "p_2", "p_3")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The demo run by two BM25 rows, pooled at depth 10."""
    tmp = tmp_path_factory.mktemp("active")
    (tmp / "demo.yaml").write_text(
        "dataset: demo\nmetrics: [ndcg@10, precision@5]\ndepth: 20\nlatency_queries: 0\nwarmup_queries: 0\n"
        "baseline: bm25\nstats: {bootstrap: 50, permutations: 100}\nretrievers:\n  bm25: {type: bm25}\n"
        "  bm25_k2: {type: bm25, k1: 2.0, b: 0.9}\n",
        encoding="utf-8",
    )
    assert main(["run", "--config", str(tmp / "demo.yaml"), "--out", str(tmp / "res"), "--no-progress"]) == 0
    assert main(["pool", str(tmp / "res"), "--depth", "10", "--out", str(tmp / "pool.csv")]) == 0
    return tmp


def _graded(folder: Path, out: Path, probs=None, seed: int = 0) -> Path:
    rows = read_pool(folder / "pool.csv")
    rng = np.random.default_rng(seed)
    for i, r in enumerate(rows):
        p = probs(i, r) if probs is not None else rng.dirichlet([1, 1, 1, 1])
        r.grade = 1 if probs is not None else int(np.argmax(p))
        r.extra.update({"judge": "team", "judge_key": "k", **{c: str(x) for c, x in zip(COLS, p)}})
    write_pool(out, rows)
    return out


def _sample(folder: Path, graded: Path, out: Path, *extra: str) -> int:
    return main(["judge", "sample", str(folder / "pool.csv"), "--active", "--auto", str(graded), "--results",
                 str(folder / "res"), "--out", str(out), *extra])  # fmt: skip


def test_active_sample_records_pi_for_every_query_and_draws_by_it(folder, tmp_path, capsys):
    graded = _graded(folder, tmp_path / "graded.csv")
    out = tmp_path / "s.csv"
    assert _sample(folder, graded, out, "--budget", "10", "--seed", "3") == 0
    rec = json.loads((tmp_path / "s.csv.sample.json").read_text(encoding="utf-8"))
    pool_q = sorted({r.query_id for r in read_pool(folder / "pool.csv")})
    assert rec["design"] == "active" and rec["seed"] == 3 and rec["mix"] == 0.2 and rec["budget"] == 10
    assert rec["pool"]["sha256"] == hashlib.sha256((folder / "pool.csv").read_bytes()).hexdigest()
    assert rec["graded"]["sha256"] == hashlib.sha256(graded.read_bytes()).hexdigest()
    assert set(pool_q) <= set(rec["pi"]) and set(rec["u"]) == set(pool_q)
    assert abs(sum(rec["pi"][q] for q in pool_q) - 10) < 1e-9
    assert all(rec["pi"][q] >= 0.2 * 10 / len(pool_q) - 1e-12 for q in pool_q)  # the uniform share
    assert all(rec["pi"][q] == 1.0 for q in rec["complete"]) and not set(rec["complete"]) & set(pool_q)
    # pi grows with u
    us = np.array([rec["u"][q] for q in pool_q])
    ps = np.array([rec["pi"][q] for q in pool_q])
    assert np.all(np.diff(ps[np.argsort(us)]) >= -1e-12)
    rows = read_pool(out)
    assert {r.query_id for r in rows} == set(rec["queries"])
    assert len(rows) == sum(1 for r in read_pool(folder / "pool.csv") if r.query_id in set(rec["queries"]))
    # the same pool, grades and seed draw the same queries
    assert _sample(folder, graded, tmp_path / "again.csv", "--budget", "10", "--seed", "3") == 0
    again = json.loads((tmp_path / "again.csv.sample.json").read_text(encoding="utf-8"))
    assert again["queries"] == rec["queries"] and again["pi"] == rec["pi"]
    assert "drawn" in capsys.readouterr().err


def test_u_is_exact_for_precision(folder, tmp_path):
    """precision@5: Var(P_A - P_B) = sum_d (n_A(d) - n_B(d))^2 r_d (1 - r_d) / 25, r_d = 1 - p_0; the
    Monte Carlo figure of a nonlinear-path twin agrees."""
    from harness.judging.active_sample import _monte_carlo_var, uncertainty
    from harness.judging.pool import top_docs
    from harness.judging.probabilities import read_probabilities
    from harness.results import Results
    from harness.results.store import read_runs

    graded = _graded(folder, tmp_path / "g.csv")
    probs = read_probabilities(graded)
    runs = read_runs(Results.open(folder / "res"))
    queries = sorted({q for q, _ in probs})
    u, how = uncertainty("precision@5", runs, {}, probs, queries, [("bm25_k2", "bm25")], seed=0, draws=10)
    assert how == "exact"
    ta, tb = top_docs(runs["bm25_k2"], 5), top_docs(runs["bm25"], 5)
    for i, q in enumerate(queries[:10]):
        a, b = set(ta.get(q, [])), set(tb.get(q, []))
        v = sum((1 - probs[q, d][0]) * probs[q, d][0] for d in a ^ b if (q, d) in probs) / 25
        assert abs(u[i] - np.sqrt(v)) <= 1e-12
    from harness.io.trec import read_qrels

    base = read_qrels(folder / "res" / "qrels.tsv")
    mc = _monte_carlo_var("precision@5", runs, base, probs, queries[:10], [("bm25_k2", "bm25")], 1, 4000)
    assert np.allclose(np.sqrt(mc[0]), u[:10], atol=0.02)


def test_rounds_after_an_earlier_sample_spend_what_is_left(folder, tmp_path, capsys):
    graded = _graded(folder, tmp_path / "graded.csv")
    first, second = tmp_path / "r1.csv", tmp_path / "r2.csv"
    assert _sample(folder, graded, first, "--budget", "12", "--batch", "5", "--seed", "1") == 0
    r1 = json.loads((tmp_path / "r1.csv.sample.json").read_text(encoding="utf-8"))
    assert _sample(folder, graded, second, "--after", str(first), "--seed", "2") == 0
    r2 = json.loads((tmp_path / "r2.csv.sample.json").read_text(encoding="utf-8"))
    assert r2["before"] == sorted(r1["queries"]) and r2["budget"] == 12 and r2["batch"] == 12 - len(r1["queries"])
    assert all(r2["pi"][q] == 1.0 for q in r1["queries"]) and not set(r2["queries"]) & set(r1["queries"])
    assert r2["after"]["sha256"] == hashlib.sha256((tmp_path / "r1.csv.sample.json").read_bytes()).hexdigest()
    capsys.readouterr()
    third = tmp_path / "r3.csv"
    r3 = _sample(folder, graded, third, "--after", str(second), "--seed", "3")
    drawn = len(r1["queries"]) + len(r2["queries"])
    if drawn >= 12:
        assert r3 == 2 and "budget spent" in capsys.readouterr().err and not third.exists()


def test_the_estimate_on_an_active_sample_is_active(folder, tmp_path, capsys):
    """People grade the drawn queries (a seeded rule), the judge's grade is its most likely one."""
    graded = _graded(folder, tmp_path / "graded.csv")
    assert _sample(folder, graded, tmp_path / "s.csv", "--budget", "15", "--seed", "4") == 0
    rec = json.loads((tmp_path / "s.csv.sample.json").read_text(encoding="utf-8"))
    _qrels_for(folder, graded, tmp_path, set(rec["queries"]), agree=0.0)
    capsys.readouterr()
    assert main(["report", str(folder / "res"), "--qrels", str(tmp_path / "h.txt"), "--auto-qrels",
                 str(tmp_path / "j.txt"), "--labelled", str(tmp_path / "s.csv")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "estimator: active" in out and "bm25_k2 - bm25" in out and "NOT VALID" not in out


# ----------------------------------------------------------------------------- hostile


def _nothing_written(tmp_path: Path, name: str) -> bool:
    return not (tmp_path / name).exists() and not (tmp_path / f"{name}.sample.json").exists()


def test_a_budget_above_the_pool_is_one_line(folder, tmp_path, capsys):
    graded = _graded(folder, tmp_path / "graded.csv")
    n = len({r.query_id for r in read_pool(folder / "pool.csv")})
    assert _sample(folder, graded, tmp_path / "s.csv", "--budget", str(n + 1)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--budget" in err[0] and f"the pool has {n} queries" in err[0]
    assert _nothing_written(tmp_path, "s.csv")


def test_a_judge_without_probabilities_is_one_line(folder, tmp_path, capsys):
    rows = read_pool(folder / "pool.csv")
    for r in rows:
        r.grade = 1
    write_pool(tmp_path / "plain.csv", rows)
    assert _sample(folder, tmp_path / "plain.csv", tmp_path / "s.csv", "--budget", "5") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plain.csv" in err[0] and "--probabilities" in err[0]
    assert _nothing_written(tmp_path, "s.csv")


@pytest.mark.parametrize("bad", [[0.5, 0.5, 0.5, -0.5], [0.2, 0.2, 0.2, 0.2], ["nan", 0.5, 0.5, 0], ["x", 1, 0, 0]])
def test_hostile_probabilities_are_located(folder, tmp_path, capsys, bad):
    graded = _graded(folder, tmp_path / "graded.csv", probs=lambda i, r: bad if i == 3 else [0.25] * 4)
    assert _sample(folder, graded, tmp_path / "s.csv", "--budget", "5") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "graded.csv:5:" in err[0] and "p_" in err[0]
    assert _nothing_written(tmp_path, "s.csv")


def test_a_pi_under_a_millionth_is_raised_with_a_line(folder, tmp_path, capsys):
    """The judge is certain about most queries (u = 0) and mix 0: their pi would be 0."""
    pool = read_pool(folder / "pool.csv")
    unsure = sorted({r.query_id for r in pool})[:3]
    graded = _graded(folder, tmp_path / "graded.csv",
                     probs=lambda i, r: [0.5, 0.5, 0, 0] if r.query_id in unsure else [0, 1, 0, 0])  # fmt: skip
    assert _sample(folder, graded, tmp_path / "s.csv", "--budget", "2", "--mix", "0", "--metric", "precision@5") == 0
    err = capsys.readouterr().err
    assert "raised to it" in err and "1e-06" in err
    rec = json.loads((tmp_path / "s.csv.sample.json").read_text(encoding="utf-8"))
    assert min(rec["pi"].values()) == 1e-6


def test_active_flags_without_active_and_the_reverse_are_one_line(folder, tmp_path, capsys):
    assert main(["judge", "sample", str(folder / "pool.csv"), "--queries", "3", "--budget", "4",
                 "--out", str(tmp_path / "s.csv")]) == 2  # fmt: skip
    assert "--budget: needs --active" in capsys.readouterr().err
    assert main(["judge", "sample", str(folder / "pool.csv"), "--active", "--out", str(tmp_path / "s.csv")]) == 2
    assert "--auto: required with --active" in capsys.readouterr().err
    assert _nothing_written(tmp_path, "s.csv")


# ----------------------------------------------------------------------------- judge status


def _qrels_for(folder: Path, graded: Path, tmp_path: Path, drawn: set[str], agree: float = 0.8) -> tuple[Path, Path]:
    """h.txt (people: the judge's grade on a share ``agree`` of the drawn queries' pairs, else a
    seeded guess) and j.txt (the judge's grades), each over the folder's qrels."""
    from harness.io.trec import read_qrels

    base = read_qrels(folder / "res" / "qrels.tsv")
    human = {q: dict(j) for q, j in base.items()}
    judge = {q: dict(j) for q, j in base.items()}
    rng = np.random.default_rng(1)
    for r in read_pool(graded):
        judge.setdefault(r.query_id, {})[r.doc_id] = r.grade
        if r.query_id in drawn:
            human.setdefault(r.query_id, {})[r.doc_id] = r.grade if rng.random() < agree else int(rng.integers(0, 4))
    out = []
    for name, q in (("h.txt", human), ("j.txt", judge)):
        (tmp_path / name).write_text("".join(f"{a} 0 {d} {g}\n" for a in sorted(q) for d, g in sorted(q[a].items())))
        out.append(tmp_path / name)
    return out[0], out[1]


def test_status_reads_rounds_drawn_after_each_other_and_refuses_others(folder, tmp_path, capsys):
    graded = _graded(folder, tmp_path / "graded.csv")
    r1, r2, other = tmp_path / "r1.csv", tmp_path / "r2.csv", tmp_path / "other.csv"
    assert _sample(folder, graded, r1, "--budget", "20", "--batch", "8", "--seed", "1") == 0
    assert _sample(folder, graded, r2, "--after", str(r1), "--batch", "6", "--seed", "2") == 0
    assert _sample(folder, graded, other, "--budget", "20", "--batch", "8", "--seed", "9") == 0
    rec = json.loads((tmp_path / "r2.csv.sample.json").read_text(encoding="utf-8"))
    human, judge = _qrels_for(folder, graded, tmp_path, set(rec["before"]) | set(rec["queries"]))
    capsys.readouterr()
    args = ["--results", str(folder / "res"), "--qrels", str(human), "--auto-qrels", str(judge)]
    assert main(["judge", "status", str(r1), str(r2), *args, "--tolerance", "0.05"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "active intervals" in out[0] and "of a budget of 20" in out[0]
    line = next(x for x in out if x.startswith("bm25_k2 - bm25: "))
    assert any(s in line for s in ("separated:", "within 0.05:", "not yet:", "budget spent:"))
    for order in ([r2, r1], [r1, other]):
        assert main(["judge", "status", *map(str, order), *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--after" in err[0]


def test_verdicts():
    from harness.judging.status import verdict

    def iv(mean, half, n=20):
        return {"ppi": {"mean": mean, "low": mean - half, "high": mean + half}, "n_labelled": n}

    assert verdict(iv(0.05, 0.02), None, False)[0] == "separated"
    assert "worse" in verdict(iv(-0.05, 0.02), None, False)[1]
    assert verdict(iv(0.0, 0.02), 0.03, False)[0] == "within"
    assert verdict(iv(0.01, 0.02), None, True)[0] == "spent"
    state, words = verdict(iv(0.01, 0.02, n=20), None, False)
    assert state == "not yet" and "about 60 more drawn queries" in words  # 20 * (0.02 / 0.01)^2 - 20
    assert "no number of queries" in verdict(iv(0.0, 0.02), None, False)[1]


def test_after_a_sample_of_another_pool_or_a_uniform_one_is_one_line(folder, tmp_path, capsys):
    graded = _graded(folder, tmp_path / "graded.csv")
    assert _sample(folder, graded, tmp_path / "r1.csv", "--budget", "10", "--batch", "4", "--compare", "bm25,bm25_k2",
                   "--metric", "precision@5") == 0  # fmt: skip
    rec = json.loads((tmp_path / "r1.csv.sample.json").read_text(encoding="utf-8"))
    assert rec["compare"] == ["bm25,bm25_k2"] and rec["metric"] == "precision@5" and rec["u_method"] == "exact"
    other = tmp_path / "other"
    other.mkdir()
    from harness.judging.pool import PoolRow

    write_pool(other / "pool.csv", [*read_pool(folder / "pool.csv"), PoolRow("qX", "x", "dX", "", "t", "bm25", 1)])
    (other / "res").symlink_to(folder / "res")
    capsys.readouterr()
    assert _sample(other, graded, tmp_path / "r2.csv", "--after", str(tmp_path / "r1.csv")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another pool" in err[0] and _nothing_written(tmp_path, "r2.csv")
    assert main(["judge", "sample", str(folder / "pool.csv"), "--queries", "3", "--out", str(tmp_path / "u.csv")]) == 0
    assert _sample(folder, graded, tmp_path / "r3.csv", "--after", str(tmp_path / "u.csv")) == 2
    assert "drawn without --active" in capsys.readouterr().err and _nothing_written(tmp_path, "r3.csv")
    assert _sample(folder, graded, tmp_path / "r4.csv", "--budget", "3", "--compare", "bm25,nope") == 2
    assert "'nope' has no stored run" in capsys.readouterr().err and _nothing_written(tmp_path, "r4.csv")


TEAM_SURE = '''
import hashlib


class HashJudge:
    """A team's judge that says how sure it is: a fixed distribution per pair, the grade its argmax."""

    name = "hash-judge"
    batch_size = 512

    def _p(self, p):
        h = hashlib.sha256((p.query_id + "|" + p.doc_id).encode()).digest()
        w = [1 + h[g] % 5 + (6 if h[4] % 4 == g else 0) for g in range(4)]
        return [x / sum(w) for x in w]

    def grade(self, pairs):
        return [max(range(4), key=lambda g: self._p(p)[g]) for p in pairs]

    def probabilities(self, pairs):
        return [self._p(p) for p in pairs]
'''


@pytest.mark.slow
def test_scifact_active_loop_equals_the_transcription(tmp_path, capsys, monkeypatch):
    """SciFact: two BM25 runs pooled, a team's judge with probabilities (`judge auto --probabilities`),
    `judge sample --active` (nDCG@10, Monte Carlo u), "people" grading the drawn queries by a seeded
    rule, and `evaluate --labelled`: the active intervals equal the paper's formulas on the harness's
    per-query values."""
    import sys

    from harness.io.trec import read_qrels
    from harness.metrics.evaluate import CompiledQrels, evaluate_run
    from harness.results import Results
    from harness.results.store import read_runs
    from tests.test_judge_active import paper
    from tests.test_judge_ppi import scifact_pooled

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "team_sure.py").write_text(TEAM_SURE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = scifact_pooled(tmp_path)
    assert main(["judge", "auto", str(tmp_path / "pool.csv"), "--judge", "team_sure:HashJudge", "--probabilities",
                 "--out", str(tmp_path / "graded.csv"), "--no-progress"]) == 0  # fmt: skip
    sys.modules.pop("team_sure", None)
    assert main(["judge", "sample", str(tmp_path / "pool.csv"), "--active", "--auto", str(tmp_path / "graded.csv"),
                 "--results", str(folder), "--budget", "60", "--seed", "5", "--out", str(tmp_path / "s.csv")]) == 0
    rec = json.loads((tmp_path / "s.csv.sample.json").read_text(encoding="utf-8"))
    assert rec["u_method"] == "monte carlo, 200 draws" and 40 <= len(rec["queries"]) <= 80
    base = read_qrels(folder / "qrels.tsv")
    human = {q: dict(j) for q, j in base.items()}
    judge = {q: dict(j) for q, j in base.items()}
    rng = np.random.default_rng(3)
    for r in read_pool(tmp_path / "graded.csv"):
        judge[r.query_id][r.doc_id] = r.grade
        if r.query_id in set(rec["queries"]):
            human[r.query_id][r.doc_id] = r.grade if rng.random() < 0.6 else int(rng.integers(0, 4))
    for name, q in (("h.txt", human), ("j.txt", judge)):
        (tmp_path / name).write_text("".join(f"{a} 0 {d} {g}\n" for a in sorted(q) for d, g in sorted(q[a].items())))
    runs = read_runs(Results.load(folder))
    trec = {n: str(folder / Results.load(folder).run_files[n]["file"]) for n in runs}
    capsys.readouterr()
    assert main(["evaluate", "--qrels", str(tmp_path / "h.txt"), "--auto-qrels", str(tmp_path / "j.txt"),
                 "--labelled", str(tmp_path / "s.csv"), "--run", trec["bm25"], "--run", trec["bm25_plain"],
                 "--metrics", "ndcg@10", "--format", "json"]) == 0  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    assert rep["estimator"] == "active" and rep["valid"] is True
    qs = sorted(judge)

    def per_query(qrels, run):
        cq = CompiledQrels(qrels)
        v = dict(zip(cq.query_ids, evaluate_run(cq, run, ["ndcg@10"]).values["ndcg@10"].tolist()))
        return np.array([v.get(q, 0.0) for q in qs])

    y = {n: per_query(human, runs[n]) for n in runs}
    yh = {n: per_query(judge, runs[n]) for n in runs}
    pi = np.array([rec["pi"][q] for q in qs])
    xi = np.array([1.0 if q in set(rec["queries"]) | set(rec["complete"]) else 0.0 for q in qs])
    for got, yy, hh in ((rep["runs"]["bm25"]["ndcg@10"], y["bm25"], yh["bm25"]),
                        (rep["differences"]["bm25_plain - bm25"]["ndcg@10"], y["bm25_plain"] - y["bm25"],
                         yh["bm25_plain"] - yh["bm25"])):  # fmt: skip
        est, lo, hi, lam = paper(yy, hh, pi, xi)
        assert abs(got["ppi"]["mean"] - est) <= 1e-9 and abs(got["lam"] - lam) <= 1e-9
        assert abs(got["ppi"]["low"] - lo) <= 1e-9 and abs(got["ppi"]["high"] - hi) <= 1e-9
