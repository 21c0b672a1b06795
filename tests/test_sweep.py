"""Sweeps: the choice is made on selection queries only, the report is on test queries only, and
each grid point's work (an index) is done once.

The data: the demo dataset split by query id into a ``train`` and a ``test`` split (two qrels
files over the same corpus and queries), so a sweep can choose on one and report on the other.
Every number the sweep reports is checked against an independent ``harness.benchmark`` call on
one split alone.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import harness
from harness.errors import InputError
from harness.metrics.evaluate import mean
from harness.stats import compare
from harness.sweep import load_sweep_config, run_sweep, validate_sweep_folder, write_sweep
from harness.sweep.render import print_sweep, to_markdown

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "datasets" / "demo"

BM25_GRID = {"k1": [0.6, 1.2], "b": [0.4, 0.75]}


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo as a BEIR folder with a train split (every query id-judged with an odd number) and
    a test split (the even ones); keyword-judged queries are left out of both."""
    root = tmp_path_factory.mktemp("demo2")
    shutil.copy(DEMO / "corpus.jsonl", root / "corpus.jsonl")
    lines = [json.loads(x) for x in (DEMO / "queries.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    (root / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in lines if not q.get("keywords")), encoding="utf-8"
    )
    (root / "qrels").mkdir()
    rows = (DEMO / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    header = "query-id\tcorpus-id\tscore\n"
    odd = [r for r in rows if int(r.split("\t")[0][1:]) % 2]
    even = [r for r in rows if not int(r.split("\t")[0][1:]) % 2]
    (root / "qrels" / "train.tsv").write_text(header + "".join(r + "\n" for r in odd), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(header + "".join(r + "\n" for r in even), encoding="utf-8")
    return root


def write_config(folder: Path, dataset: Path | str, sweep: str, retrievers: str | None = None) -> Path:
    retrievers = retrievers or (
        "  bm25: {type: bm25}\n"
        "  plain: {type: bm25, stemmer: null, k1: 1.2, b: 0.75}\n"
        "  hybrid: {type: hybrid, of: [bm25, plain], fusion: rrf}\n"
    )
    path = folder / "sweep.yaml"
    path.write_text(
        f"dataset: {{path: {dataset}, split: test}}\n"
        "metrics: [ndcg@10, recall@100]\n"
        "depth: 100\n"
        f"retrievers:\n{retrievers}"
        f"sweep:\n{sweep}",
        encoding="utf-8",
    )
    return path


SELECT_ON_TRAIN = (
    "  select_on: train\n"
    "  metric: ndcg@10\n"
    "  grid:\n"
    f"    bm25: {json.dumps(BM25_GRID)}\n"
    "    hybrid: {rrf_k: [5, 60, 200]}\n"
)


@pytest.fixture
def index_counter(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts real BM25 index builds by (k1, b, stemmer) (the real method still runs)."""
    import retrievers.bm25 as bm25

    counts: Counter = Counter()
    real = bm25.BM25.index

    def index(self, corpus):
        counts[(self.k1, self.b, self.stemmer_name)] += 1
        return real(self, corpus)

    monkeypatch.setattr(bm25.BM25, "index", index)
    return counts


@pytest.fixture(scope="module")
def train_sweep(two_splits: Path, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("cfg")
    config, sweep = load_sweep_config(write_config(folder, two_splits, SELECT_ON_TRAIN))
    return run_sweep(config, sweep, config_dir=folder)


def split_means(dataset: Path, split: str, retrievers: dict, metric: str = "ndcg@10") -> dict[str, float]:
    res = harness.benchmark(
        str(dataset), retrievers, split=split, metrics=[metric], show_progress=False, latency_queries=0
    )
    return {name: res.summary[name][metric] for name in retrievers}


def test_selection_uses_only_the_selection_split(train_sweep, two_splits: Path) -> None:
    """Each point's selection score is its mean over the train queries alone, bit for bit, and the
    chosen point is the best of them."""
    bm25 = train_sweep.sections[0]
    specs = {p.label: {"type": "bm25", **p.point} for p in bm25.points}
    alone = split_means(two_splits, "train", specs)
    assert {p.label: p.selection for p in bm25.points} == alone
    best = max(alone.values())
    assert bm25.chosen == [next(p.point for p in bm25.points if alone[p.label] == best)]
    assert bm25.selection_of_chosen == best


def test_test_numbers_are_test_queries_only(train_sweep, two_splits: Path) -> None:
    """Chosen and default test means equal a benchmark of those settings on the test split alone;
    the p-value is the paired randomization test over the test queries."""
    bm25, hybrid = train_sweep.sections
    chosen = {"type": "bm25", **bm25.chosen[0]}
    default = {"type": "bm25"}
    alone = harness.benchmark(
        str(two_splits),
        {"chosen": chosen, "default": default},
        split="test",
        metrics=["ndcg@10", "recall@100"],
        baseline="default",
        show_progress=False,
        latency_queries=0,
    )
    row = bm25.test[0]
    assert row.metric == "ndcg@10"
    assert row.chosen == alone.summary["chosen"]["ndcg@10"]
    assert row.default == alone.summary["default"]["ndcg@10"]
    assert row.p_value == alone.significance["chosen"]["ndcg@10"]["p_value"]
    assert bm25.n_test == len(alone.query_ids)
    by_chosen, by_default = alone.query_scores("chosen"), alone.query_scores("default")
    assert bm25.per_query == {
        q: {"chosen": by_chosen[q]["ndcg@10"], "default": by_default[q]["ndcg@10"]} for q in by_chosen
    }
    assert bm25.gap == bm25.selection_of_chosen - bm25.test_of_chosen
    # the hybrid's default is the config's setting all the way down (default bm25 under it)
    plain = {"type": "bm25", "stemmer": None, "k1": 1.2, "b": 0.75}
    both = harness.benchmark(
        str(two_splits),
        {
            "bm25": chosen,
            "bm25_default": default,
            "plain": plain,
            "chosen": {"type": "hybrid", "of": ["bm25", "plain"], **hybrid.chosen[0]},
            "default": {"type": "hybrid", "of": ["bm25_default", "plain"]},
        },
        split="test",
        metrics=["ndcg@10"],
        show_progress=False,
        latency_queries=0,
    )
    assert hybrid.test[0].chosen == both.summary["chosen"]["ndcg@10"]
    assert hybrid.test[0].default == both.summary["default"]["ndcg@10"]
    assert hybrid.held == [{"bm25": ",".join(f"{k}={v}" for k, v in bm25.chosen[0].items())}]


def test_each_index_is_built_once(two_splits: Path, tmp_path: Path, index_counter: Counter) -> None:
    """One BM25 index per distinct (k1, b) over the whole sweep (selection and test together, and
    the hybrid stage reusing the runs), one for the second retriever, none twice."""
    config, sweep = load_sweep_config(write_config(tmp_path, two_splits, SELECT_ON_TRAIN))
    result = run_sweep(config, sweep, config_dir=tmp_path)
    grid = {(k1, b, "english") for k1 in BM25_GRID["k1"] for b in BM25_GRID["b"]}
    expected = grid | {(0.9, 0.4, "english"), (1.2, 0.75, None)}  # + default bm25, + `plain`
    assert set(index_counter) == expected
    assert all(n == 1 for n in index_counter.values()), index_counter
    assert result.work["ran"] == {"bm25": len(expected), "hybrid": 3 + 1}
    assert result.work["served"] >= 2  # chosen bm25 and default bm25 served to the hybrid stage
    assert result.work["benchmark_calls"] == 2


def test_folds_hold_out_every_query_once(tmp_path: Path, index_counter: Counter) -> None:
    """``folds: 3`` on the demo's one split: the folds partition the queries, each fold is scored
    with a point chosen without it, and the held-out vector is compared with the default on all."""
    sweep_block = "  folds: 3\n  metric: ndcg@10\n  grid:\n    bm25: {k1: [0.6, 1.5]}\n"
    config, sweep = load_sweep_config(write_config(tmp_path, "demo", sweep_block, "  bm25: {type: bm25}\n"))
    result = run_sweep(config, sweep, config_dir=tmp_path)
    assert [c["test_queries"] for c in result.contexts] == [28, 28, 27]
    assert all(c["selection_queries"] + c["test_queries"] == 83 for c in result.contexts)
    (s,) = result.sections
    assert s.n_test == 83 and len(s.chosen) == 3
    assert sum(p.chosen for p in s.points) == 3
    assert sorted(index_counter.values()) == [1, 1, 1]  # k1 0.6, 1.5 and the default 0.9
    # rebuild the held-out vector from per-fold choices made on the other folds
    ds = harness.load_dataset("demo")
    res = harness.benchmark(
        ds,
        {"a": {"type": "bm25", "k1": 0.6}, "b": {"type": "bm25", "k1": 1.5}, "d": {"type": "bm25"}},
        metrics=["ndcg@10"],
        show_progress=False,
        latency_queries=0,
    )
    ids = sorted(q.id for q in ds.queries)
    order = np.random.default_rng(0).permutation(len(ids))
    held_ids, held, default = [], [], []
    for f in range(3):
        fold = sorted(ids[i] for i in order[f::3])
        rest = [q for q in ids if q not in fold]
        sel = {n: mean(np.array([res.query_scores(n)[q]["ndcg@10"] for q in rest])) for n in ("a", "b")}
        pick = "a" if sel["a"] >= sel["b"] else "b"
        assert s.chosen[f] == {"k1": 0.6 if pick == "a" else 1.5}
        held_ids += fold
        held += [res.query_scores(pick)[q]["ndcg@10"] for q in fold]
        default += [res.query_scores("d")[q]["ndcg@10"] for q in fold]
    assert s.test[0].chosen == mean(np.array(held))
    assert s.test[0].default == res.summary["d"]["ndcg@10"]
    sig, _ = compare({"c": {"m": np.array(held)}, "d": {"m": np.array(default)}}, "d", query_ids=held_ids, seed=0)
    assert s.test[0].p_value == sig["c"]["m"]["p_value"]


def test_outputs_and_refusal(train_sweep, tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = {p.name for p in write_sweep(train_sweep, out)}
    assert files == {"sweep.json", "sweep.md", "heatmap_bm25.png"}
    data = json.loads((out / "sweep.json").read_text())
    assert data["sections"][0]["retriever"] == "bm25" and len(data["sections"][0]["points"]) == 4
    assert (out / "heatmap_bm25.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = to_markdown(train_sweep)
    assert "took no part in the choice" in md and "| k1 \\ b |" in md
    write_sweep(train_sweep, out)  # its own files may be written again
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds other files"):
        validate_sweep_folder(mine)
    assert (mine / "notes.txt").read_text() == "mine"


def test_terminal_output_fits_80_columns(train_sweep) -> None:
    from rich.console import Console

    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_sweep(train_sweep, console)
    text = console.export_text()
    assert "took no part in the choice" in text
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize(
    ("sweep_block", "line", "message"),
    [
        ("  select_on: train\n  metric: ndcg@10\n  grid:\n    nope: {k1: [1]}\n", 12, "'nope' is not a retriever"),
        ("  select_on: train\n  metric: ndcg@10\n  grid:\n    bm25: {k9: [1]}\n", 12, "no option 'k9'"),
        ("  select_on: train\n  metric: ndcg@10\n  grid:\n    bm25: {b: [0.4, 2]}\n", 12, "b=2: "),
        ("  select_on: train\n  metric: ndcg@10\n  grid:\n    bm25: {b: []}\n", 12, "non-empty list"),
        ("  select_on: train\n  folds: 3\n  metric: ndcg@10\n  grid:\n    bm25: {b: [1]}\n", 8, "exactly one"),
        ("  select_on: train\n  metric: ndgc@10\n  grid:\n    bm25: {b: [1]}\n", 10, "ndgc"),
        ("  select_on: train\n  metric: ndcg@10\n  grid:\n    bm25: {b: [1]}\n  extra: 1\n", 13, "unknown key"),
    ],
)
def test_bad_sweep_blocks_name_file_line_and_key(tmp_path: Path, sweep_block: str, line: int, message: str) -> None:
    path = write_config(tmp_path, "demo", sweep_block)
    with pytest.raises(InputError, match=message) as e:
        load_sweep_config(path)
    assert e.value.path is not None and Path(str(e.value.path)) == path
    assert e.value.line == line, str(e.value)


def test_selecting_on_the_reported_split_is_refused(tmp_path: Path) -> None:
    block = "  select_on: test\n  metric: ndcg@10\n  grid:\n    bm25: {b: [0.4]}\n"
    config, sweep = load_sweep_config(write_config(tmp_path, "demo", block))
    with pytest.raises(InputError, match="what a sweep exists to avoid"):
        run_sweep(config, sweep, config_dir=tmp_path)


@pytest.mark.slow
def test_cli(two_splits: Path, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, two_splits, SELECT_ON_TRAIN)
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "COLUMNS": "80"}
    import os

    env["HARNESS_CACHE_DIR"] = os.environ["HARNESS_CACHE_DIR"]
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "sweep", "--config", str(cfg), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Chosen vs default on the test queries" in proc.stdout
    assert (out / "heatmap_bm25.png").is_file()
    bad = tmp_path / "bad.yaml"
    bad.write_text(cfg.read_text().replace("k1:", "k9:"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "sweep", "--config", str(bad)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2
    assert f"{bad}:" in proc.stderr and "k9" in proc.stderr


def test_ties_go_to_the_first_point(tmp_path: Path) -> None:
    """Two points that rank identically (b only matters through length normalisation; with k1 = 0
    BM25 ignores term frequency and length) tie; the first in grid order is chosen."""
    block = "  folds: 2\n  metric: ndcg@10\n  grid:\n    bm25: {k1: [0.0], b: [0.3, 0.9]}\n"
    config, sweep = load_sweep_config(write_config(tmp_path, "demo", block, "  bm25: {type: bm25}\n"))
    (s,) = run_sweep(config, sweep, config_dir=tmp_path).sections
    assert s.points[0].selection == s.points[1].selection
    assert s.chosen == [{"k1": 0.0, "b": 0.3}] * 2
    assert not math.isnan(s.test[0].p_value)
