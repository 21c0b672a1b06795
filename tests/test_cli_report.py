"""`harness report DIR [--worst N]` through the console entry point, on results folders written by
`harness compare` from small run files over the demo dataset's judgments (no models needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.datasets import demo_path, load_dataset
from tests.conftest import run_harness as harness


def write_run(path: Path, qrels: dict[str, dict[str, int]], rank: dict[str, int]) -> Path:
    """Per query: its best-graded relevant doc at ``rank[q]`` (default 1) among unjudged fillers."""
    lines = []
    for q, judged in qrels.items():
        best = max(judged, key=lambda d: (judged[d], d))
        docs = [f"filler{i}" for i in range(9)]
        docs.insert(rank.get(q, 1) - 1, best)
        lines += [f"{q} Q0 {d} {r} {20 - r} x" for r, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Two results folders over the demo's judged queries: one naming the dataset, one not."""
    tmp = tmp_path_factory.mktemp("report")
    qrels_file = demo_path() / "qrels" / "test.tsv"
    from harness.io.trec import read_qrels

    qrels = read_qrels(qrels_file)
    qids = sorted(qrels)
    base = write_run(tmp / "base.trec", qrels, {})
    # 'worse' loses on q01 (rank 10), q02 (rank 5), q03 (rank 3), ties elsewhere
    worse = write_run(tmp / "worse.trec", qrels, {qids[0]: 10, qids[1]: 5, qids[2]: 3})
    out = {}
    for key, extra in (("with_text", ["--dataset", "demo"]), ("ids_only", [])):
        folder = tmp / key
        proc = harness("compare", str(base), str(worse), "--qrels", str(qrels_file), "--out", str(folder), *extra)
        assert proc.returncode == 0, proc.stderr
        out[key] = folder
    return out, qids


def test_report_prints_and_leaves_the_folder_alone(folders):
    folder = folders[0]["ids_only"]
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    (folder / "table.md").unlink()
    for args in ([], ["--no-write"]):  # --no-write: the old spelling of the default, still accepted
        proc = harness("report", str(folder), *args)
        assert proc.returncode == 0, proc.stderr
        assert "base (baseline)" in proc.stdout
        assert not (folder / "table.md").exists()  # nothing re-rendered
        assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == {
            k: v for k, v in before.items() if k != "table.md"
        }
    (folder / "table.md").write_bytes(before["table.md"])


def test_report_write_rerenders_the_folder(folders):
    folder = folders[0]["with_text"]
    (folder / "table.md").unlink()
    (folder / "metric_at_k.png").unlink()
    proc = harness("report", str(folder), "--write")
    assert proc.returncode == 0, proc.stderr
    assert (folder / "table.md").is_file() and (folder / "metric_at_k.png").is_file()
    assert "demo (test, " in proc.stdout and "base (baseline)" in proc.stdout
    res = json.loads((folder / "results.json").read_text())
    for metrics in res["intervals"].values():
        for lo, hi in metrics.values():
            assert f"[{lo:.3f}, {hi:.3f}]" in proc.stdout


def test_worst_lists_losses_with_text_and_first_relevant_ranks(folders):
    out, qids = folders
    proc = harness("report", str(out["with_text"]), "--worst", "2", "--metric", "MRR@10")
    assert proc.returncode == 0, proc.stderr
    assert "worse vs base: 2 worst queries on mrr@10" in proc.stdout
    texts = {q.id: q.text for q in load_dataset("demo").queries}
    section = proc.stdout.split("worst queries on mrr@10")[1]
    # losses 1 - 1/10, 1 - 1/5, 1 - 1/3: the two largest, largest first
    assert section.index(f" {qids[0]} ") < section.index(f" {qids[1]} ") and f" {qids[2]} " not in section
    assert texts[qids[0]][:30] in section
    assert "1st rel. worse" in section and "1st rel. base" in section
    row = next(line for line in section.splitlines() if f" {qids[0]} " in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[4:6] == ["10", "1"]  # first relevant: rank 10 in worse, 1 in base
    # per query: what worse ranked first (unjudged fillers) beside the relevant documents, with text
    docs = proc.stdout.split(f"{qids[0]}: what worse ranked first (rank), and the relevant documents")[1]
    docs = docs.split("┘")[0]
    dataset = load_dataset("demo")
    corpus = {d.id: d.content for d in dataset.corpus}
    judged = dataset.qrels[qids[0]]
    best = max(judged, key=lambda d: (judged[d], d))  # the one the run files place
    best_row = next(line for line in docs.splitlines() if f" {best} " in line)
    assert [c.strip() for c in best_row.split("│")][1:3] == ["10", "1"]  # rank in worse, in base
    assert "rank in base" in docs
    assert " ".join(corpus[best].split())[:60] in " ".join(docs.split())
    assert "filler0" in docs and "(not in the dataset)" in docs and "unjudged" in docs
    missed = [d for d, g in judged.items() if g >= 1 and d != best]
    if missed:  # relevant, but the run files rank only the best one: in neither run's 10 documents
        assert "not in the top 10" in docs


def test_worst_lists_only_losses(folders):
    out, _ = folders
    proc = harness("report", str(out["with_text"]), "--worst", "5", "--retriever", "worse")
    assert proc.returncode == 0, proc.stderr
    assert "worse vs base: 3 worst queries on ndcg@10" in proc.stdout  # only three queries lose


def test_without_a_dataset_ids_only(folders):
    out, qids = folders
    proc = harness("report", str(out["ids_only"]), "--worst", "1")
    assert proc.returncode == 0, proc.stderr
    assert "query and document text unavailable" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if f" {qids[2]} " in line)  # largest nDCG loss
    assert [c.strip() for c in row.split("│") if c.strip()][-1] == "–"  # no text
    assert "filler0" in proc.stdout  # document ids still shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--worst", "0"], "--worst"),
        (["--worst", "1", "--docs", "-1"], "--docs"),
        (["--worst", "2", "--metric", "recall@7"], "metric 'recall@7' is not in these results"),
        (["--worst", "2", "--retriever", "nope"], "retriever 'nope' has no scores here"),
    ],
)
def test_bad_arguments_exit_2(folders, args, message):
    out, _ = folders
    proc = harness("report", str(out["ids_only"]), *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_not_a_results_folder(tmp_path):
    proc = harness("report", str(tmp_path))
    assert proc.returncode == 2 and "results file not found" in proc.stderr
