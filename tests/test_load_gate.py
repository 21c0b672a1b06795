"""``harness check`` on load.json: p95 per level and QPS are gated with relative tolerances."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.gate.load import check_load, load_rows, read_load
from harness.load import LoadSpec, run_load, write_load
from harness.load.core import load_load_config


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real load test of bm25 on the demo set (short levels)."""
    root = tmp_path_factory.mktemp("load")
    cfg = root / "c.yaml"
    cfg.write_text("dataset: demo\ndepth: 10\nretrievers:\n  bm25: {type: bm25}\n", encoding="utf-8")
    config, _, _ = load_load_config(cfg)
    result = run_load(
        config, LoadSpec(concurrency=[1, 2], duration_s=0.4, warmup_s=0.1), config_dir=root, probe_gil=False
    )
    write_load(result, root / "base")
    return root / "base"


def _variant(src: Path, dst: Path, edit) -> Path:
    data = json.loads((src / "load.json").read_text())
    edit(data)
    dst.mkdir()
    (dst / "load.json").write_text(json.dumps(data))
    return dst


def test_check_against_itself_passes(measured: Path, capsys) -> None:
    assert main(["check", "--baseline", str(measured), "--current", str(measured / "load.json")]) == 0
    out = capsys.readouterr().out
    assert "p95_ms@c=1" in out and "qps@c=2" in out and "PASS" in out


def test_p95_beyond_tolerance_fails_and_within_passes(measured: Path, tmp_path: Path, capsys) -> None:
    def scale(f: float):
        def edit(d: dict) -> None:
            d["bm25"]["levels"][1]["p95_ms"] *= f

        return edit

    worse = _variant(measured, tmp_path / "worse", scale(1.8))
    assert main(["check", "--baseline", str(measured), "--current", str(worse)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "p95_ms@c=2" in out
    near = _variant(measured, tmp_path / "near", scale(1.3))
    assert main(["check", "--baseline", str(measured), "--current", str(near)]) == 0
    # a tighter tolerance catches the same rise
    assert main(["check", "--baseline", str(measured), "--current", str(near), "--latency-tolerance", "0.2"]) == 1


def test_qps_drop_errors_and_missing_levels(measured: Path) -> None:
    base = read_load(measured, "baseline")
    cur = copy.deepcopy(base)
    cur["bm25"]["levels"][0]["qps"] *= 0.5
    rows = {r.metric: r for r in load_rows(base, cur)}
    assert rows["qps@c=1"].verdict == "regression" and rows["qps@c=2"].verdict == "ok"
    cur = copy.deepcopy(base)
    cur["bm25"]["levels"][1]["errors"] = 3
    assert {r.metric: r.verdict for r in load_rows(base, cur)}["qps@c=2"] == "failed"
    cur = copy.deepcopy(base)
    cur["bm25"]["levels"] = cur["bm25"]["levels"][:1]
    report = check_load(base, cur)
    assert report.exit_code == 1 and {r.verdict for r in report.rows if "c=2" in r.metric} == {"missing"}


def test_relative_rule_by_hand() -> None:
    base = {"r": {"dataset": "d", "levels": [{"concurrency": 4, "qps": 100.0, "p95_ms": 10.0}]}}
    for p95, qps, want in [(14.9, 100, "ok"), (15.1, 100, "regression"), (10, 71, "ok"), (10, 69, "regression")]:
        cur = {"r": {"dataset": "d", "levels": [{"concurrency": 4, "qps": qps, "p95_ms": p95}]}}
        verdicts = {r.verdict for r in load_rows(base, cur)}
        assert ("regression" in verdicts) == (want == "regression"), (p95, qps)


def test_bad_load_json_is_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "load.json").write_text(json.dumps({"r": {"levels": [{"concurrency": 1, "qps": "fast"}]}}))
    assert main(["check", "--baseline", str(bad), "--current", str(bad)]) == 2
    assert "qps is 'fast'" in capsys.readouterr().err
    (bad / "load.json").write_text('{"r": {"levels": [{"concurrency": 1, "qps": NaN, "p95_ms": 1}]}}')
    assert main(["check", "--baseline", str(bad), "--current", str(bad)]) == 2
