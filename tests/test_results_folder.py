"""The results folder (:mod:`harness.results.folder`, :mod:`harness.results.integrity`) on real
processes and real files: a re-run or resume replaces only what the harness wrote, reuses a stored
run only when the content it read is unchanged, never replaces complete results before the new
ones are complete, even under SIGKILL, and every reader refuses an incomplete or altered folder;
``--out .`` works; a baseline is never saved over its own input; Ctrl-C exits 130 with one line."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SLOW_RETRIEVER, default_sigint, kill_when_started, run_harness

REPO = Path(__file__).resolve().parent.parent
RUN_FILE = REPO / "examples" / "runs" / "tfidf.trec"

pytestmark = pytest.mark.slow  # real processes, each a few seconds


def harness(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_harness(*args, cwd=cwd, env=env, timeout=timeout, cwd_on_path=True)


CONFIG = textwrap.dedent("""
    dataset: demo
    depth: 20
    latency_queries: 2
    warmup_queries: 0
    metrics: [ndcg@10]
    baseline: bm25
    stats: {bootstrap: 100, permutations: 200}
    retrievers:
      bm25: {type: bm25}
      rf: {type: run_file, path: rf.trec}
""")

WITH_SLOW = CONFIG + '  slow: {type: python, class: "slow:Slow", allow_unknown_docs: true}\n'


def _setup(tmp: Path, config: str = CONFIG) -> None:
    (tmp / "rf.trec").write_bytes(RUN_FILE.read_bytes())
    (tmp / "slow.py").write_text(SLOW_RETRIEVER)
    (tmp / "run.yaml").write_text(config)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(tmp: Path, *extra: str, out: str = "out", env: dict | None = None) -> subprocess.CompletedProcess[str]:
    proc = harness("run", "--config", "run.yaml", "--out", out, "--no-progress", *extra, cwd=tmp, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _kill_when_started(tmp: Path, *extra: str, out: str = "out") -> None:
    """Start a run whose slow retriever blocks, SIGKILL it once that retriever is running."""
    kill_when_started(tmp, "run", "--config", "run.yaml", "--out", out, "--no-progress", *extra)


USER_FILES = {
    "notes.txt": b"my notes\n",
    "check.md": b"# what harness check said\n",
    "nights.jsonl": b'{"night": 1}\n',
    "runs/x.trec": b"q1 Q0 d1 1 1.0 mine\n",
    "mine/deep/file.bin": bytes(range(256)),
}


def _put_user_files(out: Path) -> None:
    for rel, data in USER_FILES.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)


def _assert_user_files(out: Path) -> None:
    for rel, data in USER_FILES.items():
        assert (out / rel).read_bytes() == data, rel


# ---------------------------------------------------------------------------------------------- row 1
def test_rerun_and_resume_replace_only_what_the_harness_wrote(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    _put_user_files(out)
    _run(tmp_path)  # a fresh run over finished results
    _assert_user_files(out)
    _run(tmp_path, "--resume")
    _assert_user_files(out)
    res = json.loads((out / "results.json").read_text())
    assert res["complete"] is True
    assert "results.json" in res["files"] and "runs/x.trec" not in res["files"] and "notes.txt" not in res["files"]
    assert all((out / f).is_file() for f in res["files"])
    # a retriever dropped from the config: its stored run goes, the user's runs/x.trec stays
    (tmp_path / "run.yaml").write_text(CONFIG.replace("  rf: {type: run_file, path: rf.trec}\n", ""))
    _run(tmp_path, "--resume")
    _assert_user_files(out)
    assert not any(p.name.startswith("rf-") for p in (out / "runs").iterdir())
    assert not list(tmp_path.glob(".out.harness-*"))  # no staging folder left behind


# ---------------------------------------------------------------------------------------------- row 2
def _reverse(path: Path) -> None:
    by: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        q, _, d, *_ = line.split()
        by.setdefault(q, []).append(d)
    path.write_text(
        "".join(f"{q} Q0 {d} {i + 1} {100 - i} rev\n" for q, ds in by.items() for i, d in enumerate(ds[::-1]))
    )


def test_resume_runs_again_when_the_content_a_retriever_reads_changed(tmp_path):
    _setup(tmp_path, WITH_SLOW)
    _run(tmp_path)
    before = json.loads((tmp_path / "out" / "results.json").read_text())["summary"]["rf"]["ndcg@10"]
    _reverse(tmp_path / "rf.trec")
    resumed = _run(tmp_path, "--resume")
    assert "bm25: reusing the stored run" in resumed.stderr
    assert "rf: reusing" not in resumed.stderr and "slow: reusing" in resumed.stderr
    after = json.loads((tmp_path / "out" / "results.json").read_text())["summary"]["rf"]["ndcg@10"]
    fresh = _run(tmp_path, out="fresh")
    assert after == json.loads((tmp_path / "fresh" / "results.json").read_text())["summary"]["rf"]["ndcg@10"]
    assert after < before - 0.3, fresh.stderr
    # the python retriever's source changed: it runs again
    (tmp_path / "slow.py").write_text(SLOW_RETRIEVER.replace('q.id + "-none"', 'q.id + "-other"'))
    again = _run(tmp_path, "--resume")
    assert "slow: reusing" not in again.stderr and "rf: reusing the stored run" in again.stderr


# ---------------------------------------------------------------------------------------------- row 3
def test_sigkill_of_a_resume_leaves_complete_results_whole_then_resume_finishes(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    _put_user_files(out)
    before = _snapshot(out)
    (tmp_path / "run.yaml").write_text(WITH_SLOW)  # one more retriever: the resume has work to do
    _kill_when_started(tmp_path, "--resume")
    assert _snapshot(out) == before  # results.json, significance, intervals, runs: all as they were
    assert harness("report", "out", cwd=tmp_path).returncode == 0
    assert harness("check", "--baseline", "out", "--current", "out", cwd=tmp_path).returncode == 0
    resumed = _run(tmp_path, "--resume")
    assert "bm25: reusing the stored run" in resumed.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["complete"] is True and set(res["summary"]) == {"bm25", "rf", "slow"} and res["significance"]
    _assert_user_files(out)


def test_readers_refuse_an_incomplete_folder_unless_allowed(tmp_path):
    _setup(tmp_path, WITH_SLOW)
    _kill_when_started(tmp_path)  # a fresh folder: killed with bm25 and rf finished
    out = tmp_path / "out"
    assert json.loads((out / "results.json").read_text())["complete"] is False
    for args in (
        ["report", "out"],
        ["check", "--baseline", "out", "--current", "out"],
        ["baseline", "save", "out", "--to", "base.json"],
    ):
        proc = harness(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        line = proc.stderr.strip()
        assert "\n" not in line and "results.json" in line and "incomplete" in line and "--allow-incomplete" in line
        allowed = harness(*args, "--allow-incomplete", cwd=tmp_path)
        assert allowed.returncode == 0, (args, allowed.stderr)
        assert "incomplete" in allowed.stderr
    assert not (tmp_path / "base.json").exists() or json.loads((tmp_path / "base.json").read_text())["summary"]


# ---------------------------------------------------------------------------------------------- row 13
def test_a_run_file_changed_after_the_run_is_refused_by_every_reader(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    ref = json.loads((out / "results.json").read_text())["run_files"]["bm25"]["file"]
    original = (out / ref).read_bytes()
    _reverse(out / ref)
    qrels = str(out / "qrels.tsv")
    for args in (
        ["report", "out"],
        ["report", "out", "--worst", "3"],
        ["check", "--baseline", "out", "--current", "out"],
        ["baseline", "save", "out", "--to", "base.json"],
        ["evaluate", "--qrels", qrels, "--run", f"out/{ref}"],
        ["compare", f"out/{ref}", str(RUN_FILE), "--qrels", qrels],
    ):
        proc = harness(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert Path(ref).name in proc.stderr and "changed after the run" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert harness(*args, "--allow-incomplete", cwd=tmp_path).returncode == 0, args
    (out / ref).write_bytes(original)
    assert harness("report", "out", cwd=tmp_path).returncode == 0
    missing = out / json.loads((out / "results.json").read_text())["run_files"]["rf"]["file"]
    missing.unlink()
    proc = harness("report", "out", cwd=tmp_path)
    assert proc.returncode == 2 and missing.name in proc.stderr and "missing" in proc.stderr


# ---------------------------------------------------------------------------------------------- row 7
def test_out_dot_from_inside_a_results_folder(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    _put_user_files(out)
    for extra in ((), ("--resume",)):
        proc = harness("run", "--config", "../run.yaml", "--out", ".", "--no-progress", *extra, cwd=out)
        assert proc.returncode == 0, proc.stderr
        assert "empty name" not in proc.stderr
        res = json.loads((out / "results.json").read_text())
        assert res["complete"] is True and set(res["summary"]) == {"bm25", "rf"}
        _assert_user_files(out)
    assert harness("report", ".", cwd=out).returncode == 0


# ---------------------------------------------------------------------------------------------- row 19
def test_baseline_save_never_writes_over_its_own_input(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    before = _snapshot(out)
    (tmp_path / "link.json").symlink_to(out / "results.json")
    for to in ("out/results.json", "out/../out/results.json", "link.json", "out/runs/b.json", "out/qrels.tsv"):
        proc = harness("baseline", "save", "out", "--to", to, "--force", cwd=tmp_path)
        assert proc.returncode == 2, (to, proc.stderr)
        assert "nothing was written" in proc.stderr
    assert _snapshot(out) == before
    ok = harness("baseline", "save", "out", "--to", "base.json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    again = harness("baseline", "save", "base.json", "--to", "base.json", "--force", cwd=tmp_path)
    assert again.returncode == 2 and "nothing was written" in again.stderr


# ---------------------------------------------------------------------------------------------- row 20
TORCH_BUSY = textwrap.dedent("""
    import pathlib, torch

    class Busy:
        def index(self, corpus):
            pathlib.Path("busy-started.flag").write_text("1")
            a = torch.randn(256, 256)
            while True:  # native code on torch's threads, as an encode is
                a = torch.tanh(a @ a)

        def search(self, queries, k):
            return {}
""")


def test_ctrl_c_during_native_work_exits_130_with_one_line(tmp_path):
    _setup(tmp_path, CONFIG + '  busy: {type: python, class: "busy:Busy"}\n')
    (tmp_path / "busy.py").write_text(TORCH_BUSY)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--config", "run.yaml", "--out", "out", "--no-progress"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "busy-started.flag").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "terminate called" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: interrupted: 2 finished retriever(s) kept in") and "--resume" in last
    assert "Traceback" not in err
    resumed = _run(tmp_path, "--resume", "--retrievers", "bm25,rf")
    assert "bm25: reusing the stored run" in resumed.stderr and "rf: reusing the stored run" in resumed.stderr


CHECKPOINT_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import harness.cache as c

    c.CHECKPOINT_S = 0.5
    cache = c.VectorCache(sys.argv[1], "embeddings", "k", dtype=np.float32, row_shape=(2,))
    keys = [c.text_key(str(i)) for i in range(10_000)]

    def slow(todo):
        time.sleep(0.01 * len(todo))  # 100 rows a second: 1,024 rows would take 10 s
        return np.ones((len(todo), 2), dtype=np.float32)

    cache.get_or_compute(keys, slow)
""")


def test_encoding_checkpoints_by_time_so_a_kill_loses_little(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", CHECKPOINT_SCRIPT, str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("embeddings/*/*.keys")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    keys = list(tmp_path.glob("embeddings/*/*.keys"))
    rows = sum(len(k.read_text().split()) for k in keys)
    assert len(keys) >= 2 and 0 < rows < 1024  # committed long before a 1,024-row chunk was full
    for k in keys:
        arr = np.load(k.with_suffix(".npy"))
        assert arr.shape == (len(k.read_text().split()), 2)


def test_results_json_lists_exactly_the_files_the_harness_wrote(tmp_path):
    _setup(tmp_path)
    _run(tmp_path)
    out = tmp_path / "out"
    res = json.loads((out / "results.json").read_text())
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(res["files"]) == on_disk
    for name, ref in res["run_files"].items():
        assert hashlib.sha256((out / ref["file"]).read_bytes()).hexdigest() == ref["sha256"], name


@pytest.mark.parametrize("where", ["link", "nested"])
def test_out_through_a_link_or_a_relative_path_swaps_the_real_folder(tmp_path, where):
    _setup(tmp_path)
    real = tmp_path / "real" / "out"
    real.parent.mkdir()
    if where == "link":
        (tmp_path / "out").symlink_to(real, target_is_directory=True)
        target = "out"
    else:
        target = "real/../real/out"
    _run(tmp_path, out=target)
    _put_user_files(real)
    _run(tmp_path, out=target)
    _assert_user_files(real)
    if where == "link":
        assert (tmp_path / "out").is_symlink()
