"""A results folder is read only as the harness wrote it, through the real CLI.

A run file named in ``results.json`` must lie inside the folder (a path with ``..``, an absolute path
or a link out of ``runs/`` is refused, ``--allow-incomplete`` or not, so nothing from elsewhere lands
in report.html); NaN per-query values and a schema 2 body labelled schema 1 are located load errors,
not internal errors; ``judge sample --seed -1`` is one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_harness

CONFIG = """\
dataset: demo
metrics: [ndcg@10, recall@100]
depth: 20
latency_queries: 2
warmup_queries: 0
retrievers:
  bm25: {type: bm25}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("res")
    (d / "c.yaml").write_text(CONFIG)
    proc = run_harness("run", "--config", "c.yaml", "--out", "res", "--no-progress", cwd=d)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return d / "res"


def _copy(folder: Path, tmp_path: Path, edit) -> Path:
    out = tmp_path / "edited"
    shutil.copytree(folder, out, symlinks=True)
    data = json.loads((out / "results.json").read_text())
    edit(data, out)
    (out / "results.json").write_text(json.dumps(data))  # json.dumps writes NaN as the literal NaN
    return out


def _escape_to(target: str):
    def edit(data, out: Path) -> None:
        ref = data["run_files"]["bm25"]
        outside = out.parent / "elsewhere"
        outside.mkdir(exist_ok=True)
        shutil.copy(out / ref["file"], outside / "bm25.trec")  # the same bytes: its sha256 still matches
        ref["file"] = target.replace("ABS", str(outside / "bm25.trec"))

    return edit


@pytest.mark.parametrize("target", ["../elsewhere/bm25.trec", "runs/../../elsewhere/bm25.trec", "ABS"])
def test_a_run_file_outside_the_folder_is_refused(folder, tmp_path, target):
    edited = _copy(folder, tmp_path, _escape_to(target))
    for args in (["report", str(edited)], ["report", str(edited), "--allow-incomplete", "--html"],
                 ["check", "--baseline", str(folder), "--current", str(edited), "--allow-incomplete"]):  # fmt: skip
        one_line_error(run_harness(*args, cwd=tmp_path), "run_files.bm25.file", "outside the results folder")
    assert "elsewhere" not in (edited / "report.html").read_text(errors="replace")


def test_a_link_out_of_runs_is_refused(folder, tmp_path):
    def edit(data, out: Path) -> None:
        ref = data["run_files"]["bm25"]
        outside = out.parent / "secret.trec"
        shutil.copy(out / ref["file"], outside)
        (out / "runs" / "link.trec").symlink_to(outside)
        ref["file"] = "runs/link.trec"

    edited = _copy(folder, tmp_path, edit)
    proc = run_harness("report", str(edited), "--allow-incomplete", "--html", cwd=tmp_path)
    one_line_error(proc, "run_files.bm25.file", "outside the results folder")


def test_nan_per_query_values_are_a_located_load_error(folder, tmp_path):
    def edit(data, out: Path) -> None:
        data["per_query"]["bm25"]["ndcg@10"][3] = float("nan")

    edited = _copy(folder, tmp_path, edit)
    q = json.loads((folder / "results.json").read_text())["query_ids"][3]
    for args in (["report", str(edited)], ["report", str(edited), "--html"], ["power", str(edited)]):
        one_line_error(run_harness(*args, cwd=tmp_path), "results.json", f"per_query.bm25.{q}.ndcg@10", "finite")


def test_a_schema_2_body_labelled_schema_1_is_a_located_load_error(folder, tmp_path):
    def edit(data, out: Path) -> None:
        data["schema_version"] = 1

    edited = _copy(folder, tmp_path, edit)
    for args in (["report", str(edited)], ["check", "--baseline", str(folder), "--current", str(edited)]):
        one_line_error(run_harness(*args, cwd=tmp_path), "results.json", "per_query.bm25", "schema_version 1")


def test_judge_sample_with_a_negative_seed_is_one_line(folder, tmp_path):
    proc = run_harness("pool", str(folder), "--depth", "5", "--out", "pool.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_harness("judge", "sample", "pool.csv", "--queries", "5", "--seed", "-1", "--out", "s.csv", cwd=tmp_path)
    one_line_error(proc, "--seed", ">= 0")
    assert not (tmp_path / "s.csv").exists()
