"""Every input checked before work, through the CLI on real files and real ``harness`` processes:
sweep sizes and plans, chunk-span caches, symlinks, golden sets, chunking specs, depth and history,
compare's run files. Each case asserts exit 2 and one line naming file, line and field, with nothing
run; a sweep of malformed inputs through the CLI asserts no error is ever a bare exception class name.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from tests.conftest import BARE, copy_demo, one_line_error
from tests.conftest import run_harness as harness

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "datasets" / "demo"
DEEP = "[" * 200_000 + "]" * 200_000


def edit_query(folder: Path, index: int, edit) -> None:
    """Apply ``edit`` to the metadata of the query on line ``index + 1`` of queries.jsonl."""
    path = folder / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[index])
    edit(obj.setdefault("metadata", {}))
    lines[index] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


TWO_BM25 = "retrievers:\n  bm25: {type: bm25}\n  bm25b: {type: bm25, k1: 1.0}\n"


# ----------------------------------------------------------------------------- sweep size
def _grid_config(tmp_path: Path, n: int, m: int) -> Path:
    k1 = ", ".join(f"{0.1 + i * 0.001:.3f}" for i in range(n))
    b = ", ".join(f"{i / max(m, 1):.4f}" for i in range(m))
    return write(
        tmp_path / "sweep.yaml",
        f"dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {{type: bm25}}\nsweep:\n  folds: 2\n"
        f"  metric: ndcg@10\n  grid:\n    bm25:\n      k1: [{k1}]\n      b: [{b}]\n",
    )


def test_a_million_point_sweep_is_refused_before_planning(tmp_path) -> None:
    cfg = _grid_config(tmp_path, 1000, 1000)
    line = one_line_error(harness("sweep", "--config", str(cfg), cwd=tmp_path), f"{cfg}:9:", "1,000,000 points")
    assert "--max-points" in line and "at most 1,000" in line


def test_the_point_count_is_checked_without_building_points(tmp_path, monkeypatch) -> None:
    from harness.sweep import load_sweep_config
    from harness.sweep.spec import SweepSpec

    def boom(self, name):
        raise AssertionError("points were built before the bound was checked")

    monkeypatch.setattr(SweepSpec, "points", boom)
    with pytest.raises(InputError, match="1,000,000 points"):
        load_sweep_config(_grid_config(tmp_path, 1000, 1000))


def test_max_points_lowers_and_raises_the_bound(tmp_path) -> None:
    from harness.sweep import load_sweep_config

    cfg = _grid_config(tmp_path, 40, 30)  # 1,200 points: over the default
    with pytest.raises(InputError, match="1,200 points"):
        load_sweep_config(cfg)
    _, sweep = load_sweep_config(cfg, max_points=1_200)
    assert sweep.n_points("bm25") == 1_200
    one_line_error(
        harness("sweep", "--config", str(_grid_config(tmp_path, 2, 2)), "--max-points", "3", cwd=tmp_path),
        "4 points",
        "at most 3",
    )
    one_line_error(
        harness("sweep", "--config", str(cfg), "--max-points", "0", cwd=tmp_path), "--max-points", "1 to 100,000"
    )


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("{type: bm25, threads: 100000}", "retrievers.r.threads: Input should be less than or equal to 1024"),
        ("{type: bm25, k1: .inf}", "retrievers.r.k1: Input should be a finite number"),
        ("{type: dense, batch_size: 10000000}", "retrievers.r.batch_size"),
        ("{type: dense, ef_search: 10000000}", "retrievers.r.ef_search"),
        ("{type: http, url: 'http://127.0.0.1:1/x', concurrency: 100000}", "retrievers.r.concurrency"),
        ("{type: http, url: 'http://127.0.0.1:1/x', retries: 1000000000}", "retrievers.r.retries"),
        ("{type: http, url: 'http://127.0.0.1:1/x', backoff_s: .inf}", "retrievers.r.backoff_s"),
        ("{type: http, url: 'http://127.0.0.1:1/x', max_response_mb: .inf}", "retrievers.r.max_response_mb"),
        ("{type: rerank, of: b, top_n: 10000000}", "retrievers.r.top_n"),
        ("{type: mmr, of: b, top_n: 10000000}", "retrievers.r.top_n"),
        ("{type: hybrid, of: [b], fusion: weighted, weights: [.inf]}", "weights must be finite"),
    ],
)
def test_every_retriever_size_has_a_ceiling(tmp_path, spec, needle) -> None:
    from harness.config import load_config

    cfg = write(tmp_path / "c.yaml", f"retrievers:\n  b: {{type: bm25}}\n  r: {spec}\n")
    with pytest.raises(InputError) as e:
        load_config(cfg)
    assert str(e.value).startswith(f"{cfg}:3: ") and needle in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("block", "needle"),
    [
        ("folds: '5'", "sweep.folds: must be an integer, not the string '5'"),
        ("folds: true", "sweep.folds: must be an integer, not true (a boolean)"),
        ("folds: 5.0", "sweep.folds: must be a plain integer"),
    ],
)
def test_sweep_numbers_are_strict(tmp_path, block, needle) -> None:
    from harness.sweep import load_sweep_config

    cfg = write(
        tmp_path / "s.yaml",
        f"dataset: demo\nretrievers:\n  bm25: {{type: bm25}}\nsweep:\n  {block}\n  metric: ndcg@10\n"
        "  grid: {bm25: {k1: [1.0]}}\n",
    )
    with pytest.raises(InputError) as e:
        load_sweep_config(cfg)
    assert str(e.value).startswith(f"{cfg}:5: ") and needle in str(e.value), str(e.value)


# ----------------------------------------------------------------------------- rows 5 and 12: tags
@pytest.mark.parametrize(
    ("tags", "needle"),
    [
        ([1, 2], "item 0 is 1 (int)"),
        (["ok", "dir\ud800"], "lone surrogate"),
        (5, "got 5 (int)"),
        (True, "got true (a boolean)"),
        ({}, "got a mapping"),
        (["a\x07b"], "control character"),
        (["x" * 201], "at most 200"),
    ],
)
def test_bad_query_tags_stop_the_run_before_any_retriever(tmp_path, tags, needle) -> None:
    ds = copy_demo(tmp_path / "ds")
    edit_query(ds, 2, lambda meta: meta.__setitem__("tags", tags))
    cfg = write(tmp_path / "c.yaml", "dataset: ds\n" + TWO_BM25)
    proc = harness("run", "--config", str(cfg), "--out", "out", "--no-progress", cwd=tmp_path)
    one_line_error(proc, f"{ds / 'queries.jsonl'}:3:", "metadata.tags", needle)
    assert "running" not in proc.stderr  # no retriever ran
    assert not (tmp_path / "out" / "results.json").exists()


def test_documented_comma_separated_tags_make_slices(tmp_path) -> None:
    ds = copy_demo(tmp_path / "ds")
    edit_query(ds, 0, lambda meta: meta.__setitem__("tags", "keyword, numeric"))
    cfg = write(tmp_path / "c.yaml", "dataset: ds\nretrievers:\n  bm25: {type: bm25}\n")
    proc = harness("run", "--config", str(cfg), "--out", "out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tags = json.loads((tmp_path / "out" / "results.json").read_text())["query_tags"]
    assert tags["q01"] == ["keyword", "numeric"]


def test_a_dataset_built_in_code_gets_the_same_tag_check() -> None:
    from harness.model import GoldenDataset, Query
    from harness.validate import check_dataset_usable

    ds = GoldenDataset.build(
        "x", [], [Query(id="q1", text="a", metadata={"tags": [1, 2]})], {"q1": {"d1": 1}}, split="test"
    )
    with pytest.raises(InputError, match=r"metadata\.tags: query 'q1': item 0 is 1"):
        check_dataset_usable(ds)
    ok = GoldenDataset.build(
        "x", [], [Query(id="q1", text="a", metadata={"tags": "keyword, numeric"})], {"q1": {"d1": 1}}, split="test"
    )
    check_dataset_usable(ok)
    assert ok.queries[0].metadata["tags"] == ["keyword", "numeric"]  # the form the file readers give


def test_golden_set_tags_are_checked_with_their_line(tmp_path) -> None:
    from harness.io.golden import read_golden

    g = write(tmp_path / "g.csv", 'question,relevant_ids,tags\na?,d1,"keyword; numeric"\nb?,d2,"[1, 2]"\n')
    with pytest.raises(InputError) as e:
        read_golden(g)
    assert str(e.value).startswith(f"{g}:3: tags: item 0 is 1 (int)"), str(e.value)
    ok = write(tmp_path / "ok.csv", 'question,relevant_ids,tags\na?,d1,"keyword; numeric"\n')
    assert read_golden(ok).queries[0].metadata["tags"] == ["keyword", "numeric"]


# ----------------------------------------------------------------------------- rows 6, 16, 17: sweeps
SWEEP_HEAD = """\
dataset: demo
metrics: [ndcg@10]
retrievers:
  bm25: {type: bm25}
  bm25b: {type: bm25, k1: 1.2}
  hyb: {type: hybrid, of: [bm25, bm25b]}
sweep:
  folds: 2
  metric: ndcg@10
  grid:
"""


@pytest.mark.parametrize(
    ("grid", "line", "needles"),
    [
        # bm25 at k1=1.2 *is* bm25b, so the hybrid would fuse one run twice
        ("    bm25: {k1: [0.9, 1.2]}\n    hyb: {rrf_k: [10, 60]}\n", 11, ["'bm25' and 'bm25b' become the same run"]),
        # `of` swept to a missing retriever, or to a cycle
        ("    hyb: {of: [[bm25, nosuch]]}\n", 11, ["'nosuch' is not a retriever in this config"]),
        ("    hyb: {of: [[bm25, hyb]]}\n", 11, ["the inputs form a cycle (hyb -> hyb)"]),
        ("    bm25: {k1: ['0.9']}\n", 11, ["sweep.grid.bm25.k1", "not the string '0.9'"]),
    ],
)
def test_sweep_plans_are_checked_before_any_work(tmp_path, grid, line, needles) -> None:
    cfg = write(tmp_path / "s.yaml", SWEEP_HEAD + grid)
    proc = harness("sweep", "--config", str(cfg), "--no-progress", cwd=tmp_path)
    one_line_error(proc, f"{cfg}:{line}:", *needles)
    assert "sweeping" not in proc.stderr  # refused before the first stage


def test_run_sweep_checks_the_plan_of_a_spec_built_in_code(tmp_path) -> None:
    from harness.config import load_config
    from harness.sweep import parse_sweep, run_sweep

    config = load_config(write(tmp_path / "c.yaml", SWEEP_HEAD.split("sweep:")[0]))
    spec = parse_sweep(
        {"folds": 2, "metric": "ndcg@10", "grid": {"bm25": {"k1": [0.9, 1.2]}, "hyb": {"rrf_k": [10]}}}, config
    )

    def benchmark(*args, **kwargs):
        raise AssertionError("a retriever ran before the plan was checked")

    with pytest.raises(InputError, match="'bm25' and 'bm25b' become the same run"):
        run_sweep(config, spec, benchmark=benchmark)


def test_a_selection_split_judging_no_known_query_says_so(tmp_path) -> None:
    ds = copy_demo(tmp_path / "ds")
    (ds / "qrels" / "train.tsv").write_text("zz1\t0\td1\t1\nzz2\t0\td2\t1\n")
    cfg = write(
        tmp_path / "s.yaml",
        "dataset: ds\nmetrics: [ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n"
        "sweep:\n  select_on: train\n  metric: ndcg@10\n  grid:\n    bm25: {k1: [0.9, 1.2]}\n",
    )
    line = one_line_error(
        harness("sweep", "--config", str(cfg), "--no-progress", cwd=tmp_path),
        "sweep.select_on",
        "split 'train' has no query to choose on",
        "judgments name no query of queries.jsonl",
    )
    assert "are in both" not in line


# ----------------------------------------------------------------------------- chunk-span cache
@pytest.fixture
def span_cache(tmp_path):
    from harness.chunking import chunk_corpus, make_chunker
    from harness.datasets import load_dataset

    corpus = load_dataset("demo").corpus
    chunker = make_chunker({"method": "sentences", "size": 32})
    fresh = chunk_corpus(corpus, chunker, cache_dir=tmp_path)
    [npy] = (tmp_path / "chunks").glob("*.npy")
    return corpus, chunker, fresh, npy


@pytest.mark.parametrize("edit", ["float64", "shorter spans", "out of bounds", "wrong shape"])
def test_an_edited_span_cache_is_recomputed_with_a_warning(span_cache, caplog, edit) -> None:
    from harness.chunking import chunk_corpus

    corpus, chunker, fresh, npy = span_cache
    rows = np.load(npy)
    if edit == "float64":
        bad = rows.astype(np.float64)
    elif edit == "shorter spans":  # in bounds, so only the recorded sha256 can tell
        bad = rows.copy()
        bad[:, 2] = np.maximum(bad[:, 1] + 1, bad[:, 2] // 2)
    elif edit == "out of bounds":
        bad = rows.copy()
        bad[0, 2] = 10**9
    else:
        bad = rows[:, :2]
    np.save(npy, bad)
    with caplog.at_level(logging.WARNING, logger="harness"):
        again = chunk_corpus(corpus, chunker, cache_dir=npy.parent.parent)
    assert not again.cached
    assert np.array_equal(again.spans, fresh.spans)
    assert any(str(npy) in r.getMessage() and "chunking again" in r.getMessage() for r in caplog.records)
    # the cache is written again, and trusted again
    assert chunk_corpus(corpus, chunker, cache_dir=npy.parent.parent).cached


@pytest.mark.slow  # several real `harness` processes
def test_an_edited_span_cache_does_not_change_the_score(tmp_path) -> None:
    cfg = write(
        tmp_path / "c.yaml",
        "dataset: demo\nmetrics: [ndcg@10]\n"
        "chunking:\n  s32: {method: sentences, size: 32}\nretrievers:\n  bm25: {type: bm25}\n",
    )
    env = {"HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    first = harness("run", "--config", str(cfg), "--out", "a", "--no-progress", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    [npy] = (tmp_path / "cache" / "chunks").glob("*.npy")
    rows = np.load(npy)
    rows[:, 2] = np.maximum(rows[:, 1] + 1, rows[:, 1] + (rows[:, 2] - rows[:, 1]) // 3)
    np.save(npy, rows)
    second = harness("run", "--config", str(cfg), "--out", "b", "--no-progress", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert str(npy) in second.stderr and "chunking again" in second.stderr
    score = [json.loads((tmp_path / d / "results.json").read_text())["summary"] for d in ("a", "b")]
    assert score[0] == score[1]


# ----------------------------------------------------------------------------- symlinks
def test_a_file_symlink_out_of_the_corpus_folder_is_never_followed(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET outside the corpus\n")
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha coffee\n")
    (folder / "passwd.txt").symlink_to(secret)
    (folder / "sub" / "up.md").symlink_to("../../secret.txt")
    (folder / "alias.txt").symlink_to("a.txt")  # inside the folder: read
    (folder / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text("SECRET folder\n")
    (folder / "linked").symlink_to(tmp_path / "elsewhere")  # a folder symlink: not descended, counted
    golden = write(tmp_path / "g.jsonl", '{"question": "alpha?", "relevant_ids": ["a.txt"]}\n')
    proc = harness("convert", "--corpus", str(folder), "--golden", str(golden), "--out", "beir", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "skipped 4 symlinks pointing outside the corpus folder" in proc.stderr
    corpus = (tmp_path / "beir" / "corpus.jsonl").read_text()
    assert "SECRET" not in corpus
    assert sorted(json.loads(line)["_id"] for line in corpus.splitlines()) == ["a.txt", "alias.txt"]


# ----------------------------------------------------------------------------- golden sets
CORPUS = '{"_id": "d1", "text": "alpha"}\n{"_id": "d2", "text": "beta"}\n'


@pytest.mark.parametrize(
    ("name", "text", "needles"),
    [
        ("g.jsonl", '{"question": "a?", "relevant_ids": {}}\n', [":1: relevant_ids: is empty"]),
        ("g.jsonl", '{"question": "a?", "relevant_ids": []}\n', [":1: relevant_ids: is empty"]),
        ("g.csv", "question,relevant_ids\na?,[]\n", [":2: relevant_ids: is empty"]),
        (
            "g.jsonl",
            '{"question": "a?", "relevant_ids": {"d1": 99999999999999999999999}}\n',
            [":1: relevant_ids: grade of 'd1' is out of range (a 64-bit integer)"],
        ),
        ("g.jsonl", '{"question": 5, "relevant_ids": ["d1"]}\n', [":1: question: must be text, got int"]),
        (
            "g.csv",
            "question,relevant_ids\na?,d1\nb?,d2:99999999999999999999999\n",
            [":3: relevant_ids:", "out of range"],
        ),
        ("g.jsonl", '{"question": "a?", "relevant_ids": ["d1"], "x": ' + DEEP + "}\n", [":1:", "levels deep"]),
        ("g.json", '[{"question": "a?", "relevant_ids": ["d1"], "x": ' + DEEP + "}]\n", ["g.json:", "levels deep"]),
        ("g.csv", 'question,relevant_ids\na?,"' + DEEP + '"\n', [":2: relevant_ids:", "levels deep"]),
        ("g.jsonl", '{"question": "a?", "relevant_ids": {"d1": 1' + "0" * 5000 + "}}\n", [":1:", "invalid JSON"]),
    ],
)
def test_bad_golden_sets_are_one_located_line(tmp_path, name, text, needles) -> None:
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    golden = write(tmp_path / name, text)
    proc = harness("convert", "--corpus", "corpus.jsonl", "--golden", str(golden), "--out", "beir", cwd=tmp_path)
    one_line_error(proc, str(golden), *needles)


def test_golden_set_cells_that_used_to_fail_are_read(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from harness.datasets import load_golden

    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    table = pa.table(
        {
            "question": ["a?"],
            "relevant_ids": pa.array([[("d1", 2), ("d2", 1)]], type=pa.map_(pa.string(), pa.int64())),
        }
    )
    pq.write_table(table, tmp_path / "g.parquet")
    ds = load_golden(corpus=tmp_path / "corpus.jsonl", golden=tmp_path / "g.parquet")
    assert ds.qrels == {"q1": {"d1": 2, "d2": 1}}
    # a 240 KB CSV cell (the csv module's default limit is 128 KiB; a line may be 16 MiB)
    big = "x" * 240_000
    write(tmp_path / "g.csv", f'question,relevant_ids,notes\na?,d1,"{big}"\n')
    write(tmp_path / "c.csv", f'id,text\nd1,"{big}"\nd2,beta\n')
    ds = load_golden(corpus=tmp_path / "c.csv", golden=tmp_path / "g.csv")
    assert ds.queries[0].metadata["notes"] == big and len(ds.corpus) == 2


def test_non_utf8_file_names_are_refused_up_front(tmp_path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "b.txt").write_text("beta\n")
    try:
        with open(os.fsencode(folder) + b"/caf\xe9.txt", "wb") as fh:
            fh.write(b"alpha\n")
    except OSError:
        pytest.skip("the file system refuses non-UTF-8 names")
    write(tmp_path / "g.jsonl", '{"question": "beta?", "relevant_ids": ["b.txt"]}\n')
    proc = harness("convert", "--corpus", "notes", "--golden", "g.jsonl", "--out", "beir", cwd=tmp_path)
    one_line_error(proc, "file name is not valid UTF-8 (byte 0xe9", "rename the file")
    # a BEIR folder whose name is not UTF-8: refused before any retriever runs, not after
    latin = os.fsdecode(os.fsencode(tmp_path) + b"/ds\xe9")
    copy_demo(Path(latin))
    proc = harness(
        "run", "--dataset", os.fsencode(latin), "--retrievers", "bm25", "--out", "o", "--no-progress", cwd=tmp_path
    )
    one_line_error(proc, "ds\\udce9", "not valid UTF-8 text (byte 0xe9")
    assert "running" not in proc.stderr
    # an output folder, or any argument, that results.json could not record: refused before the work
    proc = harness("run", "--dataset", "demo", "--retrievers", "bm25", "--out", b"o\xe9", "--no-progress", cwd=tmp_path)
    one_line_error(proc, "not valid UTF-8 text (byte 0xe9")
    assert "running" not in proc.stderr


def test_a_split_is_a_plain_name_never_a_path(tmp_path) -> None:
    """``--split ../../evil`` would write ``qrels/../../evil.tsv`` outside the folder (convert) or
    read another folder's judgments (run)."""
    proc = harness("convert", "demo", "--split", "../../evil", "--out", "beir", cwd=tmp_path)
    one_line_error(proc, "split: split '../../evil' holds '/'")
    assert not (tmp_path / "evil.tsv").exists() and not (tmp_path / "beir").exists()


# ----------------------------------------------------------------------------- chunking specs
@pytest.mark.parametrize(
    ("entry", "needles"),
    [
        ('t16: {method: tokens, size: "16"}', ["chunking.t16.size", "not the string '16'"]),
        ("t16: {method: tokens, size: 16, overlap: true}", ["chunking.t16.overlap", "not true (a boolean)"]),
        ('t16: {method: tokens, size: 16, overlap: "4"}', ["chunking.t16.overlap", "not the string '4'"]),
        ("t16: {method: tokens, size: 16.0}", ["chunking.t16.size", "plain integer"]),
        ('"a\\0b": {method: tokens, size: 16}', ["chunking: chunking name", "control characters"]),
        ('"a\\x1bb": {method: tokens, size: 16}', ["control characters"]),
        (f"{'x' * 300}: {{method: tokens, size: 16}}", ["has 300 characters; at most 64"]),
        ('"..": {method: tokens, size: 16}', ["plain word"]),
    ],
)
def test_chunking_specs_are_strict_and_names_bounded(tmp_path, entry, needles) -> None:
    from harness.config import load_config

    cfg = write(tmp_path / "c.yaml", f"dataset: demo\nretrievers:\n  bm25: {{type: bm25}}\nchunking:\n  {entry}\n")
    with pytest.raises(InputError) as e:
        load_config(cfg)
    msg = str(e.value)
    assert msg.startswith(f"{cfg}:5: "), msg
    assert "\x00" not in msg and "\x1b" not in msg
    for n in needles:
        assert n in msg, (n, msg)


# ----------------------------------------------------------------------------- depth, history
@pytest.mark.slow  # several real `harness` processes
def test_json_nested_200k_deep_is_one_located_line_in_every_reader(tmp_path) -> None:
    for which in ("corpus", "queries"):
        ds = copy_demo(tmp_path / f"ds_{which}")
        with (ds / f"{which}.jsonl").open("a") as fh:
            fh.write('{"_id": "zz", "text": "x", "metadata": {"a": ' + DEEP + "}}\n")
        n = len((ds / f"{which}.jsonl").read_text().splitlines())
        proc = harness("run", "--dataset", str(ds), "--retrievers", "bm25", "--out", "o", "--no-progress", cwd=tmp_path)
        one_line_error(proc, f"{which}.jsonl:{n}:", "nested more than 100 levels deep")
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.json").write_text('{"schema": ' + DEEP + "}")
    one_line_error(harness("report", "res", cwd=tmp_path), "results.json", "levels deep")
    (tmp_path / "h.jsonl").write_text('{"schema": ' + DEEP + "}\n")
    one_line_error(harness("history", "h.jsonl", "--out", "h", cwd=tmp_path), "h.jsonl:1:", "levels deep")
    write(tmp_path / "c.yaml", "retrievers: " + DEEP + "\n")
    one_line_error(harness("run", "--config", "c.yaml", "--out", "o", cwd=tmp_path), "c.yaml", "levels deep")
    # 150 levels: under Python's recursion limit, over the bound
    write(tmp_path / "t.yaml", "default: " + "[" * 150 + "]" * 150 + "\n")
    proc = harness("check", "--baseline", "res", "--current", "res", "--tolerances", "t.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Recursion" not in proc.stderr, proc.stderr


def test_a_tolerances_file_is_bounded_like_a_config(tmp_path) -> None:
    from harness.gate.tolerances import Tolerances

    bomb = ["default: 0.01", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    with pytest.raises(InputError, match="expands to more than 100,000 values"):
        Tolerances.load(write(tmp_path / "bomb.yaml", "\n".join(bomb) + "\n"))
    with pytest.raises(InputError, match="nested more than 100 levels deep"):
        Tolerances.load(write(tmp_path / "deep.yaml", "default: " + "[" * 150 + "]" * 150 + "\n"))
    assert Tolerances.load(write(tmp_path / "ok.yaml", "default: 0.01\n")) is not None


def _night(**over) -> str:
    night = {
        "schema": "retrieval-harness/night",
        "time": "2026-01-01T00:00:00+00:00",
        "verdict": "pass",
        "summary": {"bm25": {"ndcg@10": 0.5}},
        "rows": [{"retriever": "bm25", "metric": "ndcg@10", "verdict": "pass"}],
    }
    night.update(over)
    return json.dumps(night)


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"rows": [{"retriever": "bm25", "metric": ["ndcg@10"]}]}, "rows[0].metric: must be text, got list"),
        ({"rows": [{"retriever": 5, "metric": "ndcg@10"}]}, "rows[0].retriever: must be text, got int"),
        ({"dataset": "scifact"}, "dataset: must be dict, got str"),
        ({"problems": 5}, "problems: must be list, got int"),
        ({"dataset": {"name": 5}}, "dataset.name: must be text"),
        ({"rows": [{"retriever": "bm25", "metric": "ndcg@10", "verdict": 1}]}, "rows[0].verdict"),
    ],
)
def test_odd_types_in_a_history_file_are_located(tmp_path, over, needle) -> None:
    from harness.gate.history import SCHEMA, SCHEMA_VERSION

    # a night as this harness writes it: the common envelope's schema and schema_version
    good = _night(schema_version=SCHEMA_VERSION).replace("retrieval-harness/night", SCHEMA)
    bad = _night(schema_version=SCHEMA_VERSION, **over).replace("retrieval-harness/night", SCHEMA)
    (tmp_path / "h.jsonl").write_text(good + "\n" + bad + "\n")
    one_line_error(harness("history", "h.jsonl", "--out", "h", cwd=tmp_path), "h.jsonl:2:", needle)


# ----------------------------------------------------------------------------- compare
def _runs(tmp_path: Path) -> Path:
    """Run files over the demo's judged queries: a ranks q01..q43, b q44.., c q01..q59 (each query's
    judged documents first, then the same 20 others, so a and c agree where both rank)."""
    qrels = DEMO / "qrels" / "test.tsv"
    judged: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines()[1:]:
        q, d, _ = line.split("\t")
        judged.setdefault(q, []).append(d)
    docs = [json.loads(line)["_id"] for line in (DEMO / "corpus.jsonl").read_text().splitlines()[:20]]

    def write_run(name: str, keep) -> None:
        lines = []
        for q, rel in sorted(judged.items()):
            if keep(q):
                ranked = list(dict.fromkeys([*rel, *docs]))
                lines += [f"{q} Q0 {d} {i + 1} {100 - i} {name}\n" for i, d in enumerate(ranked)]
        (tmp_path / f"{name}.trec").write_text("".join(lines))

    write_run("a", lambda q: q < "q44")
    write_run("b", lambda q: q >= "q44")
    write_run("c", lambda q: q < "q60")
    return qrels


def test_compare_of_disjoint_query_sets_is_refused_and_partial_overlap_is_compared_on_it(tmp_path) -> None:
    qrels = str(_runs(tmp_path))
    line = one_line_error(
        harness("compare", "a.trec", "b.trec", "--qrels", qrels, cwd=tmp_path), "rank no judged query in common"
    )
    assert "a.trec 38" in line and "b.trec 34" in line and "of 72 judged" in line
    proc = harness("compare", "a.trec", "c.trec", "--qrels", qrels, "--out", "cmp", "--bootstrap", "200", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "compared on the 38 that every run ranks" in proc.stderr
    assert "score 0 and stay in the mean" not in proc.stderr
    res = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert res["manifest"]["query_overlap"] == {"judged": 72, "compared": 38, "ranked": {"a": 38, "c": 52}}
    assert len(res["query_ids"]) == 38
    sig = res["significance"]["c"]["ndcg@10"]
    assert sig["wins"] + sig["ties"] + sig["losses"] == 38 and sig["delta"] == 0.0


# ----------------------------------------------------------------------------- every malformed input
def _malformed_cases(root: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of malformed inputs: each must exit 2 with one located line."""
    cases: list[tuple[str, list[str]]] = []

    def config(label: str, text: str) -> None:
        p = write(root / f"{label}.yaml", text)
        cases.append((label, ["run", "--config", str(p), "--out", str(root / f"o_{label}"), "--no-progress"]))

    def sweep(label: str, grid: str) -> None:
        p = write(root / f"{label}.yaml", SWEEP_HEAD + grid)
        cases.append((label, ["sweep", "--config", str(p), "--no-progress"]))

    for label, tags in (("tags_list", [1]), ("tags_bool", True), ("tags_map", {}), ("tags_surrogate", ["\ud800"])):
        ds = copy_demo(root / label)
        edit_query(ds, 0, lambda meta, t=tags: meta.__setitem__("tags", t))
        config(label, f"dataset: {ds}\nretrievers:\n  bm25: {{type: bm25}}\n")
    for label, chunk in (
        ("chunk_str", 't: {method: tokens, size: "16"}'),
        ("chunk_nul", '"a\\0": {method: tokens, size: 16}'),
        ("chunk_list", "t: [1, 2]"),
        ("chunk_method", "t: {method: words, size: 16}"),
    ):
        config(label, f"dataset: demo\nretrievers:\n  bm25: {{type: bm25}}\nchunking:\n  {chunk}\n")
    config("cfg_deep", "retrievers: " + DEEP + "\n")
    config("cfg_list", "- 1\n- 2\n")
    config("cfg_of_missing", "retrievers:\n  h: {type: hybrid, of: [bm25, nosuch]}\n  bm25: {type: bm25}\n")
    sweep("sweep_nosuch", "    hyb: {of: [[bm25, nosuch]]}\n")
    sweep("sweep_cycle", "    hyb: {of: [[bm25, hyb]]}\n")
    sweep("sweep_dup", "    bm25: {k1: [0.9, 1.2]}\n    hyb: {rrf_k: [10]}\n")
    sweep("sweep_grid_str", "    bm25: 5\n")
    sweep("sweep_grid_empty", "    bm25: {k1: []}\n")
    sweep("sweep_unknown", "    nosuch: {k1: [1]}\n")
    sweep("sweep_point_nested", "    bm25: [{k1: {a: 1}}]\n")
    sweep("sweep_option_int", "    bm25: {5: [1]}\n")
    sweep("sweep_inf", "    bm25: {k1: [.inf]}\n")
    config("bm25_threads", "retrievers:\n  bm25: {type: bm25, threads: 1000000}\n")
    (root / "corpus.jsonl").write_text(CORPUS)
    for label, name, text in (
        ("golden_empty", "g1.jsonl", '{"question": "a?", "relevant_ids": {}}\n'),
        ("golden_grade", "g2.jsonl", '{"question": "a?", "relevant_ids": {"d1": 1e999}}\n'),
        ("golden_grade_str", "g3.jsonl", '{"question": "a?", "relevant_ids": {"d1": "x"}}\n'),
        ("golden_rel_num", "g4.jsonl", '{"question": "a?", "relevant_ids": 5}\n'),
        ("golden_rel_nested", "g5.jsonl", '{"question": "a?", "relevant_ids": [[1]]}\n'),
        ("golden_q_list", "g6.jsonl", '{"question": ["a"], "relevant_ids": ["d1"]}\n'),
        ("golden_tags_map", "g7.jsonl", '{"question": "a?", "relevant_ids": ["d1"], "tags": {"a": 1}}\n'),
        ("golden_not_obj", "g8.jsonl", "[1, 2]\n"),
        ("golden_json_num", "g9.json", "5\n"),
        ("golden_csv_deep", "g10.csv", 'question,relevant_ids\na?,"' + DEEP + '"\n'),
        ("golden_bigint", "g11.jsonl", '{"question": "a?", "relevant_ids": ["d1"], "n": 1' + "0" * 5000 + "}\n"),
    ):
        write(root / name, text)
        cases.append(
            (label, ["convert", "--corpus", str(root / "corpus.jsonl"), "--golden", str(root / name), "--out", "x"])
        )
    for label, flag in (
        ("flag_digits", "tokens:\u0663\u0662"),
        ("flag_huge", "tokens:1000000000"),
        ("flag_nul", "tok\x01:16"),
    ):
        cases.append((label, ["convert", "demo", "--out", str(root / f"o_{label}"), "--chunking", flag]))
    cases.append(("split_traversal_convert", ["convert", "demo", "--split", "../../evil", "--out", str(root / "o_ev")]))
    cases.append(
        ("split_traversal_run", ["run", "--dataset", "demo", "--split", "../qrels/test", "--out", str(root / "o_sp")])
    )
    bomb = ["default: 0.01", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    write(root / "bomb.yaml", "\n".join(bomb) + "\n")
    (root / "ok_res").mkdir()
    (root / "ok_res" / "results.json").write_text("{}")
    cases.append(
        (
            "tolerances_bomb",
            [
                "check",
                "--baseline",
                str(root / "ok_res"),
                "--current",
                str(root / "ok_res"),
                "--tolerances",
                str(root / "bomb.yaml"),
            ],
        )
    )
    hist = root / "h.jsonl"
    hist.write_text('{"schema": "retrieval-harness/night", "time": 5}\n')
    cases.append(("history_time", ["history", str(hist), "--out", str(root / "h")]))
    (root / "res").mkdir()
    (root / "res" / "results.json").write_text('{"schema": [1, 2]}')
    cases.append(("results_odd", ["report", str(root / "res")]))
    (root / "empty.trec").write_text("")
    (root / "qrels.tsv").write_text("q1 0 d1 1\n")
    (root / "other.trec").write_text("q9 Q0 d1 1 1.0 x\n")
    (root / "mine.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    cases.append(
        (
            "compare_disjoint",
            ["compare", str(root / "mine.trec"), str(root / "other.trec"), "--qrels", str(root / "qrels.tsv")],
        )
    )
    return cases


_DRIVER = """
import contextlib, io, json, sys
from harness.cli import main
out = {}
for label, argv in json.load(sys.stdin):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    out[label] = [code, err.getvalue()]
print(json.dumps(out))
"""


def test_malformed_inputs_through_the_cli_exit_2_with_no_bare_exception_names(tmp_path) -> None:
    """Many malformed inputs through the real CLI entry point, in one child process (one interpreter
    start for all of them): each exits 2 with one ``error:`` line, no traceback, no bare exception name."""
    cases = _malformed_cases(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    problems = []
    for label, (code, stderr) in results.items():
        lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("harness: ")]
        ok = code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and not BARE.search(lines[0])
        if not ok or "Traceback" in stderr:
            problems.append(f"{label}: exit {code}: {stderr[-400:]!r}")
    assert not problems, "\n".join(problems)
    assert len(results) == len(cases) >= 30


def test_a_dataset_path_that_is_not_utf8_is_refused_before_work() -> None:
    from harness.model import GoldenDataset, Query
    from harness.validate import check_dataset_usable

    ds = GoldenDataset.build(
        "x", [], [Query(id="q1", text="a")], {"q1": {"d1": 1}}, split="test", source="/data/caf\udce9"
    )
    with pytest.raises(InputError, match="dataset: the dataset's path"):
        check_dataset_usable(ds)


def test_cli_fallback_is_one_line() -> None:
    from pydantic import BaseModel

    from harness.cli.failure import describe

    class M(BaseModel):
        x: int

    try:
        M.model_validate({"x": "nope"})
    except Exception as e:
        text = describe(e)
    assert "\n" not in text and text.startswith("internal error (M: x: Input should be a valid integer")
    assert describe(KeyError("k")) == "internal error (KeyError: 'k'); rerun with --debug for the traceback"
    assert describe(PermissionError(13, "Permission denied", "/x")).startswith("/x: Permission denied")


# ----------------------------------------------------------------------------- properties, hostile text
HOSTILE = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.one_of(HOSTILE, st.lists(st.one_of(HOSTILE, st.integers(), st.booleans(), st.none()), max_size=5)))
def test_tags_are_writable_or_refused(raw) -> None:
    """Whatever a file holds, tags come out as distinct, non-blank, UTF-8-writable strings, or the
    input is refused with a ValueError (never another exception)."""
    from harness.io.tags import parse_tags

    try:
        tags = parse_tags(raw)
    except ValueError as e:
        assert str(e)
        return
    assert len(set(tags)) == len(tags) and all(t.strip() == t and t for t in tags)
    json.dumps(tags, ensure_ascii=False).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        HOSTILE,
        st.builds(lambda n: "[" * n + "]" * n, st.integers(0, 5000)),
        st.builds(lambda n: '{"a":' * n + "1" + "}" * n, st.integers(0, 3000)),
        st.builds(lambda n: "[" * n, st.integers(0, 3000)),
    )
)
def test_json_inputs_raise_only_located_input_errors(text) -> None:
    from harness.io.jsontext import MAX_JSON_DEPTH, depth, loads

    try:
        obj = loads(text, path="f.jsonl", line=3)
    except InputError as e:
        assert str(e).startswith("f.jsonl:3: ")
        return
    assert depth(obj) <= MAX_JSON_DEPTH
