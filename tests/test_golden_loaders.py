"""Golden sets and corpora in the shapes RAG teams hold them (:mod:`harness.io`): every format loads
to the same GoldenDataset, and every misfit is an InputError naming file, line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.datasets import load_dataset, load_from_config, load_golden
from harness.errors import InputError
from harness.io.corpus import read_any_corpus, text_file_id
from harness.io.golden import read_golden

DATA = Path(__file__).parent / "data" / "golden"
NOTES = DATA / "notes"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- corpora


def test_text_folder_one_document_per_file_id_is_relative_path():
    docs = read_any_corpus(NOTES)
    ids = [d.id for d in docs]
    assert ids == ["espresso.md", "guides/bike%20chain.md", "guides/plants.md", "tea.txt"]
    by_id = {d.id: d for d in docs}
    # exact file content: CRLF kept, non-ASCII and emoji intact
    assert by_id["guides/bike%20chain.md"].text == (NOTES / "guides" / "bike chain.md").read_bytes().decode()
    assert "\r\n" in by_id["guides/bike%20chain.md"].text
    assert "🌿" in by_id["guides/plants.md"].text
    assert by_id["guides/bike%20chain.md"].metadata["path"] == "guides/bike chain.md"


def test_text_file_id_is_reversible_for_whitespace_and_percent():
    from urllib.parse import unquote

    for name in ["a b.md", "x%20y.md", "tab\there.txt", "ünï/cödé.md"]:
        ident = text_file_id(Path(name))
        assert not any(c.isspace() for c in ident)
        assert unquote(ident) == Path(name).as_posix()


def test_text_folder_skips_hidden_and_other_suffixes(tmp_path):
    write(tmp_path / "a.md", "alpha")
    write(tmp_path / "b.pdf", "not text")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".git" / "c.md", "hidden")
    assert [d.id for d in read_any_corpus(tmp_path)] == ["a.md"]


def test_text_folder_bad_utf8_names_file_and_line(tmp_path):
    (tmp_path / "bad.md").write_bytes(b"fine\nstill fine\n\xff broken\n")
    with pytest.raises(InputError) as e:
        read_any_corpus(tmp_path)
    assert e.value.path.endswith("bad.md") and e.value.line == 3


def test_corpus_jsonl_accepts_id_or__id(tmp_path):
    p = write(tmp_path / "c.jsonl", '{"id": "a", "text": "x"}\n{"_id": "b", "text": "y", "title": "T"}\n')
    docs = read_any_corpus(p)
    assert [(d.id, d.title) for d in docs] == [("a", ""), ("b", "T")]


def test_corpus_parquet_and_hf_folder_equal_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"_id": "a", "title": "A", "text": "alpha text", "lang": "en"}, {"_id": "b", "title": None, "text": "beta"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet")
    docs = read_any_corpus(tmp_path / "c.parquet")
    assert [(d.id, d.title, d.text) for d in docs] == [("a", "A", "alpha text"), ("b", "", "beta")]
    assert docs[0].metadata == {"lang": "en"}

    import datasets

    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "hf"))
    hf_docs = read_any_corpus(tmp_path / "hf")
    assert [(d.id, d.title, d.text) for d in hf_docs] == [(d.id, d.title, d.text) for d in docs]


def test_corpus_parquet_duplicate_id_names_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]), tmp_path / "c.parquet")
    with pytest.raises(InputError, match="duplicate document id 'a'") as e:
        read_any_corpus(tmp_path / "c.parquet")
    assert e.value.line == 2 and e.value.field == "id"


# ---------------------------------------------------------------- golden sets


def test_csv_question_answer_over_markdown_folder_runs_without_conversion():
    ds = load_golden(corpus=NOTES, golden=DATA / "questions.csv")
    assert len(ds.corpus) == 4 and len(ds.queries) == 4
    assert [q.id for q in ds.queries] == ["q2", "q3", "q4", "q5"]  # line numbers: header is line 1
    # answers judge by content through the same mechanism as the demo's keyword queries
    assert ds.qrels["q2"] == {"espresso.md": 1}
    assert ds.qrels["q4"] == {"tea.txt": 1}
    assert ds.qrels["q5"] == {"guides/bike%20chain.md": 1}
    assert ds.queries[2].metadata["tags"] == ["tea", "drinks"]
    assert ds.queries[0].keywords == ("25 to 30 seconds",)


def test_jsonl_relevant_ids_lists_grades_and_answers():
    ds = load_golden(corpus=NOTES, golden=DATA / "questions.jsonl")
    assert ds.qrels["g1"] == {"espresso.md": 1}
    assert ds.qrels["g2"] == {"guides/bike%20chain.md": 2}
    assert ds.qrels["g3"] == {"guides/plants.md": 1, "tea.txt": 1}
    assert ds.qrels["g4"] == {"tea.txt": 1}  # answers: "80 degrees" / "below boiling"
    assert ds.queries[0].metadata == {"tags": ["coffee"]}


def test_csv_relevant_ids_semicolons_and_grades(tmp_path):
    p = write(
        tmp_path / "g.csv",
        'id,question,relevant_ids\nx1,first,"a;b:2"\nx2,second,"[""a"", ""c""]"\n'
        "x3,third,urn:doc:7:3\nx4,fourth,ns:a\n",
    )
    rows = read_golden(p)
    assert rows.qrels == {"x1": {"a": 1, "b": 2}, "x2": {"a": 1, "c": 1}, "x3": {"urn:doc:7": 3}, "x4": {"ns:a": 1}}


def test_csv_answers_plural_split_singular_whole(tmp_path):
    p = write(tmp_path / "g.csv", 'question,answers,answer\nq,"a;b","c;d"\n')
    (q,) = read_golden(p).queries
    assert q.keywords == ("a", "b", "c;d")


def test_parquet_and_hf_golden_equal_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"id": "g1", "question": "how is espresso brewed", "relevant_ids": ["espresso.md"], "tags": ["coffee"]},
        {"id": "g3", "question": "when to water plants", "relevant_ids": ["guides/plants.md", "tea.txt"], "tags": []},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "g.parquet")
    a = load_golden(corpus=NOTES, golden=tmp_path / "g.parquet")
    import datasets

    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "hf"))
    b = load_golden(corpus=NOTES, golden=tmp_path / "hf", split="test")
    assert a.qrels == b.qrels == {"g1": {"espresso.md": 1}, "g3": {"guides/plants.md": 1, "tea.txt": 1}}
    assert [q.text for q in a.queries] == [q.text for q in b.queries]


def test_hf_dataset_dict_with_several_splits_needs_a_split(tmp_path):
    import datasets

    row = {"question": "q", "relevant_ids": ["espresso.md"]}
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list([row]), "test": datasets.Dataset.from_list([row])}
    ).save_to_disk(str(tmp_path / "hf"))
    with pytest.raises(InputError, match="splits train, test"):
        read_golden(tmp_path / "hf", split="dev")
    assert len(read_golden(tmp_path / "hf", split="train").queries) == 1


@pytest.mark.parametrize(
    ("name", "text", "line", "field", "message"),
    [
        (
            "g.jsonl",
            '{"question": "a", "relevant_ids": ["d"]}\n{"question": "", "relevant_ids": ["d"]}\n',
            2,
            "question",
            "missing or empty",
        ),
        (
            "g.jsonl",
            '{"question": "a", "relevant_ids": ["d"]}\n{"question": "b", "relevant_ids": [1.5]}\n',
            2,
            "relevant_ids",
            "item 0",
        ),
        ("g.jsonl", '{"question": "a", "relevant_ids": {"d": "high"}}\n', 1, "relevant_ids", "grade of 'd'"),
        ("g.jsonl", '{"question": "a", "relevant_ids": ["has space"]}\n', 1, "relevant_ids", "whitespace"),
        ("g.jsonl", '{"question": "a", "relevant_ids": ["d"]}\n{"question": "b"\n', 2, None, "invalid JSON"),
        (
            "g.jsonl",
            '{"id": "x", "question": "a", "answers": ["y"]}\n{"id": "x", "question": "b", "answers": ["y"]}\n',
            2,
            "id",
            "duplicate query id 'x' (first at line 1)",
        ),
        (
            "g.jsonl",
            '{"question": "a", "answers": "ok"}\n{"question": "b", "answers": [""]}\n',
            2,
            "answers",
            "empty string",
        ),
        (
            "g.jsonl",
            '{"question": "a", "answers": ["x"]}\n{"question": "b", "answers": []}\n',
            2,
            None,
            "neither relevant_ids nor answers",
        ),
        ("g.jsonl", '{"question": "a", "answers": ["x"], "relevant_ids": ["d"]}\n', 1, None, "judge_by"),
        ("g.csv", 'question,relevant_ids\na,d1\nb,"[""d1"",]"\n', 3, "relevant_ids", "does not parse"),
        ("g.csv", "question,relevant_ids\na,d1\nb,d1,extra\n", 3, None, "3 fields, the header has 2"),
        ("g.csv", "query_text,relevant_ids\na,d1\n", 1, "question", "no question column"),
        ("g.csv", "question,notes\na,d1\n", 1, None, "no judgments"),
    ],
)
def test_bad_golden_rows_name_file_line_and_column(tmp_path, name, text, line, field, message):
    p = write(tmp_path / name, text)
    with pytest.raises(InputError) as e:
        read_golden(p)
    assert message in e.value.message
    assert e.value.path == str(p)
    assert e.value.line == line
    assert e.value.field == field
    assert str(e.value).startswith(f"{p}:{line}: ")


def test_judge_by_resolves_rows_with_ids_and_answers(tmp_path):
    p = write(
        tmp_path / "g.jsonl",
        '{"id": "a", "question": "tea", "relevant_ids": ["espresso.md"], "answers": ["80 degrees"]}\n',
    )
    by_ids = load_golden(corpus=NOTES, golden=p, judge_by="ids")
    assert by_ids.qrels == {"a": {"espresso.md": 1}} and by_ids.queries[0].metadata["answers"] == ["80 degrees"]
    by_answers = load_golden(corpus=NOTES, golden=p, judge_by="answers")
    assert by_answers.qrels == {"a": {"tea.txt": 1}}
    assert by_answers.queries[0].metadata["relevant_ids"] == {"espresso.md": 1}


def test_relevant_ids_matching_nothing_in_corpus_is_an_error(tmp_path):
    p = write(tmp_path / "g.jsonl", '{"question": "a", "relevant_ids": ["chunk-17"]}\n')
    with pytest.raises(InputError, match="none of the relevant_ids") as e:
        load_golden(corpus=NOTES, golden=p)
    assert e.value.field == "relevant_ids"


def test_unknown_suffix_asks_for_a_format(tmp_path):
    p = write(tmp_path / "g.txt", "question\n")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_golden(p)
    p2 = write(tmp_path / "g.data", "question,answer\nwhat,crema\n")
    assert read_golden(p2, fmt="csv").queries[0].keywords == ("crema",)


# ---------------------------------------------------------------- config contract


def test_load_from_config_pair_relative_to_config_dir():
    ds = load_from_config({"corpus": "notes", "golden": "questions.csv"}, DATA)
    assert len(ds.queries) == 4


def test_load_from_config_path_forms_keep_working(tmp_path):
    assert load_from_config("demo", tmp_path).name == "demo"
    assert load_from_config({"path": "demo", "split": "test"}, tmp_path).fingerprint == load_dataset("demo").fingerprint
    # a pydantic model's dump with every default (what the config model will hand over)
    dumped = {"path": "demo", "split": "test", "name": None, "corpus": None, "golden": None, "judge_by": "auto"}
    assert load_from_config(dumped, tmp_path).fingerprint == load_dataset("demo").fingerprint
    pair = {**dumped, "corpus": "notes", "golden": "questions.csv"}
    assert len(load_from_config(pair, DATA).queries) == 4


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"corpus": "notes"}, "dataset.golden"),
        ({"corpus": "notes", "golden": "questions.csv", "path": "x"}, "dataset.path"),
        ({"corpus": "notes", "golden": "questions.csv", "colour": 1}, "dataset.colour"),
        ({"path": "demo", "judge_by": "ids"}, "dataset.judge_by"),
        ({"corpus": "notes", "golden": "questions.csv", "judge_by": "maybe"}, "judge_by"),
    ],
)
def test_load_from_config_errors_name_the_key(section, field):
    with pytest.raises(InputError) as e:
        load_from_config(section, DATA)
    assert e.value.field == field


# ---------------------------------------------------------------- ir_datasets


def _fake_irds_home(home: Path) -> None:
    """What ir_datasets keeps on disk for beir/scifact once downloaded (``beir/scifact/source.zip``),
    with tiny made-up content."""
    import zipfile

    base = home / "beir" / "scifact"
    base.mkdir(parents=True)
    corpus = [{"_id": "1", "title": "T1", "text": "alpha beta"}, {"_id": "2", "title": "T2", "text": "gamma"}]
    with zipfile.ZipFile(base / "source.zip", "w") as z:
        z.writestr("scifact/corpus.jsonl", "".join(json.dumps(d | {"metadata": {}}) + "\n" for d in corpus))
        z.writestr("scifact/queries.jsonl", '{"_id": "7", "text": "alpha?", "metadata": {}}\n')
        z.writestr("scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\n7\t1\t1\n")


_IRDS_SCRIPT = """
import json, sys
from harness.datasets import load_dataset
from harness.errors import InputError
try:
    ds = load_dataset("irds:beir/scifact/test")
except InputError as e:
    print(json.dumps({"error": str(e)}))
else:
    print(json.dumps({"docs": [[d.id, d.title, d.text] for d in ds.corpus], "qrels": ds.qrels,
                      "queries": [[q.id, q.text] for q in ds.queries]}))
"""


def _irds(home: Path) -> dict:
    """Load in a fresh process: ir_datasets fixes its home folder when it is first imported."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, IR_DATASETS_HOME=str(home), PYTHONPATH=str(Path(__file__).parent.parent))
    out = subprocess.run(
        [sys.executable, "-c", _IRDS_SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_irds_id_reads_files_on_disk_and_refuses_to_download(tmp_path):
    _fake_irds_home(tmp_path / "home")
    got = _irds(tmp_path / "home")
    assert got == {
        "docs": [["1", "T1", "alpha beta"], ["2", "T2", "gamma"]],
        "qrels": {"7": {"1": 1}},
        "queries": [["7", "alpha?"]],
    }
    refused = _irds(tmp_path / "empty")
    assert "not on disk and the harness does not download" in refused["error"]
    assert "source.zip" in refused["error"]


@pytest.mark.slow
def test_irds_convert_prints_no_raw_library_lines(tmp_path):
    """``harness convert irds:ID``: ir_datasets' own ``[INFO] [starting] opening zip file`` lines
    (its logger writes to stderr itself) never reach the terminal; the harness's line does."""
    import os
    import subprocess
    import sys

    _fake_irds_home(tmp_path / "home")
    env = dict(os.environ, IR_DATASETS_HOME=str(tmp_path / "home"), PYTHONPATH=str(Path(__file__).parent.parent))
    out = subprocess.run(
        [sys.executable, "-m", "harness", "convert", "irds:beir/scifact/test", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "[INFO]" not in out.stderr and "wrote" in out.stderr + out.stdout, out.stderr


def test_unknown_irds_id():
    with pytest.raises(InputError, match="unknown ir_datasets id"):
        load_dataset("irds:no/such/dataset")


@pytest.mark.slow
def test_csv_answers_over_markdown_folder_benchmarks_without_conversion():
    from harness import benchmark

    ds = load_golden(corpus=NOTES, golden=DATA / "questions.csv")
    results = benchmark(
        ds, {"bm25": {"type": "bm25"}}, metrics=["ndcg@10", "hit_rate@1"], latency_queries=0, show_progress=False
    )
    assert results.summary["bm25"]["hit_rate@1"] == 1.0  # each question's words point at its one file


def test_json_array_tsv_and_parquet_folder_read_like_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"id": "a", "question": "x?", "relevant_ids": ["espresso.md"]},
        {"id": "b", "question": "y?", "answers": ["crema"]},
    ]
    write(tmp_path / "g.json", json.dumps(rows))
    write(tmp_path / "g.tsv", "id\tquestion\trelevant_ids\tanswers\na\tx?\tespresso.md\t\nb\ty?\t\tcrema\n")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "pq" / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), tmp_path / "pq" / "part-1.parquet")
    for path in ("g.json", "g.tsv", "pq"):
        got = read_golden(tmp_path / path)
        assert [(q.id, q.text, q.keywords) for q in got.queries] == [("a", "x?", ()), ("b", "y?", ("crema",))], path
        assert got.qrels == {"a": {"espresso.md": 1}}, path
