"""``harness convert``: any golden set the harness reads, written as BEIR, scores the same."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from harness import benchmark, evaluate
from harness.cli import main as cli_main
from harness.datasets import demo_path, load_dataset, load_golden
from harness.io.beir import load_beir
from harness.run import Run

DATA = Path(__file__).parent / "data" / "golden"
METRICS = ["ndcg@10", "mrr@10", "recall@20", "map@100", "precision@5"]
FAST = {"latency_queries": 0, "warmup_queries": 0, "show_progress": False}


def _demo_as_golden_jsonl(path: Path) -> Path:
    """The demo's judgments as a RAG team's JSONL: relevant_ids with grades, answers for the
    keyword queries, tags."""
    demo = load_dataset("demo")
    with path.open("w", encoding="utf-8") as fh:
        for i, q in enumerate(demo.queries):
            row: dict = {"id": q.id, "question": q.text, "tags": ["even" if i % 2 else "odd"]}
            if q.keywords:
                row["answers"] = list(q.keywords)
            else:
                row["relevant_ids"] = demo.qrels[q.id]
            fh.write(json.dumps(row) + "\n")
    return path


def test_cli_convert_pair_writes_beir_that_reloads_identically(tmp_path):
    out = tmp_path / "beir"
    rc = cli_main(
        ["convert", "--corpus", str(DATA / "notes"), "--golden", str(DATA / "questions.jsonl"), "--out", str(out)]
    )
    assert rc == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "corpus.jsonl",
        "qrels/test.tsv",
        "queries.jsonl",
    ]
    original = load_golden(corpus=DATA / "notes", golden=DATA / "questions.jsonl")
    again = load_beir(out)
    assert again.qrels == original.qrels
    assert [(q.id, q.text) for q in again.queries] == [(q.id, q.text) for q in original.queries]
    assert [(d.id, d.title, d.text) for d in again.corpus] == [(d.id, d.title, d.text) for d in original.corpus]
    g4 = next(q for q in again.queries if q.id == "g4")
    assert g4.metadata["answers"] == ["80 degrees", "below boiling"]  # kept for re-chunked judging
    assert next(q for q in again.queries if q.id == "g1").metadata["tags"] == ["coffee"]


def test_convert_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "beir"
    args = ["convert", "demo", "--out", str(out)]
    assert cli_main(args) == 0
    before = (out / "corpus.jsonl").read_bytes()
    assert cli_main(args) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "corpus.jsonl").read_bytes() == before


def test_convert_keep_keywords_round_trips_the_demo_exactly(tmp_path):
    assert cli_main(["convert", "demo", "--out", str(tmp_path / "b"), "--keywords", "keep"]) == 0
    assert load_beir(tmp_path / "b", name="demo").fingerprint == load_dataset("demo").fingerprint


def test_convert_needs_one_source(tmp_path, capsys):
    assert cli_main(["convert", "--out", str(tmp_path / "x")]) == 2
    assert cli_main(["convert", "--corpus", str(DATA / "notes"), "--out", str(tmp_path / "x")]) == 2
    assert "go together" in capsys.readouterr().err


def _golden_and_its_conversion(tmp_path: Path):
    """The demo as a JSONL golden set (loaded), converted by ``harness convert`` into ``tmp_path/b``."""
    golden = _demo_as_golden_jsonl(tmp_path / "golden.jsonl")
    corpus = str(demo_path() / "corpus.jsonl")
    assert cli_main(["convert", "--corpus", corpus, "--golden", str(golden), "--out", str(tmp_path / "b")]) == 0
    return load_golden(corpus=demo_path() / "corpus.jsonl", golden=golden)


def test_jsonl_golden_scores_like_its_beir_conversion_on_a_run(tmp_path):
    ds = _golden_and_its_conversion(tmp_path)
    beir = load_beir(tmp_path / "b")
    # one fixed run (every query ranks the corpus in a query-dependent order) scored against both
    ids = [d.id for d in ds.corpus]
    run = Run.from_lists(
        {
            q.id: [(d, zlib.crc32(f"{q.id} {d}".encode()) % 997 / 997) for d in ids[(i * 7) % 50 :][:60]]
            for i, q in enumerate(ds.queries)
        }
    )
    a = evaluate(ds.qrels, run, METRICS, per_query=True)
    b = evaluate(beir.qrels, run, METRICS, per_query=True)
    assert a == b
    assert a == evaluate(load_dataset("demo").qrels, run, METRICS, per_query=True)


@pytest.mark.slow
def test_jsonl_golden_benchmarks_like_its_beir_conversion(tmp_path):
    ds = _golden_and_its_conversion(tmp_path)
    retrievers = {"bm25": {"type": "bm25"}}
    via_golden = benchmark(ds, retrievers, metrics=METRICS, **FAST)
    via_beir = benchmark(str(tmp_path / "b"), retrievers, metrics=METRICS, **FAST)
    assert via_golden.per_query == via_beir.per_query
    assert via_golden.summary == via_beir.summary
    assert via_golden.summary == benchmark("demo", retrievers, metrics=METRICS, **FAST).summary


def test_convert_with_chunking_writes_chunks_and_chunk_level_judgments(tmp_path):
    out = tmp_path / "chunks"
    args = ["convert", "--corpus", str(DATA / "notes"), "--golden", str(DATA / "questions.jsonl")]
    assert cli_main([*args, "--chunking", "markdown:16", "--out", str(out)]) == 0
    beir = load_beir(out)
    notes = load_golden(corpus=DATA / "notes", golden=DATA / "questions.jsonl")
    texts = {d.id: d.text for d in notes.corpus}
    for d in beir.corpus:
        parent, start, end = d.metadata["parent_id"], d.metadata["start"], d.metadata["end"]
        assert d.id.startswith(parent + "#") and texts[parent][start:end] == d.text
    espresso_chunks = {d.id for d in beir.corpus if d.metadata["parent_id"] == "espresso.md"}
    assert len(espresso_chunks) > 1 and set(beir.qrels["g1"]) == espresso_chunks
    # answers resolved per chunk: only chunks holding "80 degrees" / "below boiling"
    assert set(beir.qrels["g4"]) == {
        d.id for d in beir.corpus if "80 degrees" in d.text.lower() or "below boiling" in d.text.lower()
    }
    assert cli_main([*args, "--chunking", "tokens:big", "--out", str(tmp_path / "x")]) == 2
