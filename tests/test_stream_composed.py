"""``harness stream`` of composed rows (``hybrid``, ``rerank``, ``mmr``): each checkpoint's answer is the
stage ``harness run`` computes over its parts' answers at that checkpoint, documents as they are then;
a composed row with a part the stream cannot write is refused before any work, naming the part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import benchmark
from harness.datasets import load_dataset
from harness.io.trec import read_run
from harness.model import GoldenDataset
from harness.stream import StreamOptions, run_stream, to_text, version_of
from tests.conftest import build_tiny_bert
from tests.test_stream import STREAM, _bad, _config, _recompute, _replay

COMPOSED = ("hybrid", "rerank", "mmr")


def _rows(ce: Path) -> str:
    return (
        "  bm25: {type: bm25}\n"
        "  dense: {type: dense}\n"
        "  hybrid: {type: hybrid, of: [bm25, dense]}\n"
        f"  rerank: {{type: rerank, of: hybrid, model: '{ce}', top_n: 20}}\n"
        "  mmr: {type: mmr, of: rerank, lambda: 0.5, top_n: 10}"
    )


def _static(ds: GoldenDataset, versions: dict[str, int], ce: Path) -> dict[str, dict]:
    """``harness run``'s runs of the composed rows over exactly these documents, indexed fresh."""
    docs = [version_of(ds.corpus[ds.doc_index[i]], v) for i, v in sorted(versions.items())]
    res = benchmark(
        GoldenDataset.build("visible", docs, ds.queries, ds.qrels),
        {
            "bm25": {"type": "bm25"},
            "dense": {"type": "dense"},
            "hybrid": {"type": "hybrid", "of": ["bm25", "dense"]},
            "rerank": {"type": "rerank", "of": "hybrid", "model": str(ce), "top_n": 20},
            "mmr": {"type": "mmr", "of": "rerank", "lambda": 0.5, "top_n": 10},
        },
        depth=100,
        latency_queries=0,
        warmup_queries=0,
    )
    return {name: dict(res.runs[name].items()) for name in COMPOSED}


def test_composed_rows_stream_as_harness_run_computes_them(tmp_path: Path) -> None:
    """hybrid of bm25 and flat dense, a cross-encoder rerank of it, MMR of that: at every checkpoint
    exact == metrics, no ghost or stale hit while probes were drawn, every run holds only visible
    documents and re-scores with pytrec_eval; the checkpoint after the first step's inserts, deletes and
    updates and the last one are, ranking for ranking, what ``harness run`` gives over a corpus of the
    documents visible then (updated ones in their new text): the stages saw the documents as they were."""
    ce = build_tiny_bert(tmp_path / "ce", head=True)
    cfg = _config(tmp_path, _rows(ce), STREAM)
    out = tmp_path / "out"
    doc = run_stream(StreamOptions(config=cfg, out=out)).to_json()
    ds = load_dataset("demo")
    assert _recompute(out, ds, doc) == 5 * 5
    visibles = _replay(out)
    for name in COMPOSED:
        rec = doc["retrievers"][name]
        assert "error" not in rec and rec["config"]["of"]
        for cp, c in enumerate(rec["checkpoints"]):
            assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12), (name, cp)
            assert c["ghost_hits"]["hits"] == 0 and c["stale_hits"]["hits"] == 0, (name, cp)
            assert c["encode_s"] is not None, "the dense part's encoder is the row's"
            held = {d for _, r in read_run(out / "runs" / f"{name}-cp{cp}.trec").items() for d, _ in r}
            assert held <= set(visibles[cp].versions)
        cps = rec["checkpoints"]
        assert sum(c["ghost_hits"]["probes"] for c in cps) > 0 and sum(c["stale_hits"]["probes"] for c in cps) > 0
        steps = cps[1:-1]  # 0: the initial load; the last: after settle, no write
        assert all(c["write_rate"] and c["latency_ms"]["p50"] for c in steps)
        assert all(c["retrievable_s"]["never"] is not None for c in steps)
    assert visibles[1].versions != visibles[0].versions and any(v > 0 for v in visibles[1].versions.values())
    for cp in (1, len(visibles) - 1):
        want = _static(ds, visibles[cp].versions, ce)
        for name in COMPOSED:
            got = dict(read_run(out / "runs" / f"{name}-cp{cp}.trec").items())
            for q in ds.queries:
                g, w = got.get(q.id, []), want[name].get(q.id, [])
                assert [d for d, _ in g] == [d for d, _ in w], (name, cp, q.id)
                assert [s for _, s in g] == pytest.approx([s for _, s in w], rel=1e-5), (name, cp, q.id)


def test_a_composed_row_with_a_part_that_cannot_change_is_refused_naming_it(tmp_path: Path, capsys) -> None:
    run = tmp_path / "r.trec"
    run.write_text("q01 Q0 d0001 1 1.0 x\n")
    fixed = "  bm25: {type: bm25}\n  fixed: {type: run_file, path: r.trec}"
    cfg = _config(tmp_path, f"  both: {{type: hybrid, of: [bm25, fixed]}}\n{fixed}", "  steps: 1")
    line = _bad(tmp_path, capsys, ["--config", str(cfg)])
    assert "retriever 'both' (hybrid) builds on bm25, fixed: its part 'fixed' cannot change; stream its parts" in line
    # at any depth: a rerank of that hybrid names the run file too
    rows = f"  rr: {{type: mmr, of: both}}\n  both: {{type: hybrid, of: [bm25, fixed]}}\n{fixed}"
    line = _bad(tmp_path, capsys, ["--config", str(_config(tmp_path, rows, "  steps: 1"))])
    assert "retriever 'rr' (mmr) builds on both: its part 'fixed' cannot change" in line
    (tmp_path / "store").mkdir()  # a team's store, only read: the stream cannot write it either
    lc = "  lc: {type: lancedb, mode: connect, path: store, collection: t}"
    rows = f"  hy: {{type: hybrid, of: [bm25, lc]}}\n  bm25: {{type: bm25}}\n{lc}"
    line = _bad(tmp_path, capsys, ["--config", str(_config(tmp_path, rows, "  steps: 1"))])
    assert "retriever 'hy' (hybrid) builds on bm25, lc: its part 'lc' cannot change" in line
    ro = "  ro: {type: python, class: 'stream_team:SearchOnly'}"
    rows = f"  hy: {{type: hybrid, of: [bm25, ro]}}\n  bm25: {{type: bm25}}\n{ro}"
    line = _bad(tmp_path, capsys, ["--config", str(_config(tmp_path, rows, "  steps: 1"))])
    assert "retriever 'hy' builds on 'ro' (python: SearchOnly), which has no add(docs) and delete(ids)" in line


def test_a_composed_row_shares_its_parts_faults_and_says_which_part(tmp_path: Path) -> None:
    """A part that serves an updated document twice makes the composed row's stale hits (the repeat is
    counted before the part's answer is checked, which keeps one row); a part whose add raises fails the
    composed row with the part named, and the other rows stream to the end. The tables and the page name
    what a composed row builds on and say what its figures are."""
    rows = (
        "  stale: {type: python, class: 'stream_team:KeepsOldVersions'}\n"
        "  bad: {type: python, class: 'stream_team:Faulty', params: {mode: add_raises}}\n"
        "  bm25: {type: bm25}\n"
        "  over_stale: {type: hybrid, of: [bm25, stale]}\n"
        "  over_bad: {type: hybrid, of: [bm25, bad]}"
    )
    out = tmp_path / "out"
    res = run_stream(StreamOptions(config=_config(tmp_path, rows, STREAM), out=out))
    doc = res.to_json()
    recs = doc["retrievers"]
    for name in ("stale", "over_stale"):
        assert sum(c["stale_hits"]["hits"] for c in recs[name]["checkpoints"]) > 0, name
    assert sum(c["stale_hits"]["hits"] for c in recs["bm25"]["checkpoints"]) == 0
    assert "add() failed: its part 'bad' add() raised RuntimeError: disk full in add" in recs["over_bad"]["error"]
    assert [c["checkpoint"] for c in recs["over_bad"]["checkpoints"]] == [0]
    assert all("error" not in recs[n] and len(recs[n]["checkpoints"]) == 5 for n in ("bm25", "stale", "over_stale"))
    text = to_text(res)
    assert "over_stale (hybrid of bm25, stale)" in text and "a composed row (X of Y)" in text
    assert "over_stale (hybrid of bm25, stale)" in (out / "report.html").read_text()


def test_a_colbert_stage_streams_over_the_documents_visible_then(tmp_path: Path) -> None:
    """``colbert`` with ``of: bm25`` (a tiny multi-vector model): the stage's token vectors are of the
    documents visible at each checkpoint (its store built again after writes, rows copied), so the row is
    exact at every checkpoint and its last checkpoint is ``harness run``'s rerank over those documents."""
    pytest.importorskip("sentence_transformers.multi_vector_encoder")
    from tests.learned_models import build_tiny_colbert

    model = build_tiny_colbert(tmp_path / "models")
    spec = {"type": "colbert", "of": "bm25", "model": str(model), "precision": "float32", "top_n": 20}
    rows = f"  bm25: {{type: bm25}}\n  bm25_colbert: {json.dumps(spec)}"
    stream = "  steps: 2\n  probes: 3\n  poll_s: 0.02\n  probe_deadline_s: 2"
    out = tmp_path / "out"
    doc = run_stream(StreamOptions(config=_config(tmp_path, rows, stream), out=out)).to_json()
    cps = doc["retrievers"]["bm25_colbert"]["checkpoints"]
    assert len(cps) == 4 and "error" not in doc["retrievers"]["bm25_colbert"]
    for c in cps:
        assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12), c["checkpoint"]
        assert c["ghost_hits"]["hits"] == 0 and c["stale_hits"]["hits"] == 0, c["checkpoint"]
    ds = load_dataset("demo")
    final = _replay(out)[-1].versions
    docs = [version_of(ds.corpus[ds.doc_index[i]], v) for i, v in sorted(final.items())]
    static = benchmark(
        GoldenDataset.build("visible", docs, ds.queries, ds.qrels),
        {"bm25": {"type": "bm25"}, "bm25_colbert": spec},
        depth=100,
        latency_queries=0,
        warmup_queries=0,
    )
    want = dict(static.runs["bm25_colbert"].items())
    got = dict(read_run(out / "runs" / f"bm25_colbert-cp{len(cps) - 1}.trec").items())
    for q in ds.queries:
        g, w = got.get(q.id, []), want.get(q.id, [])
        assert [d for d, _ in g] == [d for d, _ in w], q.id
        assert [s for _, s in g] == pytest.approx([s for _, s in w], rel=1e-5), q.id
