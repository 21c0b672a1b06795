"""Statistics at their edges, through the real command line.

Row 9: the last step of the judge loop in docs/judging.md (``report --auto-qrels``, ``evaluate
--auto-qrels``) on the demo, with two retrievers that rank alike and a metric at its ceiling: the
judge then gives the difference no variance, and the command prints an interval (the classical one:
``lam`` 0), not ``internal error (ZeroDivisionError)``.

Row 10: an alpha below float resolution is one line and exit 2 wherever an alpha is taken
(``power --alpha``, ``check --ni-alpha``, ``evaluate --auto-qrels --alpha``); JSON output never holds
NaN or Infinity; ``check --require-power`` with no variance estimate at all exits 2 with a line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_harness, two_bm25_config


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def _grade_jsonl(src: Path, dst: Path, grade) -> None:
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            rec["grade"] = grade(rec)
            lines.append(json.dumps(rec))
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """docs/judging.md's loop on the demo: run, pool, sample, people grade the sample, a judge grades
    the pool, both merged; the judge here agrees with people (a judge at its best)."""
    d = tmp_path_factory.mktemp("loop")
    (d / "demo.yaml").write_text(two_bm25_config("bm25_again: {type: bm25}"))
    _ok(run_harness("run", "--config", "demo.yaml", "--out", "res", "--no-progress", cwd=d))
    _ok(run_harness("pool", "res", "--depth", "10", "--out", "pool.jsonl", cwd=d))
    _ok(run_harness("judge", "sample", "pool.jsonl", "--queries", "20", "--seed", "1", "--out", "sample.jsonl", cwd=d))

    def grade(rec):  # the same seeded rule on both sides
        return int(sum(map(ord, rec["doc_id"])) % 3 == 0)

    _grade_jsonl(d / "sample.jsonl", d / "sample-graded.jsonl", grade)
    _grade_jsonl(d / "pool.jsonl", d / "judge.jsonl", grade)
    _ok(run_harness("judge", "merge", "sample-graded.jsonl", "--qrels", "res/qrels.tsv", "--out", "human.txt", cwd=d))
    _ok(run_harness("judge", "merge", "judge.jsonl", "--qrels", "res/qrels.tsv", "--out", "judge-qrels.txt", cwd=d))
    return d


def _runs(d: Path) -> list[str]:
    """``--run`` for bm25 and bm25_again (stored as ``runs/<name>-<hash>.trec``)."""
    out = []
    for name in ("bm25", "bm25_again"):
        out += ["--run", str(next((d / "res" / "runs").glob(f"{name}-*.trec")))]
    return out


def test_report_auto_qrels_gives_an_interval_when_two_runs_rank_alike(judged):
    out = _ok(
        run_harness(
            "report", "res", "--qrels", "human.txt", "--auto-qrels", "judge-qrels.txt", "--labelled", "sample.jsonl",
            cwd=judged,
        )
    )  # fmt: skip
    line = next(ln for ln in out.splitlines() if ln.startswith("bm25_again - bm25") and "ndcg@10" in ln)
    assert "0.0000 [0.0000, 0.0000]" in line, out  # the difference of two identical runs: exactly 0
    assert "nan" not in out.lower(), out  # the width ratio of two zero-width intervals is "–", not nan


def test_evaluate_auto_qrels_json_holds_finite_intervals_at_the_ceiling(judged):
    out = _ok(
        run_harness(
            "evaluate", "--qrels", "human.txt", "--auto-qrels", "judge-qrels.txt", "--labelled", "sample.jsonl",
            *_runs(judged), "--metrics", "ndcg@10,recall@1000",
            "--format", "json", cwd=judged,
        )
    )  # fmt: skip
    assert "NaN" not in out and "Infinity" not in out
    report = json.loads(out)
    diff = next(iter(report["differences"].values()))
    for m in ("ndcg@10", "recall@1000"):
        iv = diff[m]
        assert iv["lam"] == 0.0 and iv["ppi"] == {"mean": 0.0, "low": 0.0, "high": 0.0}, iv


def test_ppi_at_an_alpha_below_float_resolution_is_one_line(judged):
    proc = run_harness(
        "evaluate", "--qrels", "human.txt", "--auto-qrels", "judge-qrels.txt", "--labelled", "sample.jsonl",
        *_runs(judged), "--metrics", "ndcg@10", "--alpha", "1e-300", "--format", "json", cwd=judged,
    )  # fmt: skip
    one_line_error(proc, "--alpha", "float resolution")
    assert "Infinity" not in proc.stdout


@pytest.mark.parametrize("alpha", ["1e-250", "1e-300", "5e-324"])
def test_power_alpha_below_float_resolution(tmp_path, alpha):
    one_line_error(run_harness("power", "--sd", "0.2", "--delta", "0.05", "--alpha", alpha, cwd=tmp_path), "--alpha")
    one_line_error(
        run_harness("power", "--sd", "0.2", "--queries", "50", "--alpha", alpha, "--format", "json", cwd=tmp_path),
        "--alpha",
        "float resolution",
    )


def test_check_ni_alpha_below_float_resolution(judged):
    proc = run_harness(
        "check", "--baseline", "res", "--current", "res", "--non-inferiority", "0.02", "--ni-alpha", "1e-300",
        cwd=judged,
    )  # fmt: skip
    one_line_error(proc, "--ni-alpha", "float resolution")


def test_check_require_power_without_any_variance_estimate_is_exit_2(judged):
    """Identical baseline retrievers, and tonight equals the baseline: every per-query difference is 0
    and the baseline's own estimate is 0 too; the gate cannot size anything, so ``--require-power``
    cannot be met: exit 2 with one line (today: exit 0, a note)."""
    proc = run_harness("check", "--baseline", "res", "--current", "res", "--require-power", "0.8", cwd=judged)
    one_line_error(proc, "--require-power", "variance")
    proc = run_harness(
        "check", "--baseline", "res", "--current", "res", "--require-power", "0.8", "--format", "json", cwd=judged
    )
    assert proc.returncode == 2 and "NaN" not in proc.stdout and json.loads(proc.stdout)["exit"] == 2
