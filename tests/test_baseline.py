"""``harness baseline save``: a compact, loadable, checkable baseline; overwriting is explicit."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.gate import check
from harness.io import atomic
from harness.results import Results
from harness.results.baseline import KEEP, baseline_payload
from tests.test_check import base_scores, make_results


@pytest.fixture
def results_dir(tmp_path):
    res = make_results({"bm25": base_scores(), "dense": base_scores(seed=2)})
    res.efficiency = {"bm25": {"qps": 1234.5}, "dense": {"qps": 99.0}}
    res.intervals = {"bm25": {"ndcg@10": [0.1, 0.2]}}
    res.manifest["git"] = {"commit": "0123456789abcdef", "dirty": False}
    folder = tmp_path / "run"
    atomic.write_json(folder / "results.json", res.to_json())
    (folder / "runs").mkdir()
    (folder / "runs" / "bm25.trec").write_text("q000 Q0 d1 1 1.0 bm25\n")
    return folder


def test_save_keeps_what_check_needs(results_dir, tmp_path, capsys):
    target = tmp_path / "baselines" / "syn" / "nightly.json"
    assert main(["baseline", "save", str(results_dir), "--to", str(target)]) == 0
    assert "2 retriever(s), 100 queries" in capsys.readouterr().out
    data = json.loads(target.read_text())
    assert list(data) == list(KEEP)
    assert "efficiency" not in data and "intervals" not in data
    assert data["manifest"]["saved_as_baseline"]["retrievers"] == ["bm25", "dense"]
    assert data["manifest"]["git"]["commit"] == "0123456789abcdef"
    saved = Results.load(target)
    original = Results.load(results_dir)
    assert saved.per_query == original.per_query and saved.summary == original.summary
    report = check(saved, original)
    assert report.exit_code == 0 and all(r.delta == 0 for r in report.rows)
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_overwrite_needs_force_and_prints_changes(results_dir, tmp_path, capsys):
    target = tmp_path / "b.json"
    assert main(["baseline", "save", str(results_dir), "--to", str(target)]) == 0
    before = target.read_bytes()
    capsys.readouterr()
    assert main(["baseline", "save", str(results_dir), "--to", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--force" in err[0]
    assert target.read_bytes() == before

    better = make_results({"bm25": {m: v + 0.1 for m, v in base_scores().items()}})
    newer = tmp_path / "newer.json"
    atomic.write_json(newer, better.to_json())
    assert main(["baseline", "save", str(newer), "--to", str(target), "--force"]) == 0
    out = capsys.readouterr().out
    assert "replaced the previous baseline" in out and "bm25 ndcg@10:" in out and "(+0.1000)" in out
    assert "dense: removed" in out
    assert list(Results.load(target).summary) == ["bm25"]


def test_failed_retrievers_refused_unless_left_out(tmp_path, capsys):
    res = make_results({"bm25": base_scores()}, failures={"dense": "boom"})
    src = tmp_path / "r.json"
    atomic.write_json(src, res.to_json())
    target = tmp_path / "b.json"
    assert main(["baseline", "save", str(src), "--to", str(target)]) == 2
    assert "dense failed" in capsys.readouterr().err and not target.exists()
    assert main(["baseline", "save", str(src), "--to", str(target), "--retrievers", "bm25"]) == 0
    assert list(Results.load(target).summary) == ["bm25"]


def test_bad_inputs_exit_2(results_dir, tmp_path, capsys):
    assert main(["baseline", "save", str(results_dir), "--to", str(tmp_path)]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["baseline", "save", str(results_dir), "--to", str(tmp_path / "b.json"), "--retrievers", "x"]) == 2
    assert "no scores for retriever(s) x" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"summary": ')
    assert main(["baseline", "save", str(corrupt), "--to", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: results ") and "not valid JSON" in err[0]


def test_payload_of_empty_results_is_refused():
    with pytest.raises(InputError, match="no scores"):
        baseline_payload(Results())
