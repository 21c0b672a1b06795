"""What the gate can see (harness.gate.power): detectable drops, blind lines, the variance estimate
rule, non-inferiority against an independent Student-t bound, ``--require-power``, ``--format json``,
and ``harness power`` on a results folder and as the planning calculator."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from harness.cli import main
from harness.gate import Tolerances, check
from harness.gate._scores import Scores
from harness.gate.power import reference_sd
from harness.io import atomic
from harness.stats import power as pw
from tests.test_check import base_scores, make_results, row


def write(path, res):
    atomic.write_json(path, res.to_json())
    return path


def lower_bound(d: np.ndarray, alpha: float) -> float:
    """The independent computation: scipy's t quantile on numpy's mean and sd."""
    return float(d.mean() - stats.t.ppf(1 - alpha, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))


def test_identical_results_use_the_baseline_estimate():
    """Tonight equal to the baseline has sd 0; the gate falls back on the baseline's own variance."""
    a, b = base_scores(seed=1), base_scores(seed=2)
    res = make_results({"bm25": a, "dense": b})
    report = check(res, res, tolerances=0.01)
    r = row(report, "bm25", "ndcg@10")
    expected = float(np.std(b["ndcg@10"] - a["ndcg@10"], ddof=1))  # one other retriever: its variance
    assert r.sd_diff == 0 and r.sd_source == "baseline estimate" and r.sd_used == pytest.approx(expected)
    assert r.mde == pytest.approx(expected * TTestPower().solve_power(nobs=100, alpha=0.05, power=0.8), abs=1e-6)
    assert r.mde > 0.01 and any(line.startswith("blind: bm25 ndcg@10:") for line in report.blind)
    need = pw.queries_needed(0.01, expected, 0.05)
    assert f"{need:,} queries would detect it" in next(x for x in report.blind if "bm25 ndcg@10" in x)
    assert "baseline estimate for" in report.power_notes[0]


def test_estimate_rule_one_retriever_and_several():
    a = base_scores(seed=1)
    one = Scores.of(make_results({"bm25": a}), "baseline")
    sd, why = reference_sd(one, "ndcg@10")
    assert sd == pytest.approx(math.sqrt(2) * np.std(a["ndcg@10"], ddof=1)) and why.startswith("sqrt(2)")
    b, c = base_scores(seed=2), base_scores(seed=3)
    several = Scores.of(make_results({"bm25": a, "dense": b, "hybrid": c}), "baseline")
    sd, why = reference_sd(several, "ndcg@10")
    variances = [np.var(x["ndcg@10"] - a["ndcg@10"], ddof=1) for x in (b, c)]
    assert sd == pytest.approx(math.sqrt(np.mean(variances))) and "2 retrievers against bm25" in why


def test_observed_sd_wins_when_larger():
    a = base_scores(seed=1)
    noisy = {m: np.clip(v + np.random.default_rng(9).normal(0, 0.6, v.size), 0, 1) for m, v in a.items()}
    report = check(make_results({"bm25": a}), make_results({"bm25": noisy}), tolerances=1.0)
    r = row(report, "bm25", "ndcg@10")
    assert r.sd_source == "observed" and r.sd_used == r.sd_diff > 0 and not report.blind  # tolerance 1: not blind


def test_one_common_query_is_blind_not_silent():
    """A paired test on 1 query detects nothing: a blind line (so --require-power exits 2), never nan."""
    res = make_results({"bm25": base_scores(n=1), "dense": base_scores(n=1, seed=2)})
    report = check(res, res, tolerances=0.01)
    assert row(report, "bm25", "ndcg@10").mde is None and report.exit_code == 0
    assert any(line.startswith("blind: bm25 ndcg@10: with 1 common query") for line in report.blind)


def test_power_not_above_alpha_is_said_not_a_crash(tmp_path, capsys):
    """``--alpha 0.9`` leaves the default power 0.8 below it: a note, no mde; ``--require-power`` at or
    under the check's alpha (from --alpha or the tolerances file) is bad input before anything is read."""
    res = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    report = check(res, res, tolerances=0.01, alpha=0.9)
    assert row(report, "bm25", "ndcg@10").mde is None and not report.blind
    assert any("not above the check's alpha 0.9" in n for n in report.power_notes)
    tol = tmp_path / "tol.yaml"
    tol.write_text("alpha: 0.85\n", encoding="utf-8")
    for extra in (["--tolerances", str(tol), "--require-power"], ["--require-power", "0.03"]):
        argv = ["check", "--baseline", str(tmp_path / "none"), "--current", str(tmp_path / "none"), *extra]
        assert main(argv) == 2
        assert "error: --require-power: must be above the check's alpha" in capsys.readouterr().err


def test_non_inferiority_bound_and_verdict():
    a = base_scores(seed=1)
    rng = np.random.default_rng(4)
    cur = {m: v + rng.normal(-0.01, 0.05, v.size) for m, v in a.items()}
    base, now = make_results({"bm25": a}), make_results({"bm25": cur})
    for margin, alpha in ((0.02, 0.05), (0.001, 0.05), (0.02, 0.025)):
        report = check(base, now, non_inferiority=margin, ni_alpha=alpha)
        for m in ("ndcg@10", "recall@100"):
            r = row(report, "bm25", m)
            bound = lower_bound(cur[m] - a[m], alpha)
            assert r.rule == "non_inferiority" and r.bound == pytest.approx(bound, abs=1e-9)
            assert r.verdict == ("ok" if bound > -margin else "inferior")
    failing = check(base, now, non_inferiority=0.001)
    assert failing.exit_code == 1 and failing.headline().startswith("FAIL: 0 regressions, 2 inferior")


def test_non_inferiority_from_tolerances_file_only_for_its_metrics(tmp_path):
    a = base_scores(seed=1)
    cur = {m: v - 0.004 for m, v in a.items()}
    tol_file = tmp_path / "tol.yaml"
    tol_file.write_text("default: 0.01\nnon_inferiority: {nDCG@10: 0.001}\n")
    report = check(make_results({"bm25": a}), make_results({"bm25": cur}), tolerances=Tolerances.load(tol_file))
    assert row(report, "bm25", "ndcg@10").verdict == "inferior"  # bound -0.004 < -0.001
    assert row(report, "bm25", "recall@100").rule == "regression"
    assert row(report, "bm25", "recall@100").verdict == "ok"  # within the tolerance
    bad = tmp_path / "bad.yaml"
    bad.write_text("non_inferiority: {ndcg@10: .nan}\n")
    with pytest.raises(Exception, match="finite"):
        Tolerances.load(bad)


@pytest.fixture
def folders(tmp_path):
    a, b = base_scores(seed=1), base_scores(seed=2)
    base = write(tmp_path / "base.json", make_results({"bm25": a, "dense": b}))
    cur_scores = {m: v + np.random.default_rng(7).normal(0.0, 0.05, v.size) for m, v in a.items()}
    cur = write(tmp_path / "cur.json", make_results({"bm25": cur_scores, "dense": b}))
    return tmp_path, base, cur, a, cur_scores


def test_cli_json_junit_markdown_carry_the_bound(folders, capsys):
    tmp, base, cur, a, c = folders
    md, xml = tmp / "o" / "s.md", tmp / "o" / "j.xml"
    args = ["check", "--baseline", str(base), "--current", str(cur), "--non-inferiority", "0.02"]
    code = main([*args, "--format", "json", "--summary", str(md), "--junit", str(xml), "--ni-alpha", "0.025"])
    out = json.loads(capsys.readouterr().out)
    assert out["exit"] == code
    e = out["results"]["bm25"]["ndcg@10"]
    assert set(e) >= {"delta", "p", "mde", "bound", "verdict"}
    assert e["bound"] == pytest.approx(lower_bound(c["ndcg@10"] - a["ndcg@10"], 0.025), abs=1e-9)
    assert e["verdict"] == ("ok" if e["bound"] > -0.02 else "inferior")
    assert f"{e['bound']:+.4f}" in md.read_text() and "| bound |" in md.read_text()
    cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase") if "bm25" in c.get("classname")}
    assert f"lower bound {e['bound']:+.4f} vs margin -0.02" in ET.tostring(cases["ndcg@10"], encoding="unicode")


def test_text_prints_mde_and_blind_lines_require_power_exits_2(folders, capsys):
    _, base, _, _, _ = folders
    args = ["check", "--baseline", str(base), "--current", str(base), "--tolerance", "0.01"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "mde@80%" in out and "blind: 4 checks cannot see a drop as large as their tolerance" in out
    assert re.search(r"^bm25 +ndcg@10 +100 +0\.01 +0\.\d{4} ", out, re.M), out  # one row of the blind table
    assert main([*args, "--require-power"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --require-power 0.8: blind: ")
    assert main([*args, "--tolerance", "0.5", "--require-power", "0.9"]) == 0  # a tolerance it can see


@pytest.mark.parametrize(
    "extra, expect",
    [
        (["--require-power", "1.5"], "--require-power: must be a number in (0, 1)"),
        (["--ni-alpha", "0"], "--ni-alpha: must be a number in (0, 1)"),
        (["--non-inferiority", "-1"], "--non-inferiority"),
    ],
)
def test_check_bad_power_options_one_line(folders, capsys, extra, expect):
    _, base, cur, _, _ = folders
    assert main(["check", "--baseline", str(base), "--current", str(cur), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0]


def test_power_command_on_a_folder(folders, capsys):
    tmp, _, _, a, _ = folders
    res = make_results({"bm25": a, "dense": base_scores(seed=2)})
    res.manifest["config"] = {"baseline": "bm25"}
    write(tmp / "res.json", res)
    assert main(["power", str(tmp / "res.json"), "--format", "json", "--metrics", "nDCG@10"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]["rows"]
    d = base_scores(seed=2)["ndcg@10"] - a["ndcg@10"]
    f = pw.figures(d)
    assert (r["retriever"], r["baseline"], r["n"]) == ("dense", "bm25", 100)
    assert r["sd_diff"] == pytest.approx(f["sd_diff"]) and r["mde"] == pytest.approx(f["mde"])
    assert r["queries_needed"] == f["n_for_observed"] and r["delta"] == pytest.approx(d.mean())
    assert main(["power", str(tmp / "res.json"), "--queries", "500", "--delta", "0.01", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]["rows"]
    assert rows[0]["mde_queries"] == 500 and rows[0]["mde"] == pytest.approx(pw.mde(rows[0]["sd_diff"], 500, 0.05))
    assert rows[0]["queries_needed"] == pw.queries_needed(0.01, rows[0]["sd_diff"], 0.05)
    write(tmp / "one.json", make_results({"bm25": a}))
    assert main(["power", str(tmp / "one.json"), "--delta", "0.05", "--simulate", "50"]) == 0
    out = capsys.readouterr().out
    assert "one retriever (bm25)" in out and "sqrt(2)" in out


def test_planning_calculator_prints_statsmodels(capsys):
    assert main(["power", "--sd", "0.25", "--delta", "0.02"]) == 0
    exact = TTestPower().solve_power(effect_size=0.02 / 0.25, alpha=0.05, power=0.8)
    assert f"{math.ceil(exact):,} (n = {exact:.2f}, rounded up)" in capsys.readouterr().out
    assert main(["power", "--sd-scores", "0.25", "--delta", "0.02", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sd_diff"] == pytest.approx(math.sqrt(2) * 0.25)


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["--sd", "0.25", "--delta", "0.02", "--power", "1.5"], "--power: must be a number in (0, 1)"),
        (["--sd", "0.25", "--delta", "0"], "--delta: must be a positive difference"),
        (["--sd", "-1", "--delta", "0.02"], "--sd: must be a positive number"),
        (["--sd", "0.25"], "planning needs --delta"),
        ([], "give a results folder"),
    ],
)
def test_power_bad_input_one_line(capsys, argv, expect):
    assert main(["power", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0]


def test_power_metric_the_folder_lacks(folders, capsys):
    _, base, _, _, _ = folders
    assert main(["power", str(base), "--metrics", "map@100"]) == 2
    assert "no per-query scores for metric(s) map@100" in capsys.readouterr().err


def test_suite_folders(tmp_path, capsys):
    """``harness power`` and ``harness check --require-power`` on a suite: one section per dataset."""
    from harness.api import benchmark

    retrievers = {"bm25": {"type": "bm25"}, "bm25_k2": {"type": "bm25", "k1": 2.0}}
    benchmark(
        {"d1": "demo"},
        retrievers,
        metrics=["ndcg@10"],
        baseline="bm25",
        latency_queries=0,
        warmup_queries=0,
        out=tmp_path / "suite",
    )
    suite = str(tmp_path / "suite")
    assert main(["power", suite, "--format", "json"]) == 0
    sections = json.loads(capsys.readouterr().out)["datasets"]
    assert set(sections) == {"d1"}
    assert sections["d1"]["rows"][0]["n"] == 83 and sections["d1"]["rows"][0]["mde"] > 0
    assert main(["check", "--baseline", suite, "--current", suite, "--tolerance", "0.001", "--require-power"]) == 2
    assert "blind: " in capsys.readouterr().err
