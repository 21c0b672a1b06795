"""``harness check`` on files: exit codes 0/1/2, one-line errors, summary and JUnit files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import main
from harness.io import atomic
from tests.conftest import bm25_config, shared
from tests.conftest import run_harness as harness
from tests.test_check import base_scores, make_results

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)


def write(path: Path, res) -> Path:
    atomic.write_json(path, res.to_json())
    return path


@pytest.fixture
def files(tmp_path):
    b = base_scores()
    base = write(tmp_path / "base.json", make_results({"bm25": b, "dense": base_scores(seed=2)}))
    worse = {"ndcg@10": b["ndcg@10"] - 0.05, "recall@100": b["recall@100"]}
    degraded = write(tmp_path / "degraded.json", make_results({"bm25": worse, "dense": base_scores(seed=2)}))
    return tmp_path, base, degraded


def test_same_results_exit_0(files, capsys):
    _, base, _ = files
    assert main(["check", "--baseline", str(base), "--current", str(base)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"PASS( \(blind on [^)]*\))?: 0 regressions \(4 checks: 4 ok\)", out) and "ndcg@10" in out


def test_regression_exit_1_with_summary_and_junit(files, capsys):
    tmp, base, degraded = files
    summary, junit = tmp / "out" / "check.md", tmp / "out" / "check.xml"
    code = main(
        ["check", "--baseline", str(base), "--current", str(degraded), "--summary", str(summary), "--junit", str(junit)]
    )
    assert code == 1
    assert re.search(r"FAIL( \(blind on [^)]*\))?: 1 regression", capsys.readouterr().out)
    md = summary.read_text()
    assert re.match(r"## ❌ harness check: FAIL( \(blind on [^)]*\))?: 1 regression", md), md[:300]
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table[1].startswith("| **REGRESSION** | bm25 | ndcg@10 |")  # first row after the header
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and len(suite.findall("testcase")) == 5
    assert not [p for p in (tmp / "out").iterdir() if p.name.endswith(".tmp")]


def test_tolerance_flag_and_file(files, tmp_path):
    _, base, degraded = files
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--tolerance", "0.06"]) == 0
    tol = tmp_path / "tol.yaml"
    tol.write_text("default: 0.001\nmetrics: {ndcg@10: 0.1}\n")
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--tolerances", str(tol)]) == 0
    # --tolerance replaces the file's default only; the per-metric entry still holds
    args = ["check", "--baseline", str(base), "--current", str(degraded), "--tolerances", str(tol)]
    assert main([*args, "--tolerance", "0.2"]) == 0
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--metrics", "recall@100"]) == 0
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--retrievers", "dense"]) == 0
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--alpha", "1e-9"]) == 0


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ") and "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    "content, expect",
    [
        (b'{"summary": {"bm25": {"ndcg@10": 0.3}}, "per_query": {', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff\xfe\x00", "not valid UTF-8"),
        (b'{"runs": []}', "not a results.json"),
        (b'{"summary": {"bm25": {"ndcg@10": "high"}}}', "summary.bm25.ndcg@10"),
        (b'{"summary": {}}', "holds no scores"),
    ],
)
def test_corrupt_baseline_exit_2_one_line(files, capsys, content, expect):
    tmp, base, _ = files
    bad = tmp / "bad.json"
    bad.write_bytes(content)
    summary = tmp / "err.md"
    assert main(["check", "--baseline", str(bad), "--current", str(base), "--summary", str(summary)]) == 2
    line = one_line_error(capsys)
    assert expect in line
    assert "ERROR" in summary.read_text()


def test_missing_files_and_folders_exit_2(files, capsys, tmp_path):
    _, base, _ = files
    assert main(["check", "--baseline", str(tmp_path / "nope.json"), "--current", str(base)]) == 2
    assert "baseline" in one_line_error(capsys)
    (tmp_path / "empty").mkdir()
    junit = tmp_path / "err.xml"
    assert main(["check", "--baseline", str(base), "--current", str(tmp_path / "empty"), "--junit", str(junit)]) == 2
    assert "current" in one_line_error(capsys)
    assert ET.parse(junit).getroot().find("testsuite/testcase/error") is not None


def test_results_folder_accepted(files, tmp_path):
    _, base, _ = files
    folder = tmp_path / "run1"
    folder.mkdir()
    (folder / "results.json").write_bytes(base.read_bytes())
    assert main(["check", "--baseline", str(base), "--current", str(folder)]) == 0


def test_dataset_change_exit_1_unless_allowed(files, capsys, tmp_path):
    _, base, _ = files
    data = json.loads(base.read_text())
    data["manifest"]["dataset"]["fingerprint"] = "sha256:" + "c" * 64
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    assert main(["check", "--baseline", str(base), "--current", str(other)]) == 1
    assert "dataset changed" in capsys.readouterr().out
    assert main(["check", "--baseline", str(base), "--current", str(other), "--allow-dataset-change"]) == 0
    assert "allowed (--allow-dataset-change)" in capsys.readouterr().out


def test_no_common_queries_exit_2(files, capsys, tmp_path):
    _, base, _ = files
    other = write(tmp_path / "o.json", make_results({"bm25": base_scores(5)}, qids=list("abcde")))
    assert main(["check", "--baseline", str(base), "--current", str(other), "--allow-dataset-change"]) == 2
    assert "no query in common" in one_line_error(capsys)


# ---------------------------------------------------------------------- end to end, real BM25 runs
def _config(path: Path, data: Path, spec: str) -> Path:
    path.write_text(
        f"dataset: {{path: {data}, split: test}}\nmetrics: [ndcg@10, recall@100]\nlatency_queries: 5\n"
        f"warmup_queries: 0\nretrievers:\n  bm25: {spec}\n"
    )
    return path


@pytest.mark.slow
def test_end_to_end_nfcorpus_bm25(tmp_path, capsys):
    """Default BM25 vs a degraded one (k1 0.05, b 1.0) and a tiny change (k1 0.95) on NFCorpus."""
    data = shared("nfcorpus")
    runs = {}
    for name, spec in [
        ("base", "{type: bm25}"),
        ("degraded", "{type: bm25, k1: 0.05, b: 1.0}"),
        ("tiny", "{type: bm25, k1: 0.95}"),
    ]:
        cfg = _config(tmp_path / f"{name}.yaml", data, spec)
        assert main(["run", "--config", str(cfg), "--out", str(tmp_path / name), "--no-progress"]) == 0
        runs[name] = tmp_path / name
    capsys.readouterr()
    baseline = tmp_path / "baselines" / "nfcorpus" / "bm25.json"
    assert main(["baseline", "save", str(runs["base"]), "--to", str(baseline)]) == 0

    assert main(["check", "--baseline", str(baseline), "--current", str(runs["base"])]) == 0
    summary = tmp_path / "check.md"
    args = ["check", "--baseline", str(baseline), "--current", str(runs["degraded"]), "--summary", str(summary)]
    assert main(args) == 1
    first = next(ln for ln in summary.read_text().splitlines() if ln.startswith("| **"))
    assert first.startswith("| **REGRESSION** | bm25 | ndcg@10 |")
    cells = [c.strip() for c in first.split("|")]
    assert float(cells[4]) == pytest.approx(0.333, abs=0.002) and float(cells[5]) == pytest.approx(0.314, abs=0.002)
    assert float(cells[7]) < 0.001  # paired randomization p (10,000 sign flips)
    # a real but tiny change (k1 0.9 -> 0.95) stays within tolerance, both ways
    assert main(["check", "--baseline", str(baseline), "--current", str(runs["tiny"])]) == 0
    assert main(["check", "--baseline", str(runs["tiny"]), "--current", str(runs["base"])]) == 0


# ---------------------------------------------------------------------- row 2: the gate is never fooled
def _write_raw(path: Path, data: dict) -> Path:
    """JSON as Python writes it with allow_nan: NaN / Infinity literals, as a hostile or broken writer would."""
    path.write_text(json.dumps(data, allow_nan=True))
    return path


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("side", ["current", "baseline"])
def test_non_finite_per_query_value_is_bad_input(files, capsys, tmp_path, bad, side):
    _, base, _ = files
    data = json.loads(base.read_text())
    data["per_query"]["bm25"]["ndcg@10"][data["query_ids"].index("q012")] = bad
    poisoned = _write_raw(tmp_path / "poisoned.json", data)
    args = {"baseline": str(base), "current": str(base), side: str(poisoned)}
    summary = tmp_path / "check.md"
    code = main(["check", "--baseline", args["baseline"], "--current", args["current"], "--summary", str(summary)])
    assert code == 2
    line = one_line_error(capsys)
    assert line == f"error: {side} {poisoned}: per_query.bm25.q012.ndcg@10: not a finite number"
    assert "not a finite number" in summary.read_text()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_summary_is_bad_input_never_improved(tmp_path, capsys, bad):
    """Summary-only results (no per-query scores): Infinity must not read as an improvement."""
    base = _write_raw(tmp_path / "b.json", {"summary": {"bm25": {"ndcg@10": 0.4}}})
    cur = _write_raw(tmp_path / "c.json", {"summary": {"bm25": {"ndcg@10": bad}}})
    assert main(["check", "--baseline", str(base), "--current", str(cur)]) == 2
    assert one_line_error(capsys) == f"error: current {cur}: summary.bm25.ndcg@10: not a finite number"


def test_non_finite_in_a_results_folder_names_its_results_json(files, capsys, tmp_path):
    _, base, _ = files
    data = json.loads(base.read_text())
    data["summary"]["dense"]["recall@100"] = float("nan")
    folder = tmp_path / "nightly"
    folder.mkdir()
    _write_raw(folder / "results.json", data)
    assert main(["check", "--baseline", str(base), "--current", str(folder)]) == 2
    assert (
        one_line_error(capsys)
        == f"error: current {folder / 'results.json'}: summary.dense.recall@100: not a finite number"
    )


@pytest.mark.parametrize(
    "flags, expect",
    [
        (["--tolerance", "nan"], "--tolerance: a tolerance must be a finite number"),
        (["--tolerance", "inf"], "--tolerance: a tolerance must be a finite number"),
        (["--tolerance", "-0.1"], "--tolerance: a tolerance must be >= 0"),
        (["--alpha", "nan"], "--alpha: must be a number in (0, 1)"),
        (["--alpha", "-0.05"], "--alpha: must be a number in (0, 1)"),
        (["--alpha", "1"], "--alpha: must be a number in (0, 1)"),
        (["--permutations", "0"], "--permutations must be >= 1"),
    ],
)
def test_non_finite_or_out_of_range_flags_exit_2(files, capsys, flags, expect):
    _, base, degraded = files
    assert main(["check", "--baseline", str(base), "--current", str(degraded), *flags]) == 2
    assert expect in one_line_error(capsys)


@pytest.mark.parametrize(
    "text, key",
    [
        ("default: .nan\n", "default"),
        ("default: .inf\n", "default"),
        ("metrics: {ndcg@10: .nan}\n", "metrics.ndcg@10"),
        ("metrics: {ndcg@10: .inf}\n", "metrics.ndcg@10"),
        ("retrievers: {bm25: {default: .nan}}\n", "retrievers.bm25.default"),
        ("retrievers: {bm25: {recall@100: -.inf}}\n", "retrievers.bm25.recall@100"),
        ("alpha: .nan\n", "alpha"),
        ("alpha: -0.05\n", "alpha"),
    ],
)
def test_non_finite_tolerances_file_exit_2_naming_file_and_key(files, capsys, tmp_path, text, key):
    _, base, degraded = files
    tol = tmp_path / "tol.yaml"
    tol.write_text(text)
    assert main(["check", "--baseline", str(base), "--current", str(degraded), "--tolerances", str(tol)]) == 2
    line = one_line_error(capsys)
    assert line.startswith(f"error: {tol}: {key}: "), line


# ---------------------------------------------------------------------- row 8: outputs never overwrite an input
def _check(base: Path, cur: Path, *extra: str) -> int:
    return main(["check", "--baseline", str(base), "--current", str(cur), *extra])


@pytest.fixture
def folders(files, tmp_path):
    """A baseline file and a current results folder (results.json + runs/), as a nightly job has them."""
    _, base, degraded = files
    cur = tmp_path / "nightly"
    (cur / "runs").mkdir(parents=True)
    (cur / "results.json").write_bytes(degraded.read_bytes())
    (cur / "runs" / "bm25.trec").write_text("q000 Q0 d1 1 1.0 bm25\n")
    return base, cur


def _snapshot(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


@pytest.mark.parametrize("flag", ["--summary", "--junit", "--history"])
@pytest.mark.parametrize(
    "target",
    [
        "baseline",
        "baseline via ..",
        "baseline via symlink",
        "baseline hard link",
        "current results.json",
        "current folder",
        "current runs file",
        "new file in current runs",
    ],
)
def test_outputs_never_overwrite_an_input(folders, tmp_path, capsys, flag, target):
    base, cur = folders
    if target == "baseline hard link":
        import os

        os.link(base, tmp_path / "hard.json")
    paths = {
        "baseline": base,
        "baseline via ..": cur / ".." / base.name,
        "baseline via symlink": tmp_path / "link.json",
        "baseline hard link": tmp_path / "hard.json",
        "current results.json": cur / "results.json",
        "current folder": cur,
        "current runs file": cur / "runs" / "bm25.trec",
        "new file in current runs": cur / "runs" / "check.xml",
    }
    if target == "baseline via symlink":
        paths[target].symlink_to(base)
    before = _snapshot(base, cur / "results.json", cur / "runs" / "bm25.trec")
    other = tmp_path / "other.xml"  # a valid second output: must not be written either
    second = ["--junit", str(other)] if flag != "--junit" else ["--summary", str(other)]
    assert _check(base, cur, flag, str(paths[target]), *second) == 2
    line = one_line_error(capsys)
    assert flag in line and "Traceback" not in line
    assert _snapshot(*before) == before
    assert not other.exists() and not (cur / "runs" / "check.xml").exists()


def test_outputs_refuse_a_users_file_but_replace_their_own(folders, tmp_path, capsys):
    base, cur = folders
    mine = tmp_path / "notes.md"
    mine.write_text("# my notes\n")
    assert _check(base, cur, "--summary", str(mine)) == 2
    assert "not written by harness check" in one_line_error(capsys)
    assert mine.read_text() == "# my notes\n"
    xml = tmp_path / "report.xml"
    xml.write_text("<testsuites/>\n")
    assert _check(base, cur, "--junit", str(xml)) == 2
    assert "not written by harness check" in one_line_error(capsys)
    assert xml.read_text() == "<testsuites/>\n"
    hist = tmp_path / "log.jsonl"
    hist.write_text('{"event": "deploy"}\n')
    assert _check(base, cur, "--history", str(hist)) == 2
    assert "not a history file" in one_line_error(capsys)
    assert hist.read_text() == '{"event": "deploy"}\n'
    # outputs in the current results folder (not results.json or runs/) are fine, and ours are replaced
    summary, junit = cur / "check.md", cur / "check.xml"
    for _ in range(2):
        assert _check(base, cur, "--summary", str(summary), "--junit", str(junit)) == 1
    assert summary.read_text().rstrip().endswith("-->") and ET.parse(junit).getroot().tag == "testsuites"
    # the tolerances file is an input too
    tol = tmp_path / "tol.yaml"
    tol.write_text("default: 0.01\n")
    assert _check(base, cur, "--tolerances", str(tol), "--summary", str(tol)) == 2
    assert "names an input" in one_line_error(capsys) and tol.read_text() == "default: 0.01\n"
    # two outputs naming one file
    assert _check(base, cur, "--summary", str(summary), "--junit", str(summary)) == 2
    assert "name the same file" in capsys.readouterr().err


def test_nightly_nfcorpus_config_names_the_shared_data():
    """docs/nightly.md names configs/nightly-nfcorpus.yaml: it exists and points at ../shared/data/nfcorpus."""
    from harness.config import load_config

    repo = Path(__file__).resolve().parents[1]
    cfg = load_config(repo / "configs" / "nightly-nfcorpus.yaml")
    assert (repo / "configs" / cfg.dataset.path).resolve() == (repo.parent / "shared" / "data" / "nfcorpus").resolve()
    assert cfg.dataset.split == "test" and list(cfg.retrievers) == ["bm25"]
    assert cfg.metrics == ["ndcg@10", "mrr@10", "recall@100", "hit_rate@5", "precision@5", "map@100"]
    assert "configs/nightly-nfcorpus.yaml" in (repo / "docs" / "nightly.md").read_text()


REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- make nightly: 0 / 1 / 2
def fake_venv(tmp_path: Path) -> Path:
    """A folder make takes for an installed .venv: bin/harness runs this checkout with this Python."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    script = venv / "bin" / "harness"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m harness "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    stamp = venv / ".installed"
    stamp.touch()
    newer = max((REPO / "pyproject.toml").stat().st_mtime, stamp.stat().st_mtime) + 10
    os.utime(stamp, (newer, newer))
    return venv


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_nightly_exits_1_on_a_regression_and_2_on_bad_input(tmp_path):
    venv, cfg, out = fake_venv(tmp_path), bm25_config(tmp_path), tmp_path / "nightly"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)

    def make(baseline: str) -> subprocess.CompletedProcess:
        args = [f"VENV={venv}", f"NIGHTLY_CONFIG={cfg}", f"NIGHTLY_OUT={out}", f"NIGHTLY_BASELINE={baseline}"]
        return subprocess.run(["make", "-C", str(REPO), "nightly", *args], capture_output=True, text=True, env=env)

    # the committed baseline has four retrievers; this config runs one: three missing -> exit 1
    regressed = make(str(REPO / "results" / "baselines" / "demo" / "nightly.json"))
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    assert "FAIL" in regressed.stdout + regressed.stderr
    bad = make(str(tmp_path / "no-such-baseline.json"))
    assert bad.returncode == 2 and "not found" in bad.stderr
    saved = harness("baseline", "save", str(out), "--to", str(tmp_path / "base.json"))
    assert saved.returncode == 0, saved.stderr
    same = make(str(tmp_path / "base.json"))
    assert same.returncode == 0, same.stdout + same.stderr
