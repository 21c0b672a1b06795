"""Long commands show progress in a log, not only on a terminal: ``harness train-reranker`` (minutes to
half an hour) and ``harness sweep`` (one run per point) print timestamped phase lines to a stderr that
is not a terminal, as ``run`` and ``stream`` do; ``--no-progress`` shows none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import build_tiny_bert

STAMP = r"^\d\d:\d\d:\d\d harness: "


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-base"), head=False)


def _train(tiny_base: Path, tmp_path: Path, capsys, *flags: str) -> str:
    args = ["train-reranker", "--dataset", "demo", "--split", "test", "--base", str(tiny_base), "--epochs", "1",
            "--max-queries", "6", "--negatives", "2", "--max-length", "32", "--validation-depth", "5",
            "--no-dense", "--first-stage", "bm25", "--out", str(tmp_path / "model"), *flags]  # fmt: skip
    assert main(args) == 0
    return capsys.readouterr().err


@pytest.mark.slow
def test_train_reranker_reports_each_phase_in_a_log(tiny_base, tmp_path, capsys):
    err = _train(tiny_base, tmp_path, capsys)
    for phase in ("first stages over", "mining negatives for 6 queries", "epoch 1/1: training",
                  "epoch 1/1: validating"):  # fmt: skip
        assert re.search(STAMP + ".*" + re.escape(phase), err, re.M), (phase, err[-3000:])


@pytest.mark.slow
def test_train_reranker_no_progress_shows_no_phase(tiny_base, tmp_path, capsys):
    err = _train(tiny_base, tmp_path, capsys, "--no-progress")
    assert "first stages over" not in err and "epoch 1/1: training" not in err


SWEEP = (
    "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n"
    "sweep:\n  folds: 2\n  metric: ndcg@10\n  grid:\n    bm25: {k1: [0.9, 1.2]}\n"
)


@pytest.mark.parametrize("flags", [[], ["--no-progress"]])
def test_sweep_reports_progress_in_a_log_unless_asked_not_to(tmp_path, capsys, flags):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(SWEEP, encoding="utf-8")
    assert main(["sweep", "--config", str(cfg), *flags]) == 0
    err = capsys.readouterr().err
    shown = re.search(STAMP + r"\[\d+/\d+\] bm25\[k1=", err, re.M)
    assert bool(shown) == (not flags), err[-3000:]


@pytest.mark.slow
def test_a_rerank_stage_never_counts_past_its_total(tmp_path, capsys):
    """A rerank stage opens its own "scoring pairs" stage inside "searching": the queries the search
    then reports done are not added to the pairs (a log read "30,300/30,000 (100%)")."""
    ce = build_tiny_bert(tmp_path / "ce", head=True)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n"
        f"  rr: {{type: rerank, of: bm25, model: '{ce}', top_n: 5, max_length: 32}}\n",
        encoding="utf-8",
    )
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "rr: scoring pairs" in err, err[-3000:]
    counts = [(int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in re.findall(r"([\d,]+)/([\d,]+) \(", err)]
    assert counts and all(done <= total for done, total in counts), [c for c in counts if c[0] > c[1]]
