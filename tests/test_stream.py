"""harness.stream (``harness stream``): the runbook, the checkpoint figures recomputed independently
(pytrec_eval), the exact engines, team retrievers that ignore deletes or show inserts late, bad input,
Ctrl-C, and ``harness report`` of a stream folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.datasets import load_dataset
from harness.io.trec import read_run
from harness.model import GoldenDataset
from harness.stream import (
    Op,
    StreamOptions,
    StreamSpec,
    Visible,
    draw,
    format_runbook,
    read_runbook,
    run_stream,
    version_of,
    visible_qrels,
)
from tests.conftest import default_sigint

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
TEAM = Path(__file__).resolve().parent / "stream_team.py"
PYTREC = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100"}


def _config(tmp_path: Path, retrievers: str, stream: str, dataset: str = "demo") -> Path:
    (tmp_path / "stream_team.py").write_text(TEAM.read_text())
    p = tmp_path / "stream.yaml"
    head = f"dataset: {dataset}\nmetrics: [ndcg@10, recall@100]\ndepth: 100\n"
    p.write_text(f"{head}retrievers:\n{retrievers}\nstream:\n{stream}\n")
    return p


def _replay(folder: Path) -> list[Visible]:
    """The visible documents at each checkpoint, from the folder's runbook alone."""
    lines = [json.loads(x) for x in (folder / "runbook.jsonl").read_text().splitlines()]
    state, out = Visible(), []
    for row in lines:
        if row["op"] in ("insert", "delete", "update"):
            state.apply(Op(row["op"], tuple(row["ids"])))
        elif row["op"] == "checkpoint":
            out.append(Visible(dict(state.versions), set(state.deleted)))
    return out


def _recompute(folder: Path, ds: GoldenDataset, doc: dict) -> int:
    """Check every checkpoint's metrics against pytrec_eval over its run file; returns how many were checked."""
    checked = 0
    for name, rec in doc["retrievers"].items():
        for cp, (c, vis) in enumerate(zip(rec["checkpoints"], _replay(folder), strict=True)):
            qrels, _ = visible_qrels(ds.qrels, vis.versions)
            assert c["queries_scored"] == len(qrels)
            run = read_run(folder / "runs" / f"{name}-cp{cp}.trec").to_dict()
            ev = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC.values())).evaluate(run)
            for metric, key in PYTREC.items():
                want = sum(ev[q][key] for q in ev) / len(qrels)  # a query the run lacks scores 0
                assert c["metrics"][metric] == pytest.approx(want, abs=1e-9), (name, cp, metric)
            checked += 1
    return checked


STREAM = "  steps: 3\n  probes: 5\n  poll_s: 0.02\n  probe_deadline_s: 5"


def test_runbook_same_seed_same_bytes_and_relevant_documents_move() -> None:
    ds = load_dataset("demo")
    spec = StreamSpec(seed=7, steps=3)
    a, b = format_runbook(draw(ds, spec)), format_runbook(draw(ds, spec))
    assert a == b
    assert a != format_runbook(draw(ds, StreamSpec(seed=8, steps=3)))
    relevant = {d for j in ds.qrels.values() for d, g in j.items() if g >= 1}
    ops = draw(ds, spec)
    later = [op for op in ops[2:] if op.op == "insert"]
    deletes = [op for op in ops if op.op == "delete"]
    assert all(set(op.ids) & relevant for op in later)
    assert all(set(op.ids) & relevant for op in deletes)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    initial=st.floats(0.2, 0.6),
    steps=st.integers(0, 4),
    insert=st.floats(0, 0.1),
    delete=st.floats(0, 0.05),
    update=st.floats(0, 0.05),
)
def test_drawn_runbooks_replay_through_the_checks(tmp_path_factory, seed, initial, steps, insert, delete, update):
    """Every drawn runbook is one a team could hand back: it reads back, checked, as the same operations."""
    ds = load_dataset("demo")
    ops = draw(ds, StreamSpec(seed=seed, initial=initial, steps=steps, insert=insert, delete=delete, update=update))
    p = tmp_path_factory.mktemp("rb") / "runbook.jsonl"
    p.write_text(format_runbook(ops))
    back = read_runbook(p, ds.doc_ids)
    assert [(o.op, o.ids) for o in back] == [(o.op, o.ids) for o in ops]


def test_exact_engines_match_exact_and_a_static_run(tmp_path: Path) -> None:
    """bm25 and flat dense: exact == metrics at every checkpoint, no run holds an invisible document,
    no ghost or stale hit, the figures re-score with pytrec_eval, and the last checkpoint is a static
    run over the finally visible documents."""
    from harness.api import benchmark

    cfg = _config(tmp_path, "  bm25: {type: bm25}\n  dense: {type: dense}", STREAM)
    out = tmp_path / "out"
    doc = run_stream(StreamOptions(config=cfg, out=out)).to_json()
    ds = load_dataset("demo")
    assert _recompute(out, ds, doc) == 2 * 5
    visibles = _replay(out)
    for name, rec in doc["retrievers"].items():
        for cp, c in enumerate(rec["checkpoints"]):
            assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12), (name, cp)
            assert c["ghost_hits"]["hits"] == 0 and c["stale_hits"]["hits"] == 0
            held = {d for _, ranking in read_run(out / "runs" / f"{name}-cp{cp}.trec").items() for d, _ in ranking}
            assert held <= set(visibles[cp].versions)
        assert sum(c["ghost_hits"]["probes"] for c in rec["checkpoints"]) > 0
        assert sum(c["stale_hits"]["probes"] for c in rec["checkpoints"]) > 0
    final = visibles[-1].versions
    docs = [version_of(ds.corpus[ds.doc_index[i]], v) for i, v in sorted(final.items())]
    static = benchmark(
        GoldenDataset.build("final", docs, ds.queries, ds.qrels),
        {"bm25": {"type": "bm25"}, "dense": {"type": "dense"}},
        depth=100,
        latency_queries=0,
        warmup_queries=0,
    )
    last = len(visibles) - 1
    for name in ("bm25", "dense"):
        streamed = dict(read_run(out / "runs" / f"{name}-cp{last}.trec").items())
        want = dict(static.runs[name].items())
        for q in ds.queries:
            got, exp = streamed.get(q.id, []), want.get(q.id, [])
            assert [d for d, _ in got] == [d for d, _ in exp], (name, q.id)
            assert [s for _, s in got] == pytest.approx([s for _, s in exp], rel=1e-6)


def test_a_team_retriever_that_ignores_deletes_has_ghost_hits(tmp_path: Path) -> None:
    team = "  ghosts: {type: python, class: 'stream_team:Overlap', params: {ignore_deletes: true}}"
    cfg = _config(tmp_path, team, STREAM)
    out = tmp_path / "out"
    doc = run_stream(StreamOptions(config=cfg, out=out)).to_json()
    cps = doc["retrievers"]["ghosts"]["checkpoints"]
    assert sum(c["ghost_hits"]["hits"] for c in cps) > 0
    visibles = _replay(out)
    shown = set()
    for cp in range(len(cps)):
        held = {d for _, r in read_run(out / "runs" / f"ghosts-cp{cp}.trec").items() for d, _ in r}
        shown |= held & visibles[cp].deleted
    assert shown, "the run files show the deleted documents it still returns"
    assert _recompute(out, load_dataset("demo"), doc) == len(cps)


def test_an_insert_visible_after_3_s_is_retrievable_after_3_s(tmp_path: Path) -> None:
    poll = 0.2
    team = "  late: {type: python, class: 'stream_team:Overlap', params: {delay_s: 3.0}}"
    stream = f"  steps: 1\n  insert: 0.05\n  delete: 0\n  update: 0\n  probes: 4\n  poll_s: {poll}\n  settle: false"
    doc = run_stream(StreamOptions(config=_config(tmp_path, team, stream), out=tmp_path / "out")).to_json()
    r = doc["retrievers"]["late"]["checkpoints"][1]["retrievable_s"]
    assert r["never"] == 0
    # found by the first poll that started 3 s after the acknowledgement: no earlier, and no later than
    # one poll interval after (plus the two searches' own time and the sleep's lateness on a busy machine)
    assert 3.0 <= r["p50"] <= 3.0 + poll + 0.3


def _bad(tmp_path: Path, capsys, argv: list[str]) -> str:
    out = tmp_path / "out"
    assert main(["stream", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not out.exists() and not (tmp_path / ".out.harness-next").exists()
    return err[0]


@pytest.mark.parametrize(
    ("stream", "says"),
    [
        ("  insert: 1.5", "stream.insert"),
        ("  delete: -0.1", "stream.delete"),
        ("  initial: 0.9\n  steps: 2\n  insert: 0.1", "inserts more than the corpus"),
        ("  initial: 0.1\n  steps: 1\n  delete: 0.5", "stream.delete"),
        ("  probes: true", "stream.probes"),
    ],
)
def test_bad_shares_are_one_located_line(tmp_path: Path, capsys, stream: str, says: str) -> None:
    line = _bad(tmp_path, capsys, ["--config", str(_config(tmp_path, "  bm25: {type: bm25}", stream))])
    assert says in line and "stream.yaml" in line


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (['{"op": "insert", "ids": ["d0001", "nope"]}', '{"op": "checkpoint"}'], "runbook.jsonl:1: ids: 'nope'"),
        (
            ['{"op": "insert", "ids": ["d0001", "d0002"]}', '{"op": "delete", "ids": ["d0001"]}',
             '{"op": "delete", "ids": ["d0001"]}', '{"op": "checkpoint"}'],
            "runbook.jsonl:3: ids: delete of 'd0001', which is deleted already",
        ),
        (['{"op": "insert", "ids": ["d0001"]}', '{"op": "flush"}'], "runbook.jsonl:2: op:"),
        (['{"op": "insert", "ids": ["d0001"]}'], "the last line must be a checkpoint"),
    ],
)  # fmt: skip
def test_bad_runbooks_are_one_located_line(tmp_path: Path, capsys, rows: list[str], says: str) -> None:
    rb = tmp_path / "runbook.jsonl"
    rb.write_text("\n".join(rows) + "\n")
    cfg = _config(tmp_path, "  bm25: {type: bm25}", "  steps: 1")
    assert says in _bad(tmp_path, capsys, ["--config", str(cfg), "--runbook", str(rb)])


def test_immutable_retrievers_are_refused_before_any_work(tmp_path: Path, capsys) -> None:
    run = tmp_path / "r.trec"
    run.write_text("q01 Q0 d0001 1 1.0 x\n")
    cfg = _config(tmp_path, "  bm25: {type: bm25}\n  fixed: {type: run_file, path: r.trec}", "  steps: 1")
    assert "'fixed' (run_file)" in _bad(tmp_path, capsys, ["--config", str(cfg)])
    cfg = _config(tmp_path, "  ro: {type: python, class: 'stream_team:SearchOnly'}", "  steps: 1")
    line = _bad(tmp_path, capsys, ["--config", str(cfg)])
    assert "'ro' (python: SearchOnly) has no add(docs) and delete(ids)" in line
    cfg = _config(tmp_path, "  bm25: {type: bm25}\n  fixed: {type: run_file, path: r.trec}\n"
                  "  both: {type: hybrid, of: [bm25, fixed]}", "  steps: 1")  # fmt: skip
    assert "'fixed' (run_file)" in _bad(tmp_path, capsys, ["--config", str(cfg)])


def test_report_prints_the_tables_and_refuses_a_changed_file(tmp_path: Path, capsys) -> None:
    cfg = _config(tmp_path, "  bm25: {type: bm25}", "  steps: 1\n  probes: 2\n  poll_s: 0.02")
    out = tmp_path / "out"
    assert main(["stream", "--config", str(cfg), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("bm25 (bm25)\n") and "gap = exact - engine ndcg@10" in text
    run = out / "runs" / "bm25-cp1.trec"
    os.chmod(run, 0o644)
    run.write_text(run.read_text().replace(" Q0 ", " Q0 x", 1))
    assert main(["report", str(out)]) == 2
    assert "bm25-cp1.trec: changed since the stream wrote it" in capsys.readouterr().err


def test_ctrl_c_keeps_completed_checkpoints_and_marks_the_folder_incomplete(tmp_path: Path) -> None:
    stop = tmp_path / "stopped"
    team = f"  slow: {{type: python, class: 'stream_team:Overlap', params: {{stop_file: '{stop}'}}}}"
    cfg = _config(tmp_path, team, "  steps: 3\n  probes: 2\n  poll_s: 0.02\n  delete: 0\n  update: 0")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "harness", "stream", "--config", str(cfg), "--out", str(out)],
                            env=env, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)  # fmt: skip
    try:
        for _ in range(2400):  # the retriever says when the stream is mid-write (at most 2 minutes)
            if stop.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert stop.exists(), proc.communicate()[1]
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=300)[1]
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 130, err
    doc = json.loads((out / "stream.json").read_text())
    assert doc["complete"] is False
    assert [c["checkpoint"] for c in doc["retrievers"]["slow"]["checkpoints"]] == [0, 1]
    assert sorted(doc["files"]) == ["report.html", "runbook.jsonl", "runs/slow-cp0.trec", "runs/slow-cp1.trec"]
    assert not list(tmp_path.glob(".out.*"))  # neither the staging folder nor the lock is left
    assert main(["report", str(out)]) == 2
    assert main(["report", str(out), "--allow-incomplete"]) == 0


def test_a_second_stream_to_the_same_out_is_refused_and_the_first_loses_nothing(tmp_path: Path, capsys) -> None:
    """Two commands, one ``--out``: the second is refused in one line while the first writes;
    the first's folder is whole (every file it lists there, as it wrote it)."""
    stop = tmp_path / "stopped"
    team = f"  slow: {{type: python, class: 'stream_team:Overlap', params: {{stop_file: '{stop}'}}}}"
    cfg = _config(tmp_path, team, "  steps: 3\n  probes: 2\n  poll_s: 0.02\n  delete: 0\n  update: 0")
    other = tmp_path / "other.yaml"
    other.write_text("dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\nstream: {steps: 1}\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "harness", "stream", "--config", str(cfg), "--out", str(out)],
                            env=env, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)  # fmt: skip
    try:
        for _ in range(2400):
            if stop.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert stop.exists(), proc.communicate()[1]
        capsys.readouterr()
        assert main(["stream", "--config", str(other), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and f"pid {proc.pid}" in err and "is writing this folder" in err, err
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=300)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 130
    doc = json.loads((out / "stream.json").read_text())
    assert list(doc["retrievers"]) == ["slow"]  # the first's, and nothing of the second
    assert sorted(doc["files"]) == sorted(
        str(f.relative_to(out)) for f in out.rglob("*") if f.is_file() and f.name != "stream.json"
    )
    assert main(["report", str(out), "--allow-incomplete"]) == 0  # every listed file as it was written
    assert "changed" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason="needs ../shared/data/scifact")
def test_scifact_checkpoints_recompute_with_pytrec_eval(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "  bm25: {type: bm25}", "  steps: 2\n  probes: 5\n  poll_s: 0.02", dataset=str(SCIFACT))
    out = tmp_path / "out"
    doc = run_stream(StreamOptions(config=cfg, out=out)).to_json()
    ds = load_dataset(str(SCIFACT))
    assert _recompute(out, ds, doc) == 4
    for c in doc["retrievers"]["bm25"]["checkpoints"]:
        assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12)


def test_the_shipped_stream_config_loads() -> None:
    """configs/stream-demo.yaml (named in docs/streaming.md) validates, its stream section included."""
    from harness.stream import load_stream_config

    config, spec, _ = load_stream_config(REPO / "configs" / "stream-demo.yaml")
    assert set(config.retrievers) == {"bm25", "dense", "dense_hnsw"} and spec.steps == 5 and spec.probes == 10
    assert "configs/stream-demo.yaml" in (REPO / "docs" / "streaming.md").read_text()
