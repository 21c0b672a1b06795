"""Recall against QPS on a real HNSW index (real model, real FAISS) over the demo set."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.load import LoadSpec, run_load, write_load
from harness.load.core import load_load_config


@pytest.mark.slow
def test_ef_search_sweep_on_a_real_hnsw_index(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: demo\ndepth: 10\nretrievers:\n  dense: {type: dense, index: hnsw, M: 4, ef_construction: 8}\n",
        encoding="utf-8",
    )
    config, _, _ = load_load_config(cfg)
    spec = LoadSpec(
        concurrency=[1], duration_s=0.3, warmup_s=0.1, search_params={"ef_search": [1, 256]}, sweep_duration_s=0.3
    )
    result = run_load(config, spec, config_dir=tmp_path, probe_gil=False)
    points = result["dense"]["search_params"]["points"]
    assert [p["value"] for p in points] == [1, 256]
    low, high = points
    # ef_search 256 on a corpus this small visits (nearly) every document; ef 1 on a sparse graph cannot
    assert high["recall@10"] >= 0.99 and low["recall@10"] <= high["recall@10"]
    assert 0 < high["ndcg@10"] <= 1 and high["qps"] > 0 and high["pareto"]
    written = {p.name for p in write_load(result, tmp_path / "out")}
    assert "recall_qps.png" in written
    # serving mode was restored after the sweep: the load levels encode every query
    assert result["dense"]["levels"][0]["requests"] > 0
