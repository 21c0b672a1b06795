"""Small things a newcomer trips on, one test each: suite titles count right, ``judge merge`` without
old judgments says no "0 judgments from no judgments", a sweep prints one label for one setting and no
``-0.0000``, and ``harness evaluate``'s tables show run names and query ids as written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.judging.merge import merge_line
from harness.judging.pool import PoolRow, write_pool
from harness.results import Results
from harness.results.evaluate_table import evaluate_table
from harness.results.suite_table import suite_title
from harness.sweep.render import _signed
from harness.sweep.spec import point_label

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("retrievers", "datasets", "title"),
    [(1, 1, "Suite: 1 retriever x 1 dataset"), (1, 3, "Suite: 1 retriever x 3 datasets"),
     (4, 2, "Suite: 4 retrievers x 2 datasets")],
)  # fmt: skip
def test_suite_titles_count_right(retrievers, datasets, title):
    suite = SimpleNamespace(retrievers=[f"r{i}" for i in range(retrievers)],
                            datasets=[f"d{i}" for i in range(datasets)])  # fmt: skip
    assert suite_title(suite) == title


def test_merge_without_old_judgments_names_no_zero_of_nothing(tmp_path):
    rows = [PoolRow("q1", "query", f"d{i}", "", "text", "bm25", 1, grade=i % 4) for i in range(3)]
    pool = write_pool(tmp_path / "pool.csv", rows)
    line = merge_line(pool, None, tmp_path / "qrels.tsv")
    assert "no judgments" not in line and "0 judgments" not in line
    assert line.startswith(f"{tmp_path / 'qrels.tsv'}: 3 new (0 already judged alike, 0 left ungraded)"), line


def test_a_sweep_labels_one_setting_once_and_prints_no_negative_zero():
    assert point_label({"rrf_k": 60.0}) == point_label({"rrf_k": 60}) == "rrf_k=60"
    assert point_label({"b": 0.75}) == "b=0.75"
    assert _signed(-0.00001) == "+0.0000" and _signed(-0.012) == "-0.0120" and _signed(0.5) == "+0.5000"


def test_evaluate_tables_show_names_as_written():
    name, query = "[bold]team[/bold]|x", "q[1]\x01"
    results = Results.from_json({
        "manifest": {}, "summary": {name: {"ndcg@10": 0.5}}, "per_query": {name: {query: {"ndcg@10": 0.5}}},
        "failures": {},
    })  # fmt: skip
    table = evaluate_table(results, "table", per_query=True)
    assert "[bold]team[/bold]" in table and "q[1]\\x01" in table and "\x01" not in table
    md = evaluate_table(results, "markdown", per_query=True)
    assert "[bold]team[/bold]\\|x" in md and "\x01" not in md


def test_retrievers_fits_the_terminal_cuts_nothing_and_shows_no_rest_markup(tmp_path):
    import os
    import subprocess
    import sys

    from harness.cli.retrievers import list_types, plain_text
    from tests.conftest import REPO

    assert plain_text("uses ``faiss`` and :class:`~harness.run.Run` here") == "uses faiss and harness.run.Run here"
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "harness", "retrievers"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = [line for line in proc.stdout.splitlines() if line.startswith(("│", "┃", "┏", "└", "┡"))]
    assert table and max(len(line) for line in table) <= 80
    assert "…" not in proc.stdout and "``" not in proc.stdout and ":class:" not in proc.stdout
    first_cells = {line.split("│")[1].strip() for line in table if line.startswith("│")}
    assert {i.name for i in list_types()} <= first_cells  # every type's name whole, in its own cell


def test_the_readmes_reranker_smoke_test_names_the_queries_it_was_scored_on():
    from tests.conftest import REPO

    line = next(x for x in (REPO / "README.md").read_text(encoding="utf-8").splitlines() if "train-reranker" in x
                and "smoke test" in x)  # fmt: skip
    assert "0.2050" in line and "held-out" in line and "0.2050 on SciFact test" not in line


def test_the_load_note_says_1000_over_p50_equals_not_a_number_in_parentheses():
    from harness.load.core import _c1_note
    from harness.load.drivers import Level

    note = _c1_note([Level("closed", concurrency=1, qps=26.6, p50_ms=18.5, mean_ms=37.6, p95_ms=140, p99_ms=167)])
    assert "not 1000 / p50 = 54:" in note and "p50 (54)" not in note


@pytest.mark.parametrize("flags", [[], ["--no-progress"]])
def test_load_shows_its_builds_progress_unless_told_not_to(tmp_path, capsys, flags):
    from harness.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: demo\nretrievers:\n  bm25: {type: bm25}\n", encoding="utf-8")
    args = ["load", "--config", str(cfg), "--concurrency", "1", "--duration", "0.2", "--warmup", "0", "--no-gil-probe"]
    assert main([*args, *flags]) == 0
    err = capsys.readouterr().err
    assert ("tokenizing docs" in err) == (not flags), err[-2000:]


def test_a_run_files_row_shows_no_latency_or_qps(tmp_path):
    import numpy as np

    from harness.efficiency import Cost
    from retrievers.run_file import RunFile

    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 d1 1 1.0 x\n", encoding="utf-8")
    lookup = Cost(search_seconds=0.001, n_queries=1, latencies_s=np.array([0.0001]),
                  extra=dict(RunFile(path).efficiency_extra(10)))  # fmt: skip
    total = Cost.total([lookup], 1)
    assert total["qps"] is None and total["latency_ms_p50"] is None and total["latency_ms_p99"] is None
    timed = Cost.total([Cost(search_seconds=0.001, n_queries=1, latencies_s=np.array([0.0001]))], 1)
    assert timed["qps"] == pytest.approx(1000) and timed["latency_ms_p50"] == pytest.approx(0.1)


def test_every_long_command_takes_no_progress():
    from harness.cli import build_parser

    for command in ("run", "stream", "load", "sweep", "synth", "train-reranker", "inspect", "traces"):
        parser = build_parser([command])
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        flags = {o for a in sub.choices[command]._actions for o in a.option_strings}
        nested = [c for a in sub.choices[command]._actions if a.__class__.__name__ == "_SubParsersAction"
                  for c in a.choices.values()]  # fmt: skip
        flags |= {o for c in nested for a in c._actions for o in a.option_strings}
        assert "--no-progress" in flags, command
