"""Suites (docs/suites.md): ``datasets:`` in a config, one folder per dataset, ``suite.json``
(means, mean ranks, tests across datasets), the suite table at 80 columns, resume after SIGKILL,
and ``harness check`` of two suites."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from harness.api import benchmark
from harness.cli import main
from harness.config import parse_config
from harness.errors import InputError
from harness.results import Results
from harness.results.suite_table import print_suite
from harness.stats.exact import min_p, min_pairs, sign_flip_p
from harness.suite import SuiteResults, aggregate, plan_suite
from tests.conftest import QUICK_RUN, kill_when_started, run_harness

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

REPO = Path(__file__).resolve().parent.parent

#: a small BEIR set of its own documents and queries (unlike demo's): coffee, bread, bikes, knives
TINY = REPO / "tests" / "data" / "tiny_suite"


def render(suite, fmt: str) -> str:
    """The suite table in ``fmt`` (a suite renders itself, through the renderers a run's table uses)."""
    return suite.table(fmt)


def make_tiny(folder: Path, prefix: str = "tiny-") -> Path:
    """:data:`TINY` copied to ``folder``, its document ids prefixed with ``prefix``."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    docs = [json.loads(line) for line in (TINY / "corpus.jsonl").read_text().splitlines()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({**d, "_id": prefix + d["_id"]}) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text((TINY / "queries.jsonl").read_text())
    head, *rows = (TINY / "qrels" / "test.tsv").read_text().splitlines()
    prefixed = ["\t".join((q, prefix + d, g)) for q, d, g in (r.split("\t") for r in rows)]
    (folder / "qrels" / "test.tsv").write_text("\n".join([head, *prefixed]) + "\n")
    return folder


SUITE = (
    "\ndatasets:\n  support: demo\n  tiny: {path: tiny, split: test}\n"
    + QUICK_RUN
    + "retrievers:\n  bm25: {type: bm25}\n  bm25_k12: {type: bm25, k1: 1.2, b: 0.9}\n"
)


def write_suite_config(tmp_path: Path, text: str = SUITE) -> Path:
    make_tiny(tmp_path / "tiny")
    (tmp_path / "suite.yaml").write_text(text)
    return tmp_path / "suite.yaml"


# ---------------------------------------------------------------------- config and plan
def test_datasets_or_dataset_not_both_and_names_are_folder_names(tmp_path):
    with pytest.raises(InputError, match=r"either dataset: \(one dataset\) or datasets: \(a suite\), not both"):
        parse_config({"dataset": "demo", "datasets": {"a": "demo"}, "retrievers": {"b": {"type": "bm25"}}})
    with pytest.raises(InputError, match="datasets") as e:
        parse_config({"datasets": {"../up": "demo"}, "retrievers": {"b": {"type": "bm25"}}})
    assert "folder name" in str(e.value)
    with pytest.raises(InputError, match="must be a mapping"):
        parse_config({"datasets": {}, "retrievers": {"b": {"type": "bm25"}}})
    with pytest.raises(InputError, match=r"datasets\.a\.splt"):  # a dataset's keys are checked as dataset:'s
        parse_config({"datasets": {"a": {"path": "demo", "splt": "x"}}, "retrievers": {"b": {"type": "bm25"}}})


def test_a_config_error_names_the_file_and_line(tmp_path):
    (tmp_path / "c.yaml").write_text("dataset: demo\ndatasets:\n  a: demo\nretrievers:\n  b: {type: bm25}\n")
    r = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "c.yaml" in r.stderr and "not both" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_plan_one_config_per_dataset_and_a_subset():
    config = parse_config(
        {
            "datasets": {"a": "demo", "b": {"path": "demo", "split": "test"}, "c": "demo"},
            "retrievers": {"x": {"type": "bm25"}},
        }
    )
    plan = plan_suite(config)
    assert list(plan) == ["a", "b", "c"]
    assert all(c.datasets is None and c.dataset.path == "demo" for c in plan.values())
    assert "datasets" not in plan["a"].model_dump(mode="json")  # a one-dataset config, as a single run records it
    assert list(plan_suite(config, ["c", "a"])) == ["a", "c"]  # the config's order
    with pytest.raises(InputError, match="not a dataset of this suite: z"):
        plan_suite(config, ["a", "z"])


def test_a_missing_dataset_fails_before_any_dataset_runs(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text("datasets:\n  a: demo\n  b: {path: nowhere}\nretrievers:\n  x: {type: bm25}\n")
    assert main(["run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert "dataset b: path not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------- the tests across datasets
def test_sign_flip_by_hand_and_its_floor():
    # d = (0.1, 0.2, -0.05): of the 8 sign vectors, |sum| >= 0.25 for (+,+,+), (+,+,-) and their mirrors
    assert sign_flip_p([0.1, 0.2, -0.05]) == pytest.approx(4 / 8)
    assert sign_flip_p([0.0, 0.0]) == 1.0
    assert sign_flip_p([0.3] * 5) == pytest.approx(2 / 32) == min_p(5)
    assert sign_flip_p([0.3] * 6) == pytest.approx(2 / 64)
    assert min_pairs(0.05) == 6 and min_pairs(0.0625) == 6 and min_pairs(0.1) == 5 and min_pairs(0.01) == 8


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False, allow_subnormal=False), min_size=1, max_size=9))
def test_sign_flip_equals_brute_force_enumeration(diffs):
    d = np.asarray(diffs)
    if not np.any(d):
        assert sign_flip_p(d) == 1.0
        return
    obs = abs(d.mean())
    flips = [abs(np.mean(np.array(s) * d)) >= obs - 1e-12 for s in itertools.product([-1, 1], repeat=len(d))]
    assert sign_flip_p(d) == pytest.approx(sum(flips) / 2 ** len(d))
    assert sign_flip_p(d) >= min_p(len(d)) - 1e-15


def _res(summary: dict[str, dict[str, float]], **kw) -> Results:
    return Results(summary=summary, query_ids=["q"], **kw)


def test_aggregate_mean_rank_and_too_few_datasets():
    per = {
        "a": _res({"bm25": {"m": 0.5}, "x": {"m": 0.7}, "y": {"m": 0.5}}),
        "b": _res({"bm25": {"m": 0.2}, "x": {"m": 0.1}, "y": {"m": 0.3}}),
        "c": _res({"bm25": {"m": 0.9}, "x": {"m": 0.8}, "y": {"m": 0.95}}),
    }
    s = aggregate(per, baseline="bm25")
    assert s.summary["x"] == {"a": {"m": 0.7}, "b": {"m": 0.1}, "c": {"m": 0.8}}
    assert s.mean["x"]["m"] == (0.7 + 0.1 + 0.8) / 3 and s.mean["bm25"]["m"] == (0.5 + 0.2 + 0.9) / 3
    # ranks: a: x 1, bm25/y tie 2.5; b: y 1, bm25 2, x 3; c: y 1, bm25 2, x 3
    assert s.rank["x"]["m"] == pytest.approx((1 + 3 + 3) / 3)
    assert s.rank["bm25"]["m"] == pytest.approx((2.5 + 2 + 2) / 3)
    assert s.rank["y"]["m"] == pytest.approx((2.5 + 1 + 1) / 3)
    x = s.across_datasets["x"]["m"]
    assert x.n == 3 and x.too_few and x.min_p == 0.25 and not x.significant
    assert x.delta == pytest.approx(((0.7 - 0.5) + (0.1 - 0.2) + (0.8 - 0.9)) / 3)
    assert (x.wins, x.ties, x.losses) == (1, 0, 2)
    assert "bm25" not in s.across_datasets and s.min_datasets == 6
    assert any("too few datasets" in n for n in s.notes)


def test_a_retriever_failed_on_one_dataset_has_no_mean():
    per = {"a": _res({"bm25": {"m": 0.5}, "x": {"m": 0.7}}), "b": _res({"bm25": {"m": 0.2}}, failures={"x": "boom"})}
    s = aggregate(per, baseline="bm25")
    assert s.mean["x"]["m"] is None and s.rank["x"]["m"] is None and s.mean["bm25"]["m"] == pytest.approx(0.35)
    assert s.failures == {"b": {"x": "boom"}} and "FAILED" in render(s, "markdown")


def test_enough_datasets_can_reject():
    per = {f"d{i}": _res({"bm25": {"m": 0.3 + i / 100}, "x": {"m": 0.5 + i / 100}}) for i in range(7)}
    x = aggregate(per, baseline="bm25").across_datasets["x"]["m"]
    assert x.n == 7 and not x.too_few and x.p_value == pytest.approx(2 / 128) and x.significant


# ---------------------------------------------------------------------- the table at 80 columns
def test_the_table_at_80_columns_shows_every_name_and_figure():
    datasets = [f"dataset-with-a-rather-long-name-{i}" for i in range(7)]
    names = ["bm25", "a-retriever-with-a-very-long-descriptive-name", "dense"]
    rng = np.random.default_rng(0)
    per = {
        d: _res({r: {"ndcg@10": float(rng.random()), "recall@100": float(rng.random())} for r in names})
        for d in datasets
    }
    s = aggregate(per, baseline="bm25")
    console = Console(width=80, record=True, force_terminal=False)
    print_suite(s, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in [*datasets, *names]:  # wrapped over lines, never cut: every piece shows
        pieces = textwrap.wrap(name, 12 if name in datasets else 24, break_on_hyphens=False)
        assert all(p in text for p in pieces) and "".join(pieces) == name, name
    for r in names:
        for m in ("ndcg@10", "recall@100"):
            for d in datasets:
                assert f"{s.summary[r][d][m]:.4f}" in text
            assert f"{s.mean[r][m]:.4f}" in text and f"{s.rank[r][m]:.2f}" in text
    assert "…" not in text


def test_every_file_format_holds_the_numbers():
    per = {"a": _res({"bm25": {"m": 0.5}, "x|y": {"m": 0.7}}), "b": _res({"bm25": {"m": 0.2}, "x|y": {"m": 0.1}})}
    s = aggregate(per, baseline="bm25")
    md, csv_text, html, tex = (render(s, f) for f in ("markdown", "csv", "html", "latex"))
    assert "| x\\|y | **0.7000** | 0.1000 | **0.4000** | **1.50** |" in md
    assert csv_text.splitlines()[0] == "retriever,metric,a,b,mean,mean_rank,a sig,b sig,mean sig"
    assert f"x|y,m,0.7,0.1,{math.fsum([0.7, 0.1]) / 2!r},1.5,0,0,0" in csv_text
    assert '<td class="best">0.4000</td>' in html and "<td>0.1000</td>" in html and "x|y" in html
    assert r"\begin{tabular}{lrrrr}" in tex and "x|y" in tex
    with pytest.raises(InputError, match="unknown table format"):
        render(s, "xlsx")


# ---------------------------------------------------------------------- runs
@pytest.mark.slow
def test_suite_run_equals_single_runs_and_report_renders_it(tmp_path, capsys, monkeypatch):
    config = write_suite_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", str(config), "--out", "out", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "dataset 1/2: support" in err and "dataset 2/2: tiny" in err
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert suite["datasets"] == ["support", "tiny"] and suite["complete"] is True
    for name, path in (("support", "demo"), ("tiny", "tiny")):
        single = config.with_name(f"single-{name}.yaml")
        single.write_text(SUITE.replace("datasets:", f"dataset: {{path: {path}, split: test}}\nunused:").replace(
            "unused:\n  support: demo\n  tiny: {path: tiny, split: test}\n", ""))  # fmt: skip
        assert main(["run", "--config", str(single), "--out", f"single-{name}", "--no-progress"]) == 0
        a = Results.load(tmp_path / "out" / name)
        b = Results.load(tmp_path / f"single-{name}")
        assert a.summary == b.summary and a.per_query == b.per_query and a.significance == b.significance
        for r in a.summary:
            assert suite["summary"][r][name] == b.summary[r]
    for r, means in suite["mean"].items():
        for m, v in means.items():
            assert v == math.fsum(suite["summary"][r][d][m] for d in suite["datasets"]) / 2
    capsys.readouterr()
    assert main(["report", "out"]) == 0
    shown = capsys.readouterr().out
    assert "ndcg@10: 2 datasets" in shown and "bm25_k12" in shown
    assert main(["report", "out", "--write"]) == 0
    assert json.loads((tmp_path / "out" / "suite.json").read_text())["summary"] == suite["summary"]
    # a subset
    assert main(["run", "--config", str(config), "--out", "sub", "--datasets", "tiny", "--no-progress"]) == 0
    assert json.loads((tmp_path / "sub" / "suite.json").read_text())["datasets"] == ["tiny"]
    assert not (tmp_path / "sub" / "support").exists()
    assert main(["run", "--config", str(config), "--out", "bad", "--datasets", "nope"]) == 2
    assert main(["run", "--config", str(config), "--out", "bad", "--dataset", "demo"]) == 2


@pytest.mark.slow
def test_benchmark_with_a_mapping_runs_a_suite(tmp_path):
    tiny = make_tiny(tmp_path / "tiny")
    suite = benchmark({"support": "demo", "tiny": str(tiny)}, {"bm25": {"type": "bm25"}}, metrics=["ndcg@10"],
                      latency_queries=2, warmup_queries=0, out=tmp_path / "out")  # fmt: skip
    assert isinstance(suite, SuiteResults) and suite.datasets == ["support", "tiny"]
    alone = benchmark(str(tiny), {"bm25": {"type": "bm25"}}, metrics=["ndcg@10"], latency_queries=2, warmup_queries=0)
    assert suite.summary["bm25"]["tiny"] == alone.summary["bm25"]
    assert SuiteResults.load(tmp_path / "out").summary == suite.summary
    assert suite.results("tiny").summary == alone.summary
    assert "| bm25 |" in suite.table()


SLOW_ON_TINY = textwrap.dedent("""
    import os, pathlib, time

    class SlowOnTiny:
        '''Fast on demo; on the tiny dataset it says it started, then takes SLOW_SECONDS per search.'''

        def index(self, corpus):
            self.tiny = any(d.id.startswith("tiny-") for d in corpus)
            if self.tiny:
                pathlib.Path("slow-started.flag").write_text("1")

        def search(self, queries, k):
            if self.tiny:
                time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
            return {q.id: [(q.id + "-none", 1.0)] for q in queries}
""")


def _harness(tmp_path: Path, *args: str, slow: str = "0") -> subprocess.CompletedProcess:
    return run_harness(*args, cwd=tmp_path, cwd_on_path=True, env={"SLOW_SECONDS": slow})


@pytest.mark.slow
def test_sigkill_in_the_second_dataset_then_resume_equals_an_uninterrupted_suite(tmp_path):
    write_suite_config(
        tmp_path, SUITE + '  slow: {type: python, class: "slowtiny:SlowOnTiny", allow_unknown_docs: true}\n'
    )
    (tmp_path / "slowtiny.py").write_text(SLOW_ON_TINY)
    kill_when_started(tmp_path, "run", "--config", "suite.yaml", "--out", "out", "--no-progress")
    out = tmp_path / "out"
    assert json.loads((out / "suite.json").read_text())["complete"] is False
    assert Results.load(out / "support").complete is True  # the first dataset finished before the kill
    assert Results.load(out / "tiny").complete is False

    resumed = _harness(tmp_path, "run", "--config", "suite.yaml", "--out", "out", "--resume", "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    first, second = resumed.stderr.split("dataset 2/2: tiny")
    assert "dataset 1/2: support" in first
    assert "running" not in first.split("dataset 1/2: support")[1]  # nothing of the first dataset re-ran
    for r in ("bm25", "bm25_k12", "slow"):
        assert f"{r}: reusing the stored run" in first
    assert "running slow" in second

    fresh = _harness(tmp_path, "run", "--config", "suite.yaml", "--out", "fresh", "--no-progress")
    assert fresh.returncode == 0, fresh.stderr
    a = json.loads((out / "suite.json").read_text())
    b = json.loads((tmp_path / "fresh" / "suite.json").read_text())
    assert a["complete"] is True
    for key in ("datasets", "summary", "mean", "rank", "significance", "across_datasets", "queries"):
        assert a[key] == b[key], key
    for d in ("support", "tiny"):
        ra, rb = Results.load(out / d), Results.load(tmp_path / "fresh" / d)
        assert ra.summary == rb.summary and ra.per_query == rb.per_query


# ---------------------------------------------------------------------- harness check of suites
@pytest.mark.slow
def test_check_a_suite_names_the_dataset_that_regressed(tmp_path, capsys):
    tiny = make_tiny(tmp_path / "tiny")
    opts = {"metrics": ["ndcg@10", "mrr@10"], "latency_queries": 2, "warmup_queries": 0, "baseline": "bm25"}
    benchmark({"support": "demo", "tiny": str(tiny)}, {"bm25": {"type": "bm25"}, "rm3": {"type": "bm25", "k1": 1.2}},
              out=tmp_path / "base", **opts)  # fmt: skip
    # the current suite: the same, except that on `support` both retrievers got much worse
    shutil.copytree(tmp_path / "base", tmp_path / "cur")

    def broken(queries, k):
        return {q.id: [(f"d{(i * 7 + len(q.text)) % 60 + 1:04d}", 1.0 / (i + 1)) for i in range(k)] for q in queries}

    benchmark("demo", {"bm25": broken, "rm3": broken}, out=tmp_path / "cur" / "support", **opts)
    assert main(["report", str(tmp_path / "cur"), "--write"]) == 0
    capsys.readouterr()

    same = main(["check", "--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "base")])
    text = capsys.readouterr().out
    assert same == 0, text
    assert re.search(r"suite PASS( \(blind on \d+ of \d+ checks[^)]*\))?: 2 datasets", text), text[-500:]

    junit = tmp_path / "junit.xml"
    code = main(["check", "--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "cur"),
                 "--junit", str(junit), "--summary", str(tmp_path / "summary.md")])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 1, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("suite FAIL on 1 of 2 datasets: support (") and "bm25 ndcg@10 regression" in last
    assert "tiny" not in last
    assert "== dataset 2/2: tiny: PASS ==" in text
    assert 'classname="support.harness.check.bm25"' in junit.read_text()
    assert "support" in (tmp_path / "summary.md").read_text()
    # a dataset missing from the current suite fails too, by name
    shutil.rmtree(tmp_path / "cur" / "tiny")
    data = json.loads((tmp_path / "cur" / "suite.json").read_text())
    data["datasets"] = ["support"]
    (tmp_path / "cur" / "suite.json").write_text(json.dumps(data))
    assert main(["check", "--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "cur")]) == 1
    assert "tiny: dataset missing from the current suite" in capsys.readouterr().out
    # a suite against one folder is an input error
    assert main(["check", "--baseline", str(tmp_path / "base"), "--current", str(tmp_path / "base" / "tiny")]) == 2


@pytest.mark.extra  # chunking: the dense extra (the embedding model's tokenizer)
@pytest.mark.slow
def test_chunkings_times_datasets(tmp_path, monkeypatch):
    make_tiny(tmp_path / "tiny")
    (tmp_path / "c.yaml").write_text(
        "datasets: {demo: demo, tiny: tiny}\nmetrics: [ndcg@10]\nlatency_queries: 2\nwarmup_queries: 0\n"
        "baseline: bm25[none]\nchunking:\n  none: {method: none}\n  t64: {method: tokens, size: 64, overlap: 16}\n"
        "retrievers:\n  bm25: {type: bm25}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "c.yaml", "--out", "out", "--no-progress"]) == 0
    suite = SuiteResults.load(tmp_path / "out")
    assert suite.retrievers == ["bm25[none]", "bm25[t64]"] and suite.datasets == ["demo", "tiny"]
    for d in suite.datasets:
        assert suite.summary["bm25[t64]"][d] == Results.load(tmp_path / "out" / d).summary["bm25[t64]"]


def test_check_of_suites_refuses_a_dataset_folder_whose_run_changed(tmp_path, capsys):
    """Each dataset's folder is read as ``harness check`` reads one folder: a run file edited after
    the run is refused (exit 2, naming it) unless --allow-incomplete."""
    import shutil

    suite = shutil.copytree(REPO / "tests" / "data" / "golden_outputs" / "inputs" / "suite", tmp_path / "suite")
    run = next((suite / "small" / "runs").glob("bm25-*.trec"))
    run.write_text(run.read_text() + "\n")
    args = ["check", "--baseline", str(suite), "--current", str(suite), "--permutations", "100"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "changed after the run" in err and run.name in err
    assert main([*args, "--allow-incomplete"]) == 0
