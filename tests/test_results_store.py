"""The results folder's store (:mod:`harness.results.store`) on real processes: colliding names
both kept, files honour the umask, an unwritable or foreign --out is refused before any work and
left byte-identical."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.io.trec import read_qrels, read_run
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent


CONFIG = """dataset: demo
latency_queries: 2
warmup_queries: 0
metrics: [ndcg@10]
retrievers:
  "a/b": {type: bm25}
  a_b: {type: bm25, k1: 1.2}
"""


def test_names_that_would_collide_are_both_kept_and_files_honour_the_umask(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    proc = harness("run", "--config", "c.yaml", "--out", "out", "--no-progress", cwd=tmp_path, umask=0o022)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    res = json.loads((out / "results.json").read_text())
    files = {res["run_files"][n]["file"] for n in ("a/b", "a_b")}
    assert len(files) == 2
    qrels = CompiledQrels(read_qrels(out / "qrels.tsv"))
    for name in ("a/b", "a_b"):  # each file holds its own retriever's run
        run = read_run(out / res["run_files"][name]["file"])
        assert evaluate_run(qrels, run, ["ndcg@10"]).means() == res["summary"][name]
    for f in [out / "results.json", out / "qrels.tsv", out / "table.md", *(out / "runs").iterdir()]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f
    assert stat.S_IMODE(out.stat().st_mode) == 0o755


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_out_is_refused_before_work(tmp_path):  # pragma: no cover - CI runs as root
    (tmp_path / "c.yaml").write_text(CONFIG)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    proc = harness("run", "--config", "c.yaml", "--out", "ro/out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and "cannot write results here" in proc.stderr


def test_foreign_out_is_refused_and_left_byte_identical(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    mine = tmp_path / "mine"
    (mine / "runs").mkdir(parents=True)
    files = {
        "results.json": '{"summary": {"x": {"ndcg@10": 1.0}}}\n',  # a user's own file, no harness marker
        "qrels.tsv": "q 0 d 1\n",
        "table.md": "# notes\n",
        "runs/x.trec": "q Q0 d 1 1.0 x\n",
    }
    for name, text in files.items():
        (mine / name).write_text(text)
    before = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()}
    proc = harness("run", "--config", "c.yaml", "--out", "mine", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and "did not write" in proc.stderr
    assert "running" not in proc.stderr  # refused before any retriever ran
    assert {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()} == before


def test_a_disk_that_fills_mid_run_keeps_every_finished_run(tmp_path):
    """A real full file system (a 120 KiB tmpfs in a private mount namespace): the run stops with
    exit 2 and one line, and the retrievers that finished are on disk, named by results.json."""
    import shutil

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a private tmpfs")
    (tmp_path / "c.yaml").write_text(
        "dataset: demo\ndepth: 10\nlatency_queries: 2\nwarmup_queries: 0\nmetrics: [ndcg@10]\nretrievers:\n"
        "  bm25: {type: bm25}\n  bm25b: {type: bm25, k1: 1.2}\n  bm25c: {type: bm25, k1: 1.5}\n"
    )
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    keep = tmp_path / "kept"
    script = (
        f"mount -t tmpfs -o size=120k tmpfs {mnt} && "
        f"{sys.executable} -m harness run --config c.yaml --out {mnt}/out --no-progress 2>err; "
        f"echo $? > rc; cp -r {mnt}/out {keep}"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, env=env, timeout=600, check=True)
    assert (tmp_path / "rc").read_text().strip() == "2"
    assert "No space left on device" in (tmp_path / "err").read_text()
    res = json.loads((keep / "results.json").read_text())
    assert res["complete"] is False and len(res["summary"]) >= 1
    qrels = CompiledQrels(read_qrels(keep / "qrels.tsv"))
    for name in res["summary"]:
        run = read_run(keep / res["run_files"][name]["file"])
        assert evaluate_run(qrels, run, ["ndcg@10"]).means() == res["summary"][name]
