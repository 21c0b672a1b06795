"""`harness compare RUN_FILE... --qrels FILE` through the console entry point, on small run files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_harness as harness

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

QIDS = [f"q{i:02d}" for i in range(25)]


def write_qrels(path: Path) -> Path:
    path.write_text("".join(f"{q} 0 {q}-rel 1\n{q} 0 {q}-also 2\n" for q in QIDS), encoding="utf-8")
    return path


def write_run(path: Path, rank_of: dict[str, int]) -> Path:
    """Nine docs per query; the query's relevant doc '<q>-rel' at the given rank."""
    lines = []
    for q in QIDS:
        docs = [f"x{i}" for i in range(8)]
        docs.insert(rank_of.get(q, 1) - 1, f"{q}-rel")
        lines += [f"{q} Q0 {d} {r} {10 - r} {path.stem}" for r, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    qrels = write_qrels(tmp_path / "qrels.txt")
    base = write_run(tmp_path / "base.trec", dict.fromkeys(QIDS, 3))
    good = write_run(tmp_path / "good.trec", dict.fromkeys(QIDS, 1))
    same = write_run(tmp_path / "same.trec", dict.fromkeys(QIDS, 3))
    return tmp_path, qrels, base, good, same


def test_compare_prints_the_table_and_writes_a_results_folder(files):
    tmp, qrels, base, good, same = files
    out = tmp / "out"
    proc = harness("compare", str(base), str(good), str(same), "--qrels", str(qrels), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "base (baseline)" in proc.stdout and "▲" in proc.stdout and "Holm-corrected over 12" in proc.stdout
    res = json.loads((out / "results.json").read_text())
    assert set(res["significance"]) == {"good", "same"}
    assert res["significance"]["good"]["ndcg@10"]["significant"] is True
    assert res["significance"]["same"]["ndcg@10"]["p_value"] == 1.0
    for metrics in res["intervals"].values():  # every mean's CI is printed
        for lo, hi in metrics.values():
            assert f"[{lo:.3f}, {hi:.3f}]" in proc.stdout
    assert res["summary"]["good"]["mrr@10"] == 1.0 and res["summary"]["base"]["mrr@10"] == pytest.approx(1 / 3)
    for name in ("table.md", "table.csv", "table.html", "table.tex", "metric_at_k.png", "qrels.tsv"):
        assert (out / name).is_file(), name
    assert not (out / "quality_latency.png").exists()  # nothing was timed
    files = sorted(res["run_files"][n]["file"] for n in ("base", "good", "same"))
    assert sorted(f"runs/{p.name}" for p in (out / "runs").glob("*.trec")) == files
    assert "index s" not in (out / "table.md").read_text()


def test_baseline_by_name_or_path_and_chosen_metrics(files):
    _, qrels, base, good, _ = files
    for baseline in ("good", str(good)):
        proc = harness("compare", str(base), str(good), "--qrels", str(qrels), "--baseline", baseline,
                       "--metrics", "ndcg@5,map", "--permutations", "500")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "good (baseline)" in proc.stdout and "▼" in proc.stdout and "ndcg@5" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "nope"], "baseline 'nope' is not one of the runs"),
        (["--metrics", "ild@10"], "needs document embeddings"),
        (["--metrics", "ndcg@x"], "unknown metric"),
        (["--permutations", "-1"], "--permutations"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(files, args, message):
    _, qrels, base, good, _ = files
    proc = harness("compare", str(base), str(good), "--qrels", str(qrels), *args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_broken_run_file_is_named_with_its_line(files):
    tmp, qrels, base, _, _ = files
    bad = tmp / "bad.trec"
    bad.write_text("q00 Q0 d1 1 1.0 x\nq00 Q0 d2 2 abc x\n", encoding="utf-8")
    proc = harness("compare", str(base), str(bad), "--qrels", str(qrels))
    assert proc.returncode == 2 and f"{bad}:2" in proc.stderr and "score" in proc.stderr


def test_refuses_a_folder_holding_other_things(files):
    tmp, qrels, base, good, _ = files
    (tmp / "busy").mkdir()
    (tmp / "busy" / "notes.txt").write_text("mine")
    proc = harness("compare", str(base), str(good), "--qrels", str(qrels), "--out", str(tmp / "busy"))
    assert proc.returncode == 2 and "not empty" in proc.stderr
