"""Active statistical inference (Zrnic & Candes 2024): the estimator against a transcription of the
paper's formulas, the uniform design giving today's bytes, and a drawn query people did not finish."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from harness.cli import main
from harness.stats.active import active_mean_ci, spread_budget


def paper(y, yhat, probs, xi, alpha=0.05, lam=None):
    """The paper's estimator as its notebooks write it (pew79-post-election-research.ipynb:
    ``np.mean(Yhat + (Y - Yhat)*xi/probs)``, ``norm.ppf(1-alpha/2) * std / sqrt(n)``) with the
    paper's power-tuned lam = Cov(Y xi/pi, f (xi/pi - 1)) / Var(f (xi/pi - 1)) and ddof=1."""
    y = np.where(xi == 1, y, 0.0)
    if lam is None:
        a, b = y * xi / probs, yhat * (xi / probs - 1)
        lam = np.cov(a, b, ddof=1)[0, 1] / np.var(b, ddof=1) if np.var(b) > 0 else 0.0
    t = lam * yhat + (y - lam * yhat) * xi / probs
    est = np.mean(t)
    w = norm.ppf(1 - alpha / 2) * np.std(t, ddof=1) / np.sqrt(len(t))
    return est, est - w, est + w, lam


@settings(max_examples=60, deadline=None)
@given(st.integers(5, 300), st.floats(0.0, 2.0), st.floats(0.05, 0.9), st.integers(0, 2**31 - 1))
def test_active_equals_the_papers_formulas(n, noise, budget, seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    yhat = y + noise * rng.normal(size=n)
    u = np.abs(rng.normal(size=n))
    probs = spread_budget(u, budget * n, 0.2)
    xi = (rng.random(n) < probs).astype(float)
    if xi.sum() == 0:
        xi[0] = 1.0
    iv, lam = active_mean_ci(y, yhat, probs, xi, 0.05)
    est, lo, hi, lam_p = paper(y, yhat, probs, xi)
    assert abs(lam - lam_p) <= 1e-9 * max(1, abs(lam_p))
    assert abs(iv.mean - est) <= 1e-9 and abs(iv.low - lo) <= 1e-9 and abs(iv.high - hi) <= 1e-9
    # lam = 1 is the notebooks' plain estimator; their np.std is ddof=0: a factor sqrt(n / (n - 1))
    iv1, _ = active_mean_ci(y, yhat, probs, xi, 0.1, lam=1.0)
    t = yhat + (np.where(xi == 1, y, 0) - yhat) * xi / probs
    nb_width = norm.ppf(1 - 0.1 / 2) * np.std(t) / np.sqrt(n)
    assert abs(iv1.mean - np.mean(t)) <= 1e-9
    assert abs((iv1.high - iv1.mean) - nb_width * np.sqrt(n / (n - 1))) <= 1e-9


def test_power_tuned_lam_minimises_the_terms_variance():
    rng = np.random.default_rng(3)
    y = rng.normal(size=200)
    yhat = 0.7 * y + 0.3 * rng.normal(size=200)
    probs = spread_budget(np.abs(y - yhat) + 0.1, 40, 0.2)
    xi = (rng.random(200) < probs).astype(float)
    iv, lam = active_mean_ci(y, yhat, probs, xi)
    for other in (lam - 0.05, lam + 0.05, 0.0, 1.0):
        o, _ = active_mean_ci(y, yhat, probs, xi, lam=other)
        assert o.high - o.low >= iv.high - iv.low - 1e-12


def test_active_is_unbiased_and_covers():
    """Seeded: 4000 draws of units and labels (the paper's setting: units drawn from a distribution,
    each labelled with its own probability); the estimate with a fixed lam sits on E[Y], and the
    power-tuned 95% interval covers it about 95% of the time. (With 60 labels of 400 units the
    tuned lam, fitted on the same labels, covers about 0.93: an asymptotic guarantee; docs/judging.md.)"""
    rng = np.random.default_rng(0)
    n, truth = 2000, 0.4
    est, cover = [], 0
    for _ in range(3000):
        y = rng.binomial(1, truth, size=n).astype(float)
        yhat = np.clip(y + rng.normal(0, 0.4, size=n), 0, 1)
        probs = spread_budget(np.minimum(yhat, 1 - yhat) + 0.01, 300, 0.2)
        row = (rng.random(n) < probs).astype(float)
        fixed, _ = active_mean_ci(y, yhat, probs, row, lam=1.0)  # a lam fixed in advance: exactly unbiased
        est.append(fixed.mean)
        iv, _ = active_mean_ci(y, yhat, probs, row)  # power-tuned: asymptotically valid
        cover += iv.low <= truth <= iv.high
    assert abs(np.mean(est) - truth) < 3 * np.std(est) / np.sqrt(len(est))
    assert 0.935 <= cover / 3000 <= 0.965


def test_spread_budget_sums_to_the_budget_and_caps_at_one():
    u = np.array([100.0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    pi = spread_budget(u, 3, 0.2)
    assert abs(pi.sum() - 3) < 1e-12 and pi.max() <= 1 and pi[0] == 1.0 and pi.min() > 0
    assert np.allclose(spread_budget(np.zeros(5), 2, 0.2), 0.4)
    assert np.allclose(spread_budget(np.ones(4), 4, 0.0), 1.0)


# ----------------------------------------------------------------------------- end to end


def _files(tmp_path: Path, rng: np.random.Generator, nq: int = 30) -> dict[str, Path]:
    """A judge's qrels over 5 documents of each of ``nq`` queries, people's on the same pairs (the
    judge wrong on some), and two runs ranking them."""
    human, judge, runs = [], [], {"a": [], "b": []}
    for i in range(nq):
        q = f"q{i:02d}"
        for j in range(5):
            g = int(rng.integers(0, 4))
            gj = g if rng.random() < 0.7 else int(rng.integers(0, 4))
            human.append(f"{q} 0 d{j} {g}\n")
            judge.append(f"{q} 0 d{j} {gj}\n")
        for name in runs:
            order = rng.permutation(5)
            runs[name] += [f"{q} Q0 d{d} {r + 1} {5 - r} {name}\n" for r, d in enumerate(order)]
    out = {"human": tmp_path / "human.txt", "judge": tmp_path / "judge.txt"}
    out["human"].write_text("".join(human), encoding="utf-8")
    out["judge"].write_text("".join(judge), encoding="utf-8")
    for name, lines in runs.items():
        out[name] = tmp_path / f"{name}.trec"
        out[name].write_text("".join(lines), encoding="utf-8")
    return out


def _sample(tmp_path: Path, name: str, queries: list[str], pi: dict[str, float] | None) -> Path:
    p = tmp_path / name
    p.write_text("query_id,doc_id,grade\n" + "".join(f"{q},d0,\n" for q in queries), encoding="utf-8")
    rec = {"created": "x", "pool": {"path": "pool.csv", "sha256": "0"}, "seed": 0, "queries": queries, "rows": 1}
    if pi is not None:
        rec["pi"] = pi
    (tmp_path / f"{name}.sample.json").write_text(json.dumps(rec), encoding="utf-8")
    return p


METRICS = "ndcg@3,precision@2"


def _evaluate(f: dict[str, Path], sample: Path, capsys, fmt: str = "json") -> tuple[int, str, str]:
    rc = main(["evaluate", "--qrels", str(f["human"]), "--auto-qrels", str(f["judge"]), "--labelled", str(sample),
               "--run", str(f["a"]), "--run", str(f["b"]), "--metrics", METRICS, "--format", fmt])  # fmt: skip
    out = capsys.readouterr()
    return rc, out.out, out.err


def _per_query(qrels_path: Path, run_path: Path, metric: str) -> dict[str, float]:
    from harness.io.trec import read_qrels, read_run
    from harness.metrics.evaluate import CompiledQrels, evaluate_run

    cq = CompiledQrels(read_qrels(qrels_path))
    v = evaluate_run(cq, read_run(run_path), [metric]).values[metric]
    return dict(zip(cq.query_ids, v))


def test_evaluate_with_an_active_sample_equals_the_transcription(tmp_path, capsys):
    rng = np.random.default_rng(5)
    f = _files(tmp_path, rng)
    qs = [f"q{i:02d}" for i in range(30)]
    probs = spread_budget(rng.random(30), 10, 0.2)
    pi = dict(zip(qs, map(float, probs)))
    drawn = [q for q in qs if rng.random() < pi[q]]
    rc, out, _ = _evaluate(f, _sample(tmp_path, "s.csv", drawn, pi), capsys)
    assert rc == 0
    rep = json.loads(out)
    assert rep["estimator"] == "active" and rep["valid"] is True and rep["n_labelled"] == len(drawn)
    xi = np.array([1.0 if q in drawn else 0.0 for q in qs])
    p = np.array([pi[q] for q in qs])
    for metric in ("ndcg@3", "precision@2"):
        y = {r: np.array([_per_query(f["human"], f[r], metric)[q] for q in qs]) for r in "ab"}
        yh = {r: np.array([_per_query(f["judge"], f[r], metric)[q] for q in qs]) for r in "ab"}
        cases = [(rep["runs"]["a"][metric], y["a"], yh["a"]), (rep["runs"]["b"][metric], y["b"], yh["b"]),
                 (rep["differences"]["b - a"][metric], y["b"] - y["a"], yh["b"] - yh["a"])]  # fmt: skip
        for got, yy, hh in cases:
            est, lo, hi, lam = paper(yy, hh, p, xi)
            assert got["estimator"] == "active" and abs(got["lam"] - lam) <= 1e-9
            assert abs(got["ppi"]["mean"] - est) <= 1e-9
            assert abs(got["ppi"]["low"] - lo) <= 1e-9 and abs(got["ppi"]["high"] - hi) <= 1e-9
            c = paper(yy, hh, p, xi, lam=0.0)
            assert abs(got["classical"]["low"] - c[1]) <= 1e-9 and abs(got["classical"]["high"] - c[2]) <= 1e-9
    rc, text, _ = _evaluate(f, tmp_path / "s.csv", capsys, fmt="table")
    assert rc == 0 and "estimator: active" in text and "lam (power-tuned)" in text


def test_every_pi_equal_gives_todays_bytes(tmp_path, capsys):
    f = _files(tmp_path, np.random.default_rng(8))
    drawn = [f"q{i:02d}" for i in range(0, 30, 3)]
    today = _evaluate(f, _sample(tmp_path, "u.csv", drawn, None), capsys)
    equal = _evaluate(f, _sample(tmp_path, "e.csv", drawn, {f"q{i:02d}": 1 / 3 for i in range(30)}), capsys)
    assert today[0] == equal[0] == 0 and today[1] == equal[1] and "estimator" not in today[1]
    today_t = _evaluate(f, tmp_path / "u.csv", capsys, fmt="table")
    equal_t = _evaluate(f, tmp_path / "e.csv", capsys, fmt="table")
    assert today_t[1] == equal_t[1]


def test_a_drawn_query_people_did_not_finish_makes_the_interval_invalid(tmp_path, capsys):
    f = _files(tmp_path, np.random.default_rng(9))
    qs = [f"q{i:02d}" for i in range(30)]
    pi = {q: (0.9 if i % 2 else 0.3) for i, q in enumerate(qs)}
    drawn = qs[:12]
    lines = f["human"].read_text(encoding="utf-8").splitlines(keepends=True)
    f["human"].write_text("".join(x for x in lines if not x.startswith("q03 0 d4")), encoding="utf-8")
    rc, out, err = _evaluate(f, _sample(tmp_path, "s.csv", drawn, pi), capsys)
    assert rc == 0
    rep = json.loads(out)
    assert rep["valid"] is False and rep["incomplete"] == ["q03"] and rep["n_labelled"] == 11
    assert all(iv["valid"] is False for per in rep["runs"].values() for iv in per.values())
    assert "q03" in err and "no longer valid" in err
    rc, text, _ = _evaluate(f, tmp_path / "s.csv", capsys, fmt="table")
    assert "NOT VALID" in text and "q03" in text


def test_a_sample_without_a_pi_for_a_judged_query_is_one_line(tmp_path, capsys):
    f = _files(tmp_path, np.random.default_rng(10))
    pi = {f"q{i:02d}": 0.5 + 0.01 * i for i in range(29)}  # q29 missing
    rc, out, err = _evaluate(f, _sample(tmp_path, "s.csv", ["q01"], pi), capsys)
    assert rc == 2 and out == "" and "'q29'" in err and "s.csv.sample.json" in err


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1, "x", True])
def test_a_pi_that_is_not_a_probability_is_located(tmp_path, capsys, bad):
    f = _files(tmp_path, np.random.default_rng(11))
    pi: dict = {f"q{i:02d}": 0.5 for i in range(30)}
    pi["q07"] = bad
    rc, out, err = _evaluate(f, _sample(tmp_path, "s.csv", ["q01"], pi), capsys)
    assert rc == 2 and out == "" and "'q07'" in err and "pi" in err


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=60), st.floats(0.01, 1.0), st.floats(0.0, 1.0))
@example([1.0, 5e-324], 0.75, 0.0)  # a subnormal u: left * w underflowed to a pi of 0 (the budget not spent)
def test_spread_budget_invariants(u, share, mix):
    """Whatever the uncertainties: every pi in [0, 1], summing to the budget, ordered as u, and at
    least the uniform share mix * budget / N."""
    u = np.array(u)
    budget = max(share * u.size, 1e-3)
    pi = spread_budget(u, budget, mix)
    assert np.all(pi >= 0) and np.all(pi <= 1) and abs(pi.sum() - budget) <= 1e-9 * max(1, budget)
    order = np.argsort(u, kind="stable")
    assert np.all(np.diff(pi[order]) >= -1e-12)
    assert np.all(pi >= min(1.0, mix * budget / u.size) - 1e-12)
