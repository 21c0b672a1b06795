"""``harness export``: every format read back by the tool it is for (mteb's ``TaskResult.from_disk``,
ranx's ``Run``/``Qrels.from_file``, repro_eval's way of reading an ir_metadata block), values equal
to the folder's, and a folder that is not whole refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.export.ir_metadata import END, START
from harness.export.mteb import task_name
from harness.io.trec import read_qrels, read_run
from harness.results import Results

INPUTS = Path(__file__).parent / "data" / "golden_outputs" / "inputs"


@pytest.fixture
def folder(tmp_path) -> Path:
    """A real results folder (three BM25 runs on the demo set), renamed SciFact to check MTEB's names."""
    dst = tmp_path / "runA"
    shutil.copytree(INPUTS / "runA", dst)
    return dst


@pytest.fixture
def suite(tmp_path) -> Path:
    dst = tmp_path / "suite"
    shutil.copytree(INPUTS / "suite", dst)
    return dst


def export(src: Path, fmt: str, out: Path, *extra: str) -> int:
    return main(["export", str(src), "--to", fmt, "--out", str(out), *extra])


def test_mteb_files_are_read_by_mteb_with_the_folders_values(folder, tmp_path, capsys):
    mteb = pytest.importorskip("mteb")
    out = tmp_path / "mteb"
    assert export(folder, "mteb", out) == 0
    printed = capsys.readouterr().out
    results = Results.open(folder)
    tasks = sorted(p for p in out.rglob("*.json") if p.name != "model_meta.json")
    assert len(tasks) == 3 and all(str(p) in printed for p in tasks)
    for path in tasks:
        got = mteb.TaskResult.from_disk(path)
        retriever = path.parts[-3]
        assert got.task_name == "demo" and got.dataset_revision == results.manifest["dataset"]["fingerprint"]
        row = got.scores["test"][0]
        for metric, value in results.summary[retriever].items():
            assert row[metric.replace("@", "_at_")] == value  # unrounded
        assert row["main_score"] == results.summary[retriever]["ndcg@10"]
        meta = json.loads((path.parent / "model_meta.json").read_text())
        assert meta["name"] == retriever and meta["revision"] == path.parent.name


def test_mteb_names_beir_tasks_and_a_suite_writes_one_revision_per_retriever(suite, tmp_path):
    mteb = pytest.importorskip("mteb")
    assert [task_name(n) for n in ("scifact", "beir/nfcorpus", "irds:beir/scifact/test", "own")] == [
        "SciFact", "NFCorpus", "SciFact", "own"
    ]  # fmt: skip
    out = tmp_path / "mteb"
    assert export(suite, "mteb", out) == 0
    for retriever in ("bm25", "bm25_k12"):
        (revision,) = (out / retriever).iterdir()  # the same config on both datasets: one revision
        names = sorted(p.name for p in revision.iterdir())
        assert names == ["demo.json", "model_meta.json", "small.json"]
        for p in revision.glob("*.json"):
            if p.name != "model_meta.json":
                assert mteb.TaskResult.from_disk(p).scores


def test_ranx_reads_the_runs_with_equal_scores_and_the_qrels(folder, tmp_path):
    ranx = pytest.importorskip("ranx")
    out = tmp_path / "ranx"
    assert export(folder, "ranx", out) == 0
    results = Results.open(folder)
    qrels = ranx.Qrels.from_file(str(out / "qrels.json")).to_dict()
    assert qrels == {q: dict(d) for q, d in read_qrels(folder / "qrels.tsv").items() if d}
    for name, ref in results.run_files.items():
        mine = read_run(folder / ref["file"], name=name).to_dict()
        theirs = ranx.Run.from_file(str(out / f"{name}.json")).to_dict()
        assert theirs.keys() == mine.keys()
        for q, docs in mine.items():
            assert theirs[q].keys() == docs.keys()
            assert all(abs(theirs[q][d] - s) <= 1e-12 for d, s in docs.items())


def test_ir_metadata_blocks_parse_as_yaml_and_the_run_after_them_is_unchanged(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/search")
    out = tmp_path / "irm"
    assert export(folder, "ir-metadata", out, "--actor", "search team") == 0
    results = Results.open(folder)
    for name, ref in results.run_files.items():
        original = (folder / ref["file"]).read_bytes()
        text = (out / Path(ref["file"]).name).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        assert lines[0].strip("\n") == START
        end = next(i for i, line in enumerate(lines) if line.strip("\n") == END)
        meta = yaml.safe_load("".join(line.strip("#") for line in lines[1:end]))  # as repro_eval reads it
        assert "".join(lines[end + 1 :]).encode("utf-8") == original
        assert {"tag", "actor", "research goal", "platform", "implementation", "method", "data"} <= set(meta)
        assert meta["actor"]["team"] == "search team"
        assert meta["implementation"]["source"] == {
            "repository": "https://github.com/acme/search",
            "commit": results.manifest["git"]["commit"],
            "dirty": False,
        }
        assert meta["method"]["retrieval"][0]["name"] == name
        assert meta["method"]["retrieval"][0]["parameters"]["k1"] in (0.9, 1.2)
        assert meta["data"]["test collection"]["name"] == "demo"
        assert "numpy==2.4.6" in meta["platform"]["software"]["libraries"]["python"]
        assert meta["tag"] == original.split()[5].decode()


def test_github_benchmark_is_one_entry_per_retriever_and_metric(folder, suite, tmp_path):
    out = tmp_path / "bench.json"
    assert export(folder, "github-benchmark", out) == 0
    entries = json.loads(out.read_text())
    results = Results.open(folder)
    assert len(entries) == 9
    for e in entries:
        retriever, metric = e["name"].split(" ")
        assert e["value"] == results.summary[retriever][metric] and e["unit"] == metric
        lo, hi = results.intervals[retriever][metric]
        assert e["range"] == f"{lo!r} to {hi!r} (bootstrap CI)"
    assert export(folder, "github-benchmark", out) == 0  # its own file is replaced
    assert export(suite, "github-benchmark", out) == 0
    assert {e["name"].split(" ")[0] for e in json.loads(out.read_text())} == {"[support]", "[small]"}


def test_a_changed_run_file_or_an_interrupted_run_is_refused_unless_allowed(folder, tmp_path, capsys):
    run = next((folder / "runs").glob("*.trec"))
    run.write_text(run.read_text().replace("Q0", "Q0 ", 1))
    assert export(folder, "ranx", tmp_path / "a") == 2
    assert "was changed after the run" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert export(folder, "ranx", tmp_path / "b", "--allow-incomplete") == 0
    data = json.loads((folder / "results.json").read_text())
    data["complete"] = False
    (folder / "results.json").write_text(json.dumps(data))
    assert export(folder, "github-benchmark", tmp_path / "c.json", "--allow-incomplete") == 0
    assert export(folder, "github-benchmark", tmp_path / "d.json") == 2
    assert "incomplete results" in capsys.readouterr().err and not (tmp_path / "d.json").exists()


def test_an_export_never_overwrites_a_users_files(folder, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert export(folder, "ranx", mine) == 2
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    users = tmp_path / "bench.json"
    users.write_text('{"mine": 1}')
    assert export(folder, "github-benchmark", users) == 2 and users.read_text() == '{"mine": 1}'
    assert export(folder, "ranx", folder / "ranx") == 2  # never inside the folder it reads
    out = tmp_path / "ranx"
    assert export(folder, "ranx", out) == 0 and export(folder, "ranx", out) == 0  # its own folder: replaced
    assert "qrels.json" in capsys.readouterr().out


def test_two_names_made_alike_are_refused_not_one_dropped(suite, tmp_path, capsys):
    """``support`` and ``small`` both called SciFact in their manifests: one MTEB task file each is
    impossible, so the export says so (exit 2) and writes nothing."""
    for d in ("support", "small"):
        path = suite / d / "results.json"
        data = json.loads(path.read_text())
        data["manifest"]["dataset"]["name"] = "scifact" if d == "support" else "beir/scifact"
        path.write_text(json.dumps(data))
    assert export(suite, "mteb", tmp_path / "mteb") == 2
    assert "SciFact.json" in capsys.readouterr().err and not (tmp_path / "mteb").exists()
