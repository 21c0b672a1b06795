"""Tests for harness.extras through the flags of `harness run`: a metric given with `--metrics` is checked
for its extra before any work, as one in the config is (a child process plays the core install, as in
tests/test_extras.py)."""

from __future__ import annotations

import pytest

from tests.test_extras import _errors, _harness

pytestmark = pytest.mark.core

DENSE = "the dense extra: pip install 'retrieval-harness[dense]'"


@pytest.mark.parametrize("metric", ["recall@256tok", "precision@256tok", "ild@10"])
def test_a_metric_flag_that_needs_an_extra_is_refused_before_any_work(tmp_path, metric):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n", encoding="utf-8")
    out = tmp_path / "res"
    proc = _harness("run", "--config", str(cfg), "--out", str(out), "--metrics", f"ndcg@10,{metric}", cwd=tmp_path)
    assert proc.returncode == 2
    # one line, naming the flag and the extra; no `model:` the user never wrote, no run before it
    assert _errors(proc) == [f"error: --metrics: the {metric} metric needs {DENSE}"]
    assert not out.exists()


def test_a_suite_with_a_metric_flag_that_needs_an_extra_writes_nothing(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(
        "datasets:\n  a: {path: demo}\n  b: {path: demo}\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n",
        encoding="utf-8",
    )
    out = tmp_path / "suite"
    proc = _harness("run", "--config", str(cfg), "--out", str(out), "--metrics", "recall@256tok", cwd=tmp_path)
    assert proc.returncode == 2
    assert _errors(proc) == [f"error: --metrics: the recall@256tok metric needs {DENSE}"]
    assert not out.exists()
