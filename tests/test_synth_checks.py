"""What the synthetic-set commands refuse and what they say, on real ``harness`` processes
(harness.synth.make, folder, bias, render; harness.results.page.synthetic; harness.validate's corpus
check; the endpoint and ``power --all-pairs`` flag checks): each bad input is one located line, exit 2,
with nothing written; every results folder is checked against the set it claims; a run over a synthetic
set says so in the terminal; a share is never rounded to the whole; the documented config exists and
has a baseline; the ``synth bias`` table fits an 80-column terminal."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, one_line_error, run_harness

CONFIG = REPO / "configs" / "synth-bm25-variants.yaml"
_VOCAB = [f"{c}{v}{c2}{v2}" for c in "bcdfghklmnprstvz" for v in "aeiou" for c2 in "lmnrst" for v2 in "aeiou"]


def _corpus(root: Path, n: int = 40, human: int = 12) -> Path:
    """``n`` documents of random made-up words and ``human`` queries judging one document each."""
    rnd = random.Random(7)
    (root / "qrels").mkdir(parents=True)
    docs = []
    for i in range(n):
        words = " ".join(rnd.choice(_VOCAB) for _ in range(rnd.randint(12, 60)))
        docs.append({"_id": f"d{i}", "title": f"title {i}", "text": words.replace(" ", ". ", 2) + "."})
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    qs = [{"_id": f"h{q}", "text": " ".join(docs[(q * 7 + 3) % n]["text"].split()[2:6])} for q in range(human)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    rows = [f"h{q}\td{(q * 7 + 3) % n}\t1" for q in range(human)]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root


def _ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time (unchanged: nothing written)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """A human set, a synthetic set over its corpus, and the documented config run over both."""
    root = tmp_path_factory.mktemp("synthsets")
    human = _corpus(root / "human")
    _ok(run_harness("synth", "generate", "--dataset", human, "--out", root / "syn", "--queries", "20",
                    "--generator", "extract", "--no-progress"))  # fmt: skip
    runs = {}
    for name, ds in (("r_syn", root / "syn"), ("r_human", human)):
        runs[name] = _ok(run_harness("run", "--config", CONFIG, "--dataset", ds, "--out", root / name, "--no-progress"))
    return root, runs


def test_every_results_folder_is_checked_against_the_set_it_claims(sets, tmp_path):
    """``--human-results`` without ``--human``: results of another dataset, or of the synthetic set
    itself, are refused (they gave tau, gaps and a verdict, exit 0); the right folder is taken."""
    root, _ = sets
    _ok(run_harness("run", "--config", CONFIG, "--dataset", "demo", "--out", tmp_path / "r_demo", "--no-progress"))
    before = (root / "syn" / "bias.json").read_bytes()
    bias = ["synth", "bias", root / "syn", "--results", root / "r_syn", "--human-results"]
    one_line_error(run_harness(*bias, tmp_path / "r_demo"), "--human-results", "not in the synthetic set's corpus")
    one_line_error(run_harness(*bias, root / "r_syn"), "--human-results", "synthetic set itself")
    assert (root / "syn" / "bias.json").read_bytes() == before
    _ok(run_harness(*bias, root / "r_human"))


def test_run_and_report_brief_print_the_synthetic_sets_bias_line(sets):
    root, runs = sets
    line = "solved by BM25 at rank 1"
    assert line in runs["r_syn"].stdout and "lexical retrievers may look better" in runs["r_syn"].stdout
    assert line not in runs["r_human"].stdout
    brief = _ok(run_harness("report", root / "r_syn", "--brief"))
    assert line in brief.stdout.splitlines()[0]
    assert line not in _ok(run_harness("report", root / "r_human", "--brief")).stdout


def test_a_share_is_never_rounded_to_the_whole_and_a_hand_edited_bias_json_is_one_line(sets, tmp_path):
    """299 of 300 reads 99.7% (it read 100%) in the terminal and on the page; a bias.json edited into
    another shape is one located line in ``report --html`` (page untouched) and before ``run`` starts."""
    root, _ = sets
    syn = tmp_path / "syn"
    shutil.copytree(root / "syn", syn)
    bias = json.loads((syn / "bias.json").read_text())
    bias["source_rank"] |= {"at1": 299 / 300, "at10": 1 / 1000}
    (syn / "bias.json").write_text(json.dumps(bias))
    proc = _ok(run_harness("run", "--config", CONFIG, "--dataset", syn, "--out", tmp_path / "r", "--no-progress"))
    first = proc.stdout.splitlines()[0]
    assert "99.7% solved by BM25 at rank 1" in first and "0.1% in its top 10" in first, first
    assert "99.7% solved by BM25" in (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    for edit in ({"human": [1]}, {"overlap": [1]}, {"source_rank": {"at1": "abc"}}):
        (syn / "bias.json").write_text(json.dumps(bias | edit))
        field = next(iter(edit))
        snap = _snapshot(tmp_path / "r")
        one_line_error(run_harness("report", tmp_path / "r", "--html"), "bias.json", field)
        assert _snapshot(tmp_path / "r") == snap
        one_line_error(run_harness("run", "--config", CONFIG, "--dataset", syn, "--out", tmp_path / "r2",
                                   "--no-progress"), "bias.json", field)  # fmt: skip
        assert not (tmp_path / "r2").exists()


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["draw"].update(strata="abc"), "draw.strata"),
        (lambda d: d.update(queries=5), "queries"),
        (lambda d: d["queries"][0].update(stratum="x"), "queries[0].stratum"),
        (lambda d: d.update(filtered=[1]), "filtered"),
        (lambda d: d.update(draw=None), "draw"),
    ],
)
def test_a_hand_edited_synth_json_is_one_located_line(sets, tmp_path, edit, field):
    root, _ = sets
    t = tmp_path / "t"
    shutil.copytree(root / "syn", t)
    data = json.loads((t / "synth.json").read_text())
    edit(data)
    (t / "synth.json").write_text(json.dumps(data))
    snap = _snapshot(t)
    one_line_error(run_harness("synth", "bias", t), "synth.json", f"{field}:")
    assert _snapshot(t) == snap


def test_extract_refuses_a_style_and_a_negative_seed_is_refused(sets, tmp_path):
    root, _ = sets
    human = root / "human"
    base = ["synth", "generate", "--dataset", human, "--queries", "3", "--generator", "extract", "--no-progress"]
    one_line_error(run_harness(*base, "--style", "paraphrase", "--out", tmp_path / "a"), "--style", "extract")
    one_line_error(run_harness(*base, "--seed", "-1", "--out", tmp_path / "b"), "--seed", ">= 0")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    snap = _snapshot(root / "r_syn")
    one_line_error(run_harness("power", root / "r_syn", "--all-pairs", "--seed", "-1"), "--seed", ">= 0")
    assert _snapshot(root / "r_syn") == snap


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://127.0.0.1:abc/v1", "http://127.0.0.1:0/v1"])
def test_a_url_port_out_of_range_or_not_a_number_is_one_line(sets, tmp_path, url):
    root, _ = sets
    pool = tmp_path / "pool.csv"
    pool.write_text("query_id,query,doc_id,title,text,retrieved_by,best_rank,grade\nq1,a,d1,,text,bm25,1,\n")
    one_line_error(run_harness("synth", "generate", "--dataset", root / "human", "--queries", "3", "--url", url,
                               "--model", "m", "--no-progress", "--out", tmp_path / "s"), "--url", "port")  # fmt: skip
    one_line_error(run_harness("judge", "auto", pool, "--judge", "http", "--url", url, "--model", "m",
                               "--no-progress", "--out", tmp_path / "j.csv"), "--url", "port")  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pool.csv"]


def test_a_corpus_of_no_documents_is_one_line_before_any_work(tmp_path):
    """bm25 failed with a ValueError (exit 1) and dense printed a table of zeros (exit 0)."""
    empty = tmp_path / "empty"
    (empty / "qrels").mkdir(parents=True)
    (empty / "corpus.jsonl").write_text("")
    (empty / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "what is it"}) + "\n")
    (empty / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    kinds = ["bm25"]
    try:
        import sentence_transformers  # noqa: F401

        kinds.append("dense")
    except ImportError:
        pass
    for kind in kinds:
        cfg = tmp_path / f"{kind}.yaml"
        cfg.write_text(f"metrics: [ndcg@10]\ndepth: 10\nlatency_queries: 0\nwarmup_queries: 0\n"
                       f"retrievers:\n  {kind}: {{type: {kind}}}\n")  # fmt: skip
        proc = run_harness("run", "--config", cfg, "--dataset", empty, "--out", tmp_path / f"r_{kind}", "--no-progress")
        one_line_error(proc, "corpus.jsonl", "no documents", repr(kind))
        assert not (tmp_path / f"r_{kind}").exists()


def test_the_documented_config_exists_and_has_a_baseline(sets):
    """docs/synth.md named a config that does not exist; the synthetic-set config had no baseline, so
    no significance markers and nothing for ``harness power`` to size."""
    root, runs = sets
    doc = (REPO / "docs" / "synth.md").read_text(encoding="utf-8")
    named = re.findall(r"--config (\S+)", doc)
    assert named and all((REPO / c).is_file() for c in named), named
    out = runs["r_syn"].stdout
    assert "Against the baseline (bm25)" in out and "Power vs 'bm25'" in out, out[-3000:]
    power = _ok(run_harness("power", root / "r_syn"))
    assert "no baseline" not in (power.stdout + power.stderr).lower()


def test_the_synth_bias_table_fits_an_80_column_terminal(sets):
    root, _ = sets
    proc = _ok(run_harness("synth", "bias", root / "syn", "--results", root / "r_syn", "--human-results",
                           root / "r_human", env={"COLUMNS": "80"}))  # fmt: skip
    names = ("bm25", "bm25_robertson", "bm25_nostem", "bm25_nostop", "retriever", "ndcg@10", "mrr", "hit_rate")
    table = [ln for ln in proc.stdout.splitlines() if ln.startswith(names)]
    assert len(table) >= 4 * 5, proc.stdout
    assert max(len(ln) for ln in table) <= 80, max(table, key=len)
