"""What a newcomer trips on: make nightly's exit codes, piped progress, warnings repeated at the end
and --strict, default folder names, plot axes, and the README's Quick start."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.cli.run import dataset_label
from harness.config import DatasetConfig

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "datasets" / "demo"


def harness(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **(env or {})},
    )


def bm25_config(tmp_path: Path, dataset: str = "demo", name: str = "bench.yaml") -> Path:
    cfg = tmp_path / name
    cfg.write_text(
        f"dataset: {dataset}\nmetrics: [ndcg@10, mrr@10]\nlatency_queries: 2\nwarmup_queries: 0\n"
        "retrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    return cfg


# ---------------------------------------------------------------------- 1. make nightly: 0 / 1 / 2
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


# ---------------------------------------------------------------------- 4. piped progress
@pytest.mark.slow
def test_piped_progress_closes_every_counted_stage_and_no_library_bar_leaks(tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nlatency_queries: 5\nwarmup_queries: 0\n"
        "retrievers:\n  bm25: {type: bm25}\n  dense: {type: dense}\n",
        encoding="utf-8",
    )
    env = {"HARNESS_CACHE_DIR": str(tmp_path / "c")}
    proc = harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), env=env)
    assert proc.returncode == 0, proc.stderr
    log = proc.stderr
    assert "Loading weights" not in log and "%|" not in log and "it/s]" not in log
    assert re.search(r"\[1/2\] bm25: searching: 83/83 \(100%\) in \d+s", log), log
    assert re.search(r"\[1/2\] bm25: latency: 5/5 \(100%\)", log), log
    assert re.search(r"\[2/2\] dense: encoding docs: 187/187 \(100%\)", log), log


# ---------------------------------------------------------------------- 5. warnings at the end; --strict
def demo_with_a_missing_judged_doc(tmp_path: Path) -> Path:
    folder = tmp_path / "demo-plus"
    shutil.copytree(DEMO, folder)
    with (folder / "qrels" / "test.tsv").open("a", encoding="utf-8") as f:
        f.write("q01\tnot-in-corpus\t1\n")
    return folder


@pytest.mark.slow
def test_data_warnings_are_repeated_after_the_table_and_strict_makes_them_errors(tmp_path):
    cfg = bm25_config(tmp_path, str(demo_with_a_missing_judged_doc(tmp_path)))
    proc = harness("run", "--config", str(cfg), "--out", str(tmp_path / "out"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    tail = proc.stderr.strip().splitlines()[-2:]
    assert tail[0].startswith("1 warning") and "--strict" in tail[0]
    assert "1 judged documents are not in corpus.jsonl" in tail[1]
    strict = harness("run", "--config", str(cfg), "--out", str(tmp_path / "strict"), "--no-progress", "--strict")
    assert strict.returncode == 2
    assert strict.stderr.startswith("error: ") and "(an error under --strict)" in strict.stderr
    assert strict.stderr.count("\n") == 1 and not (tmp_path / "strict" / "results.json").exists()


# ---------------------------------------------------------------------- 6. default folder names
def test_a_corpus_golden_dataset_names_its_folder_after_the_golden_file():
    assert dataset_label(DatasetConfig(corpus="docs/", golden="support/questions.csv")) == "questions"
    assert dataset_label(DatasetConfig(corpus="docs/", golden="q.jsonl", name="support")) == "support"
    assert dataset_label(DatasetConfig(path="../data/scifact")) == "scifact"
    assert dataset_label(DatasetConfig()) == "demo"


@pytest.mark.slow
def test_default_out_folder_of_a_golden_set_is_not_called_demo(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Espresso needs a fine grind.", encoding="utf-8")
    (docs / "b.md").write_text("Cold brew steeps for twelve hours.", encoding="utf-8")
    rows = "question,relevant_ids\nhow fine for espresso,a.md\nhow long cold brew,b.md\n"
    (tmp_path / "support.csv").write_text(rows, encoding="utf-8")
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        "dataset: {corpus: docs, golden: support.csv}\nmetrics: [ndcg@10]\nlatency_queries: 1\n"
        "warmup_queries: 0\nretrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    proc = harness("run", "--config", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    made = [p.name for p in (tmp_path / "results").iterdir()]
    assert len(made) == 1 and made[0].endswith("-support") and "demo" not in made[0], made


# ---------------------------------------------------------------------- 7. plot axes
def _draw(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig.axes


def test_latency_axis_is_labelled_in_plain_numbers():
    from matplotlib.figure import Figure

    from harness.results.plots import fmt_plain, plain_log_x

    assert [fmt_plain(x) for x in (0.05, 0.1, 0.2, 1.0, 20.0, 5000.0)] == ["0.05", "0.1", "0.2", "1", "20", "5,000"]
    for values in ([0.061, 0.065, 0.09], [0.0612], [0.3, 4.0, 850.0], [12.0, 13.0]):
        fig = Figure()
        ax = fig.subplots()
        ax.plot(values, [0.5] * len(values), "o")
        plain_log_x(ax, values)
        (ax,) = _draw(fig)
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        lo, hi = ax.get_xlim()
        assert len(labels) >= 2 and lo < min(values) and max(values) < hi, (values, labels)
        assert all(re.fullmatch(r"[0-9.,]+", t) for t in labels), labels  # no 6x10^-2, no mathtext


def test_metric_at_k_axis_frames_the_curves():
    from harness.results.plots import metric_at_k_figure, value_limits

    lo, hi = value_limits(np.array([0.75, 0.8, 0.9]))
    assert 0.72 <= lo < 0.75 and 0.9 < hi <= 0.93
    assert value_limits(np.array([0.0, 1.0])) == (0.0, pytest.approx(1.02))
    curves = {"a": {"ndcg": np.linspace(0.75, 0.88, 20)}, "b": {"ndcg": np.linspace(0.77, 0.9, 20)}}
    (ax,) = _draw(metric_at_k_figure(curves))
    lo, hi = ax.get_ylim()
    assert (0.9 - 0.75) / (hi - lo) > 0.75  # the curves fill most of the axis, not its top fifth


# ---------------------------------------------------------------------- 2. the README as written
def quick_start() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quick start", 1)[1].split("```", 2)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines()[1:] if line.strip()]


def test_readme_quick_start_runs_in_a_new_shell_after_the_setup_commands():
    lines = quick_start()
    # the commands live in .venv/bin: the block starts by putting them on PATH
    assert lines[0] == "source .venv/bin/activate", lines[0]
    subcommands = harness("--help").stdout
    for line in lines[1:]:
        words = line.split()
        assert words[0] == "harness", line
        assert words[1] in subcommands, line
        for flag in ("--config", "--qrels", "--run", "--baseline", "--current"):
            if flag in words:
                target = words[words.index(flag) + 1]
                assert (REPO / target).exists() or target.startswith("/tmp/"), f"{line}: {target} does not exist"
