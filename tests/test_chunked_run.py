"""Chunking and RAG golden sets through ``harness run``: rows ``retriever[chunking]``, chunking
``none`` equal to an unchunked run, context metrics, and a CSV golden set over Markdown files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent


def test_chunkings_are_rows_and_none_equals_the_unchunked_run(tmp_path):
    common = "dataset: demo\nlatency_queries: 2\nwarmup_queries: 0\nmetrics: [ndcg@10, recall@20, recall@256tok]\n"
    (tmp_path / "plain.yaml").write_text(common + "retrievers: {bm25: {type: bm25}}\n")
    (tmp_path / "chunked.yaml").write_text(
        common
        + textwrap.dedent("""
        baseline: bm25[none]
        chunking:
          none: {method: none}
          t48: {method: tokens, size: 48, overlap: 12}
        retrievers: {bm25: {type: bm25}}
        """)
    )
    plain = harness("run", "--config", "plain.yaml", "--out", "plain", "--no-progress", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    chunked = harness("run", "--config", "chunked.yaml", "--out", "chunked", "--no-progress", cwd=tmp_path)
    assert chunked.returncode == 0, chunked.stderr
    a = json.loads((tmp_path / "plain" / "results.json").read_text())
    b = json.loads((tmp_path / "chunked" / "results.json").read_text())
    assert list(b["summary"]) == ["bm25[none]", "bm25[t48]"]
    assert b["summary"]["bm25[none]"] == a["summary"]["bm25"]  # every document-level figure, exactly
    assert b["per_query"]["bm25[none]"] == a["per_query"]["bm25"]
    assert set(b["significance"]) == {"bm25[t48]"}
    assert 0 < b["summary"]["bm25[t48]"]["recall@256tok"] <= 1
    assert set(b["chunk_level"]["bm25[t48]"]) == {"ndcg@10", "recall@20"}
    assert b["manifest"]["retrievers"]["bm25[t48]"]["chunking"] == "t48"
    # the table: a chunking column beside the retriever's own name, in every format
    assert "chunking" in chunked.stdout
    assert "Against the baseline (bm25[none])" in chunked.stdout  # a title with brackets is not read as markup
    md = (tmp_path / "chunked" / "table.md").read_text(encoding="utf-8")
    assert "| retriever | chunking | ndcg@10 |" in md
    assert "| bm25 (baseline) | none |" in md and "| bm25 | t48 |" in md
    csv_head = (tmp_path / "chunked" / "table.csv").read_text(encoding="utf-8").splitlines()[:3]
    assert csv_head[0].startswith("retriever,chunking,baseline,status,")
    assert csv_head[1].startswith("bm25[none],none,yes,ok,") and csv_head[2].startswith("bm25[t48],t48,,ok,")
    for fmt in ("html", "tex"):
        assert "chunking" in (tmp_path / "chunked" / f"table.{fmt}").read_text(encoding="utf-8")
    assert "retriever | chunking" not in (tmp_path / "plain" / "table.md").read_text(encoding="utf-8")


def test_csv_answers_over_markdown_files_run_with_no_conversion(tmp_path):
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "espresso.md").write_text("# Espresso\nForce hot water through finely ground coffee at 9 bar.\n")
    (docs / "tea.md").write_text("# Tea\nSteep green tea below boiling, at about 80 degrees.\n")
    (docs / "guides" / "bike.md").write_text("# Bikes\nLubricate the chain every few hundred kilometres.\n")
    (tmp_path / "golden.csv").write_text(
        "question,answer\nhow hot should green tea water be,80 degrees\nwhat pressure for espresso,9 bar\n"
        "how often to oil a bike chain,few hundred kilometres\n"
    )
    (tmp_path / "run.yaml").write_text(
        "dataset: {corpus: docs, golden: golden.csv}\nlatency_queries: 1\nmetrics: [mrr@10, recall@3]\n"
        "retrievers: {bm25: {type: bm25, stopwords: null, stemmer: null}}\n"
    )
    proc = harness("run", "--config", "run.yaml", "--out", "out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(res["query_ids"]) == 3 and res["summary"]["bm25"]["recall@3"] == 1.0
