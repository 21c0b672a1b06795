"""harness.results.Results.load on a hand-edited results.json whose per-query values are outside the
metric's range (-5, 7.5, 1e308 for an nDCG): one located line naming the file, retriever, metric and
query, exit 2, in every command that reads the folder (real ``harness run`` folders, child processes)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO, run_harness

CONFIG = REPO / "configs" / "synth-bm25-variants.yaml"  # four BM25 variants, ndcg@10 among the metrics


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("range") / "res"
    r = run_harness("run", "--config", str(CONFIG), "--dataset", "demo", "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


def edited(folder, tmp_path, retriever: str, index: int, value: float, summary: bool = False):
    out = tmp_path / f"edited-{retriever}-{index}"
    shutil.copytree(folder, out)
    d = json.loads((out / "results.json").read_text(encoding="utf-8"))
    if summary:
        d["per_query"][retriever]["ndcg@10"] = [value] * len(d["query_ids"])
        d["summary"][retriever]["ndcg@10"] = value
    else:
        d["per_query"][retriever]["ndcg@10"][index] = value
    (out / "results.json").write_text(json.dumps(d), encoding="utf-8")
    return out, d["query_ids"][index]


@pytest.mark.parametrize(
    ("retriever", "index", "value", "summary", "argv"),
    [
        ("bm25_robertson", 0, -5.0, False, ["report"]),
        ("bm25_nostem", 3, 7.5, False, ["power", "--all-pairs", "--swap-draws", "0"]),
        ("bm25_robertson", 0, 1e308, True, ["power", "--all-pairs", "--swap-draws", "0"]),
        ("bm25", 2, 1.5, False, ["report", "--write"]),
    ],
)
def test_out_of_range_value_is_a_located_line(folder, tmp_path, retriever, index, value, summary, argv):
    out, qid = edited(folder, tmp_path, retriever, index, value, summary)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    r = run_harness(argv[0], str(out), *argv[1:])
    assert r.returncode == 2 and r.stdout == "", r.stdout[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    for needle in (str(out / "results.json"), repr(retriever), "ndcg@10", repr(qid), "outside"):
        assert needle in line, (needle, line)
    assert "Traceback" not in r.stderr and "nan" not in line
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before  # nothing written


def test_the_unedited_folder_and_the_declared_bounds(folder):
    from harness.metrics.names import bounds_of

    assert run_harness("report", str(folder)).returncode == 0
    assert bounds_of("ndcg@10") == (0.0, 1.0) and bounds_of("hits@10")[0] == 0.0 and bounds_of("ild@10") == (0.0, 2.0)
    assert bounds_of("no_such_metric@3") is None
