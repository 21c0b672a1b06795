"""Stream figures that read right: each checkpoint marked cold or warm with its encoding time apart
from the write rate; tables within 80 columns with a legend naming every column; ``stream.json`` holding each
retriever's whole config; ``--help`` and the last line naming report.html; LanceDB's own log lines kept off
the terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli import main
from harness.stream.render import QUALITY, TIME, legend, to_text
from harness.stream.results import StreamResults

CONFIG = "dataset: demo\nmetrics: [ndcg@10]\ndepth: 100\nretrievers:\n{retrievers}\nstream:\n  steps: 1\n  probes: 2\n"


def _checkpoint(cp: int, **over) -> dict:
    c = {
        "checkpoint": cp, "visible": 123456, "queries_scored": 30000, "metrics": {"ndcg@10": 0.81234},
        "exact": {"ndcg@10": 0.91234}, "ghost_hits": {"probes": 1000, "hits": 999},
        "stale_hits": {"probes": 1000, "hits": 1000}, "short_results": 30000, "blinks": 1000,
        "retrievable_s": {"p50": 1234.5, "p95": 2345.6, "p99": 12345.6, "never": 1.0}, "write_rate": 123456.0,
        "latency_ms": {"p50": 123456.7, "p99": 1234567.8}, "encode_s": 12345.67, "cache": "warm",
        "queries_left_out": 0,
    }  # fmt: skip
    return {**c, **over}


def _doc(**over) -> StreamResults:
    """A whole ``stream.json`` as the typed model the text and the page read (``over`` replaces keys)."""
    doc = {
        "version": "0.1.0", "dataset": {"name": "demo", "split": "test", "documents": 187}, "queries": 83,
        "metrics": ["ndcg@10"], "depth": 100, "stream": {}, "runbook": None, "retrievers": {}, "complete": True,
        "files": {},
    }  # fmt: skip
    return StreamResults.model_validate({**doc, **over})


def test_the_tables_fit_80_columns_and_the_legend_names_every_column():
    doc = _doc(metrics=["recall@100"], retrievers={"a_long_retriever_name": {
        "type": "dense", "config": {"type": "dense", "index": "hnsw", "precision": "float32"},
        "checkpoints": [_checkpoint(0, cache="cold"), _checkpoint(1)]}})  # fmt: skip
    text = to_text(doc)
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "a_long_retriever_name (dense, index: hnsw)" in text
    said = " ".join(legend("recall@100"))
    for column in [c.format(m="recall@100") for c in QUALITY] + list(TIME):
        for word in column.split():
            assert word in said, column
    for term in ("hits/probes", "cold", "warm", "encoding included", "–"):
        assert term in said, term


@pytest.mark.core
def test_stream_json_holds_each_retrievers_whole_config_and_the_last_line_names_the_page(tmp_path, capsys):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(CONFIG.format(retrievers="  tuned: {type: bm25, k1: 1.2, b: 0.5}"), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["stream", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"the page is {out / 'report.html'}") and (out / "report.html").is_file()
    rec = json.loads((out / "stream.json").read_text(encoding="utf-8"))["retrievers"]["tuned"]
    assert rec["config"]["k1"] == 1.2 and rec["config"]["b"] == 0.5 and rec["config"]["type"] == "bm25"
    assert all(c["cache"] is None and c["encode_s"] is None for c in rec["checkpoints"])  # bm25 encodes nothing


@pytest.mark.core
def test_help_names_report_html(capsys):
    with pytest.raises(SystemExit):
        main(["stream", "--help"])
    assert "report.html" in capsys.readouterr().out


@pytest.mark.slow
def test_a_cold_row_and_its_warm_twin_are_marked_and_the_encoding_is_apart(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cold-cache"))
    cfg = tmp_path / "s.yaml"
    cfg.write_text(CONFIG.format(retrievers="  flat: {type: dense}\n  hnsw: {type: dense, index: hnsw}"),
                   encoding="utf-8")  # fmt: skip
    out = tmp_path / "out"
    assert main(["stream", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "stream.json").read_text(encoding="utf-8"))
    flat, hnsw = (doc["retrievers"][n]["checkpoints"] for n in ("flat", "hnsw"))
    assert flat[0]["cache"] == "cold" and flat[0]["encode_s"] > 0  # the initial load encoded the documents
    assert hnsw[0]["cache"] == "warm" and hnsw[0]["encode_s"] < flat[0]["encode_s"]  # read what flat cached
    assert doc["retrievers"]["hnsw"]["config"]["index"] == "hnsw"
    assert "hnsw (dense, index: hnsw)" in text and " cold " in text and " warm " in text


def test_lancedb_logs_errors_only_unless_asked(monkeypatch):
    pytest.importorskip("lancedb")
    from retrievers.vectordb import lance

    monkeypatch.delenv("LANCEDB_LOG", raising=False)
    lance._lancedb()
    assert os.environ["LANCEDB_LOG"] == "error"
    monkeypatch.setenv("LANCEDB_LOG", "warn")
    lance._lancedb()
    assert os.environ["LANCEDB_LOG"] == "warn"


def test_lancedbs_warn_lines_stay_off_the_terminal(tmp_path):
    """A real process: lancedb's native module reads the level once, at import, from the environment."""
    pytest.importorskip("lancedb")
    import subprocess
    import sys

    code = (
        "import warnings\nwarnings.simplefilter('ignore')\n"
        "from retrievers.vectordb import lance\nlance._lancedb()\nimport lancedb, pyarrow as pa\n"
        f"db = lancedb.connect({str(tmp_path / 'db')!r})\n"
        "rows = [[float(i % 7), float(i % 5), float(i % 3), 1.0] for i in range(300)]\n"
        "t = db.create_table('t', pa.table({'id': [str(i) for i in range(300)], 'vector': rows}))\n"
        # 64 partitions asked of 300 vectors: lance's Rust core warns ("training 1 of the 64 requested")
        "t.create_index(metric='cosine', index_type='IVF_PQ', num_partitions=64, num_sub_vectors=2)\n"
        "print('indexed')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "indexed" in proc.stdout, proc.stderr[-2000:]
    assert " WARN " not in proc.stderr, proc.stderr[-2000:]


def test_the_page_has_axes_tells_engine_from_exact_and_tables_every_checkpoint():
    import re

    from harness.stream.page import to_html

    doc = _doc(created="2026-12-07T05:50:00+00:00",
               retrievers={"hnsw": {"type": "dense", "checkpoints": [_checkpoint(0, cache="cold"), _checkpoint(1)]}})
    page = to_html(doc)
    assert "dataset demo (test, 187 documents, 83 queries); streamed 2026-12-07T05:50:00+00:00" in page
    assert len(re.findall(r'text-anchor="end">[0-9.e-]+</text>', page)) >= 5  # y ticks with their values
    assert ">checkpoint</text>" in page
    engine, exact = page.split("exact index over the same visible documents", 1)[0], page
    assert "<circle" in engine.split("<figcaption>", 2)[1] and "<rect" in exact  # filled dots vs hollow squares
    assert 'stroke-dasharray="6,4"' in page
    for column in ("ghost hits", "stale hits", "blinks", "writes/s", "encode s", "cache", "latency p50 ms"):
        assert f"<th>{column}</th>" in page, column
    assert "<td>999/1000</td>" in page and "<td>cold</td>" in page and "<td>warm</td>" in page
