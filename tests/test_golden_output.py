"""The command line's output, byte for byte (harness.cli, in process): about twenty commands over
inputs frozen once (tests/data/golden_outputs/inputs: two demo runs of three BM25 rows, the committed
nightly baseline, the schema-1 fixture, a two-dataset suite, a graded pool, a synthetic set, a stream
config, OTLP spans), every
stdout and every file a command writes compared with the outputs the code gave when they were frozen
(tests/data/golden_outputs/expected).

A refactor that moves code between modules must not change a byte of what a user reads. The clock is
frozen (:mod:`harness.clock`); ``harness run`` and ``harness stream`` (and the report of a stream) are
the commands whose figures are not all fixed: their timings (seconds, latencies, memory, write rates,
the page that plots them) are masked, their rankings and scores are not.

Regenerate (only when an output is meant to change, and say why in the commit):
``python tests/test_golden_output.py --expected tests/data/golden_outputs/expected``; the inputs
themselves were made once with ``--inputs`` and are never regenerated.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent / "data" / "golden_outputs"
INPUTS, EXPECTED = HERE / "inputs", HERE / "expected"
FROZEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
#: files above this size (and pages) are compared by sha256 (expected/<case>/<file>.sha256), to keep the repo small
BIG = 24_000

RUN_CONFIG = """dataset: demo
metrics: [ndcg@10, mrr@10, recall@10]
depth: 10
baseline: bm25
latency_queries: 2
warmup_queries: 0
stats: {{bootstrap: 200, permutations: 500}}
retrievers:
  bm25: {{type: bm25{a}}}
  bm25_k12: {{type: bm25, k1: 1.2{b}}}
  bm25_b5: {{type: bm25, b: 0.5{c}}}
"""

SUITE_CONFIG = """metrics: [ndcg@10, recall@10]
depth: 10
baseline: bm25
latency_queries: 2
warmup_queries: 0
stats: {bootstrap: 100, permutations: 200}
datasets:
  support: demo
  small: {path: small, split: test}
retrievers:
  bm25: {type: bm25}
  bm25_k12: {type: bm25, k1: 1.2}
"""

#: (case, argv, files the command writes, relative to the work folder). Paths are relative: the
#: commands run in a copy of the inputs, so what they record of their command line is fixed too.
CASES: list[tuple[str, list[str], list[str]]] = [
    ("run", ["run", "--config", "a.yaml", "--out", "fresh", "--no-progress"],
     ["fresh/results.json", "fresh/table.md", "fresh/table.csv", "fresh/qrels.tsv",
      "fresh/runs/bm25-*.trec", "fresh/runs/bm25-*.json", "fresh/runs/bm25_k12-*.trec"]),
    ("report_write", ["report", "runA", "--write"],
     ["runA/table.md", "runA/table.csv", "runA/table.html", "runA/table.tex", "runA/report.html"]),
    ("report_worst", ["report", "runA", "--worst", "3"], []),
    ("evaluate_json", ["evaluate", "--run", "runA/runs/bm25_k12-*.trec", "--qrels", "runA/qrels.tsv",
                       "--metrics", "ndcg@10,mrr@10", "--format", "json", "--per-query"], []),
    ("evaluate_csv", ["evaluate", "--run", "runB/runs/bm25_b5-*.trec", "--qrels", "runB/qrels.tsv",
                      "--metrics", "ndcg@10", "--format", "csv", "--per-query"], []),
    ("evaluate_table", ["evaluate", "--run", "runA/runs/bm25-*.trec", "--qrels", "runA/qrels.tsv",
                        "--metrics", "ndcg@10,recall@10"], []),
    ("compare", ["compare", "runA/runs/bm25-*.trec", "runA/runs/bm25_b5-*.trec", "--qrels", "runA/qrels.tsv",
                 "--metrics", "ndcg@10,mrr@10", "--bootstrap", "200", "--permutations", "500", "--out", "cmp"],
     ["cmp/results.json", "cmp/table.md", "cmp/table.csv"]),
    ("check_json", ["check", "--baseline", "runA", "--current", "runB", "--format", "json",
                    "--summary", "out/check.md", "--junit", "out/check.xml", "--history", "out/history.jsonl",
                    "--permutations", "500"],
     ["out/check.md", "out/check.xml", "out/history.jsonl"]),
    ("check_text", ["check", "--baseline", "runA", "--current", "runB", "--permutations", "500",
                    "--tolerance", "0.001"], []),
    ("check_nightly", ["check", "--baseline", "nightly.json", "--current", "runA", "--allow-dataset-change",
                       "--permutations", "300"], []),
    ("check_v1", ["check", "--baseline", "v1_results", "--current", "v1_results", "--format", "json"], []),
    ("check_error", ["check", "--baseline", "runA", "--current", "missing", "--summary", "out/err.md",
                     "--junit", "out/err.xml"], ["out/err.md", "out/err.xml"]),
    ("power_json", ["power", "runA", "--format", "json"], []),
    ("power_text", ["power", "runB"], []),
    ("power_pairs_json", ["power", "runA", "--all-pairs", "--format", "json"], []),
    ("power_pairs_text", ["power", "runB", "--all-pairs"], []),
    ("baseline_save", ["baseline", "save", "runA", "--to", "saved/base.json"], ["saved/base.json"]),
    ("baseline_check", ["check", "--baseline", "saved/base.json", "--current", "runB", "--format", "json",
                        "--permutations", "500"], []),
    ("suite_check", ["check", "--baseline", "suite", "--current", "suite", "--format", "json",
                     "--summary", "out/suite.md", "--permutations", "200"], ["out/suite.md"]),
    ("suite_check_text", ["check", "--baseline", "suite", "--current", "suite", "--permutations", "200"], []),
    ("judge_agree", ["judge", "agree", "people.csv", "judge.csv", "--results", "runA",
                     "--metrics", "ndcg@10"], []),
    ("judge_agree_json", ["judge", "agree", "people.csv", "judge.csv", "--format", "json"], []),
    ("synth_bias", ["synth", "bias", "synth", "--human", "small", "--format", "json"], ["synth/bias.json"]),
    ("synth_bias_text", ["synth", "bias", "synth"], []),
    ("stream", ["stream", "--config", "stream.yaml", "--out", "streamed", "--no-progress"],
     ["streamed/stream.json", "streamed/runbook.jsonl", "streamed/runs/bm25-cp0.trec", "streamed/runs/bm25-cp3.trec"]),
    ("report_stream", ["report", "streamed"], []),
    ("traces_import", ["traces", "import", "spans.jsonl", "--out", "traced", "--no-progress"],
     ["traced/traces.json", "traced/queries.jsonl", "traced/corpus.jsonl", "traced/runs/production.trec"]),
]  # fmt: skip

#: the cases whose figures include timings (masked: :data:`_MASKED_KEYS` in their JSON, every figure in their tables)
_TIMED = ("run", "stream", "report_stream")

#: keys of ``harness run``'s JSON whose values are timings or the machine, not results
_MASKED_KEYS = re.compile(
    r"seconds|latenc|_s$|_ms$|rss|qps|cache_hit|^versions$|^machine$|^git$|^write_rate$|^report\.html$"
)


#: a manifest a command writes records the checkout, its libraries and the machine: masked
_GIT = re.compile(r"^(git|versions|machine)$")


def _mask_json(obj: object, keys: re.Pattern[str] = _MASKED_KEYS) -> object:
    if isinstance(obj, dict):
        return {k: "<masked>" if keys.search(k) else _mask_json(v, keys) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mask_json(v, keys) for v in obj]
    return obj


def _mask_table(text: str) -> str:
    """A table with timing columns: every figure a ``#``, every run of blanks or rules one character
    (a column's width follows its widest figure)."""
    text = re.sub(r"\d[\d,.]*(e-?\d+)?", "#", text.replace("**", ""))
    text = re.sub(r"[ ]+", " ", text)
    return re.sub(r"([─━-])\1+", r"\1", text)


class _FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        return FROZEN if tz is not None else FROZEN.replace(tzinfo=None)


@contextlib.contextmanager
def frozen_clock() -> Iterator[None]:
    """Every stamp a command writes at :data:`FROZEN`: through :mod:`harness.clock` where the code
    has it, else (the code the expected outputs were frozen from) through each module's ``datetime``."""
    undo: list[tuple[object, str, object]] = []

    def patch(obj: object, name: str, value: object) -> None:
        undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    try:
        try:
            clock = importlib.import_module("harness.clock")
            patch(clock, "now", lambda: FROZEN)
        except ModuleNotFoundError:
            pass
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            if not name.startswith("harness"):
                continue
            if getattr(mod, "datetime", None) is datetime:
                patch(mod, "datetime", _FrozenDatetime)
            if getattr(mod, "_dt", None) is not None and getattr(mod._dt, "datetime", None) is datetime:
                patch(mod, "_dt", SimpleNamespace(datetime=_FrozenDatetime, timezone=timezone))
        yield
    finally:
        for obj, name, value in reversed(undo):
            setattr(obj, name, value)


def _import_everything() -> None:
    """The modules the commands import lazily, imported first: :func:`frozen_clock` patches loaded ones."""
    import pkgutil

    import harness

    for info in pkgutil.walk_packages(harness.__path__, "harness."):
        skip = ("__main__", ".page_server", "ray", "training", "vectordb", "load.", ".server")
        if any(part in info.name for part in skip):
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(info.name)


def _expand(argv: list[str]) -> list[str]:
    out = []
    for a in argv:
        if "*" in a:
            hits = sorted(Path().glob(a))
            assert len(hits) == 1, (a, hits)
            a = str(hits[0])
        out.append(a)
    return out


def _call(argv: list[str]) -> tuple[int, str, str]:
    from harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_argv = sys.argv
    sys.argv = ["harness", *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), frozen_clock():
            try:
                code = main(argv)
            except SystemExit as e:  # argparse refusing a flag
                code = e.code if isinstance(e.code, int) else 2
    finally:
        sys.argv = old_argv
    return code, out.getvalue(), err.getvalue()


def _normalize(text: str, work: Path, repo: Path) -> str:
    """The work folder and the checkout as names."""
    return text.replace(str(work.resolve()), "<WORK>").replace(str(work), "<WORK>").replace(str(repo), "<REPO>")


def produce(work: Path) -> dict[str, bytes]:
    """Every case's stdout, exit code and written files, run in ``work`` (a copy of the inputs)."""
    import harness

    repo = Path(harness.__file__).resolve().parent.parent
    _import_everything()
    got: dict[str, bytes] = {}
    cwd = os.getcwd()
    os.chdir(work)
    env = {k: os.environ.get(k) for k in ("COLUMNS", "LINES", "NO_COLOR", "TERM", "HARNESS_CACHE_DIR")}
    os.environ.update(COLUMNS="120", LINES="50", NO_COLOR="1", TERM="dumb", HARNESS_CACHE_DIR=str(work / "cache"))
    try:
        for case, argv, files in CASES:
            code, out, err = _call(_expand(argv))
            out = _normalize(out, work, repo)
            if case in _TIMED:
                out = _mask_table(out)
            got[f"{case}/stdout"] = f"exit {code}\n{out}".encode()
            got[f"{case}/stderr"] = _normalize(err, work, repo).encode()
            for pattern in files:
                hits = sorted(Path().glob(pattern))
                assert len(hits) <= 1, (pattern, hits)
                key = f"{case}/{pattern.replace('*', 'X').replace('/', '__')}"
                if not hits:
                    got[key] = b"<missing>\n"
                    continue
                data = _normalize(hits[0].read_text(encoding="utf-8"), work, repo)
                if case in _TIMED and hits[0].suffix == ".json":
                    data = json.dumps(_mask_json(json.loads(data)), indent=1) + "\n"
                elif case == "compare" and hits[0].suffix == ".json":
                    data = json.dumps(_mask_json(json.loads(data), _GIT), indent=1) + "\n"
                elif case == "run" and hits[0].suffix in (".md", ".csv"):
                    data = _mask_table(data)
                got[key] = data.encode()
    finally:
        os.chdir(cwd)
        os.environ.update({k: v for k, v in env.items() if v is not None})
        for k in [k for k, v in env.items() if v is None]:
            del os.environ[k]
    return got


def _work_copy(tmp: Path) -> Path:
    work = tmp / "work"
    shutil.copytree(INPUTS, work)
    shutil.copytree(HERE.parent / "v1_results", work / "v1_results")  # the schema-1 fixture, where it lives
    return work


def _expected() -> dict[str, bytes]:
    out = {}
    for p in sorted(EXPECTED.rglob("*")):
        if p.is_file():
            key = str(p.relative_to(EXPECTED))
            out[key] = p.read_bytes()
    return out


def _as_stored(got: dict[str, bytes]) -> dict[str, bytes]:
    """Large outputs and pages (their style sheet is the renderer's own text) as their sha256."""
    big = {k for k, v in got.items() if len(v) > BIG or k.endswith(".html")}
    return {
        (f"{k}.sha256" if k in big else k): (hashlib.sha256(v).hexdigest().encode() + b"\n" if k in big else v)
        for k, v in got.items()
    }


@pytest.mark.slow
def test_every_output_is_byte_identical_to_the_frozen_one(tmp_path):
    pytest.importorskip("matplotlib")
    got = _as_stored(produce(_work_copy(tmp_path)))
    want = _expected()
    assert sorted(got) == sorted(want)
    diff = [k for k in want if got[k] != want[k]]
    for k in diff[:3]:
        import difflib

        lines = difflib.unified_diff(
            want[k].decode(errors="replace").splitlines(), got[k].decode(errors="replace").splitlines(), lineterm=""
        )
        print(f"--- {k}\n" + "\n".join(list(lines)[:40]))
    assert not diff, diff


def test_the_clock_is_one_helper():
    """Every stamp a command writes comes from harness.clock (the test above freezes it there)."""
    repo = Path(__file__).resolve().parent.parent
    hits = [
        str(p.relative_to(repo))
        for p in (repo / "harness").rglob("*.py")
        if p.name != "clock.py" and re.search(r"datetime\.now\(|datetime\.utcnow\(", p.read_text(encoding="utf-8"))
    ]
    assert not hits, hits


# ----------------------------------------------------------------------------- making the inputs, once


def make_inputs(dest: Path) -> None:  # pragma: no cover - run once, by hand, at the commit they freeze
    """The frozen inputs (see the module docstring): made with the code of that day, never again."""
    from harness.datasets import load_dataset

    repo = Path(importlib.import_module("harness").__file__).resolve().parent.parent
    dest.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(dest)
    try:
        (dest / "a.yaml").write_text(RUN_CONFIG.format(a="", b="", c=""))
        (dest / "b.yaml").write_text(RUN_CONFIG.format(a=", k1: 1.5", b=", b: 0.75", c=", k1: 0.5"))
        for name, cfg in (("runA", "a.yaml"), ("runB", "b.yaml")):
            assert _call(["run", "--config", cfg, "--out", name, "--no-progress"])[0] == 0
            for junk in [*Path(name).glob("*.png"), Path(name) / "report.html"]:
                junk.unlink(missing_ok=True)
        shutil.copy(repo / "results" / "baselines" / "demo" / "nightly.json", "nightly.json")
        demo = load_dataset("demo")
        # a second dataset for the suite: the demo's first 20 queries and the documents they judge
        small = Path("small")
        (small / "qrels").mkdir(parents=True)
        queries = demo.queries[:20]
        judged = {d for q in queries for d in demo.qrels.get(q.id, {})}
        with open(small / "corpus.jsonl", "w", encoding="utf-8") as fh:
            for i, doc in enumerate(demo.corpus):
                if doc.id in judged or i < 40:
                    fh.write(json.dumps({"_id": doc.id, "title": doc.title, "text": doc.text}) + "\n")
        with open(small / "queries.jsonl", "w", encoding="utf-8") as fh:
            for q in queries:
                fh.write(json.dumps({"_id": q.id, "text": q.text}) + "\n")
        with open(small / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for q in queries:
                for d, g in demo.qrels.get(q.id, {}).items():
                    fh.write(f"{q.id}\t{d}\t{g}\n")
        Path("suite.yaml").write_text(SUITE_CONFIG)
        assert _call(["run", "--config", "suite.yaml", "--out", "suite", "--no-progress"])[0] == 0
        for junk in [*Path("suite").rglob("*.png"), *Path("suite").rglob("report.html")]:
            junk.unlink()
        # a graded pool: the pool of runA's top 5, graded by a fixed rule (a stand-in for a person)
        assert _call(["pool", "runA", "--depth", "5", "--out", "pool.csv"])[0] == 0
        import csv

        with open("pool.csv", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        for name, salt in (("people.csv", ""), ("judge.csv", "judge")):  # two graders that mostly agree
            with open(name, "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=["query_id", "doc_id", "grade"], extrasaction="ignore")
                w.writeheader()
                for i, r in enumerate(rows):
                    key = f"{r['query_id']}/{r['doc_id']}{salt if i % 3 == 0 else ''}"
                    r["grade"] = str(int(hashlib.sha256(key.encode()).hexdigest(), 16) % 4) if i % 7 else ""
                    w.writerow(r)
        Path("pool.csv").unlink()
        assert _call(["synth", "generate", "--dataset", "small", "--out", "synth", "--queries", "8",
                      "--generator", "extract", "--no-progress"])[0] == 0  # fmt: skip
    finally:
        os.chdir(cwd)
    # absolute paths the runs recorded: the checkout and this folder, neither of which lasts
    for p in dest.rglob("*.json"):
        text = p.read_text(encoding="utf-8")
        fixed = text.replace(str(repo), "/frozen/checkout").replace(str(dest), "/frozen/inputs")
        if fixed != text:
            p.write_text(fixed, encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    import argparse

    ap = argparse.ArgumentParser(description="make the frozen inputs (once) or the expected outputs")
    ap.add_argument("--inputs", type=Path)
    ap.add_argument("--expected", type=Path)
    a = ap.parse_args()
    if a.inputs:
        make_inputs(a.inputs.resolve())
    if a.expected:
        with tempfile.TemporaryDirectory() as tmp:
            produced = _as_stored(produce(_work_copy(Path(tmp))))
        shutil.rmtree(a.expected, ignore_errors=True)
        for key, data in produced.items():
            (a.expected / key).parent.mkdir(parents=True, exist_ok=True)
            (a.expected / key).write_bytes(data)
        print(f"{len(produced)} outputs written to {a.expected}")


# ----------------------------------------------------------------------------- hand-edited files: one located line


def _drop(path: Path, *keys: str | int) -> None:
    """Remove the key at ``keys`` (a path into the JSON) from the file."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    obj = doc
    for k in keys[:-1]:
        obj = obj[k]
    del obj[keys[-1]]
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")


def _set(path: Path, value: object, *keys: str | int) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    obj = doc
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


_CP = ("retrievers", "bm25", "checkpoints", 1)
#: (case, the command that writes the folder, the file edited, the edit, the command that reads it, the
#: key the one line names: None for truncated JSON, where the file is enough)
HOSTILE: list[tuple[str, list[str] | None, str, object, list[str], str | None]] = [
    ("stream_key_missing", ["stream", "--config", "stream.yaml", "--out", "s"], "s/stream.json",
     lambda p: _drop(p, *_CP, "metrics"), ["report", "s"], "metrics"),
    ("stream_wrong_type", ["stream", "--config", "stream.yaml", "--out", "s"], "s/stream.json",
     lambda p: _set(p, "many", *_CP, "visible"), ["report", "s"], "visible"),
    ("stream_truncated", ["stream", "--config", "stream.yaml", "--out", "s"], "s/stream.json", _truncate,
     ["report", "s"], None),
    ("traces_key_missing", ["traces", "import", "spans.jsonl", "--out", "t", "--no-progress"], "t/traces.json",
     lambda p: _drop(p, "queries"), ["traces", "pool", "t", "--out", "pool.csv"], "queries"),
    ("traces_wrong_type", ["traces", "import", "spans.jsonl", "--out", "t", "--no-progress"], "t/traces.json",
     lambda p: _set(p, [1], "spans"), ["traces", "pool", "t", "--out", "pool.csv"], "spans"),
    ("traces_truncated", ["traces", "import", "spans.jsonl", "--out", "t", "--no-progress"], "t/traces.json",
     _truncate, ["traces", "pool", "t", "--out", "pool.csv"], None),
    ("synth_key_missing", None, "synth/synth.json", lambda p: _drop(p, "draw"), ["synth", "bias", "synth"], "draw"),
    ("synth_wrong_type", None, "synth/synth.json", lambda p: _set(p, "all", "queries"), ["synth", "bias", "synth"],
     "queries"),
    ("synth_truncated", None, "synth/synth.json", _truncate, ["synth", "bias", "synth"], None),
    ("results_key_missing", None, "runA/results.json", lambda p: _drop(p, "summary"), ["report", "runA"], "summary"),
    ("results_wrong_type", None, "runA/results.json", lambda p: _set(p, "yes", "complete"), ["report", "runA"],
     "complete"),
    ("results_truncated", None, "runA/results.json", _truncate, ["report", "runA"], None),
]  # fmt: skip


@pytest.mark.parametrize("case", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_a_hand_edited_file_is_one_located_line_and_exit_2(tmp_path, case):
    _, make, rel, edit, argv, key = case
    work = _work_copy(tmp_path)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        if make is not None:
            assert _call(make)[0] == 0
        edit(Path(rel))  # type: ignore[operator]
        code, _, err = _call(argv)
    finally:
        os.chdir(cwd)
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert code == 2, err
    assert len(lines) == 1 and "internal error" not in lines[0], err
    assert Path(rel).name in lines[0], lines[0]
    if key is not None:
        assert key in lines[0], lines[0]


# --------------------------------------------------------------------- every written file: read, write, same bytes


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A copy of the inputs where each folder-writing command has written its folder once."""
    work = _work_copy(tmp_path_factory.mktemp("written"))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for argv in (
            ["stream", "--config", "stream.yaml", "--out", "streamed"],
            ["traces", "import", "spans.jsonl", "--out", "traced", "--no-progress"],
            ["synth", "generate", "--dataset", "small", "--out", "made", "--queries", "6", "--generator", "extract",
             "--no-progress"],
            ["synth", "bias", "made", "--human", "small"],
            ["run", "--config", "a.yaml", "--out", "ran", "--no-progress"],
        ):  # fmt: skip
            assert _call(argv)[0] == 0, argv
    finally:
        os.chdir(cwd)
    return work


def _round_trips():
    from harness.results import Results
    from harness.results.synthetic_set import BiasFigures, SynthFile
    from harness.stream import StreamResults
    from harness.traces.folder import TracesFile

    return [
        ("streamed/stream.json", lambda p: StreamResults.read(p.parent)),
        ("traced/traces.json", lambda p: TracesFile.read(p.parent)),
        ("made/synth.json", lambda p: SynthFile.read(p.parent)),
        ("made/bias.json", BiasFigures.read),
        ("ran/results.json", Results.load),
    ]


@pytest.mark.parametrize("rel", ["streamed/stream.json", "traced/traces.json", "made/synth.json", "made/bias.json",
                                 "ran/results.json"])  # fmt: skip
def test_every_written_file_reads_back_and_writes_the_same_bytes(written, tmp_path, rel):
    """``Model.read(p)`` then its write gives the file's bytes, key order kept; and it carries the
    common envelope (``schema: retrieval-harness/<kind>``, an integer ``schema_version``)."""
    from harness.io import atomic

    read = dict(_round_trips())[rel]
    path = written / rel
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema"] == f"retrieval-harness/{Path(rel).stem}", doc["schema"]
    assert type(doc["schema_version"]) is int
    obj = read(path)
    again = tmp_path / Path(rel).name
    atomic.write_json(again, obj.to_json())
    assert again.read_bytes() == path.read_bytes()
