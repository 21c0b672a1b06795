"""BEIR folders: the split's queries only, keyword-judged queries, and bad data refused with FILE:LINE.

The slow tests load the real collections in ../shared/data and check the counts their READMEs state.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.io.beir import available_splits, load_beir, read_corpus, read_queries
from tests.conftest import shared

DOCS = [
    {"_id": "d1", "title": "Espresso", "text": "Hot water forced through COFFEE.", "lang": "en"},
    {"_id": "d2", "title": "", "text": "Green tea is steeped."},
    {"_id": 3, "text": "Bicycle chains need oil."},
]
QUERIES = [
    {"_id": "q1", "text": "espresso"},
    {"_id": "q2", "text": "tea"},
    {"_id": "q3", "text": "bikes"},
    {"_id": "t1", "text": "train query"},
]


def make(
    tmp_path: Path,
    docs=DOCS,
    queries=QUERIES,
    qrels: dict[str, str] | None = None,
    raw: dict[str, str] | None = None,
) -> Path:
    """A BEIR folder; ``raw`` overrides whole files with literal text."""
    root = tmp_path / "ds"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    if qrels is None:
        qrels = {
            "test": "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\t3\t0\n",
            "train": "query-id\tcorpus-id\tscore\nt1\td1\t1\n",
        }
    for split, text in qrels.items():
        (root / "qrels" / f"{split}.tsv").write_text(text)
    for name, text in (raw or {}).items():
        (root / name).write_text(text)
    return root


def at(path: Path, line: int) -> str:
    return rf"^{re.escape(str(path))}:{line}: "


def test_loads_only_the_splits_queries(tmp_path):
    ds = load_beir(make(tmp_path))
    assert ds.name == "ds" and ds.split == "test"
    assert [q.id for q in ds.queries] == ["q1", "q2"]
    assert ds.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1, "3": 0}}
    assert ds.doc_ids == ["d1", "d2", "3"]  # integer ids become strings
    assert ds.corpus[0].metadata == {"lang": "en"}  # unknown fields are kept as metadata
    assert ds.corpus[0].content == "Espresso Hot water forced through COFFEE."
    train = load_beir(make(tmp_path / "b"), "train", name="named")
    assert [q.id for q in train.queries] == ["t1"] and train.name == "named" and train.split == "train"
    assert ds.fingerprint != train.fingerprint


def test_missing_split_lists_the_available_ones(tmp_path):
    root = make(tmp_path)
    assert available_splits(root) == ["test", "train"]
    with pytest.raises(
        InputError, match=r"split 'dev' has no judgments file qrels/dev.tsv \(splits found: test, train\)"
    ):
        load_beir(root, "dev")


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(InputError, match="dataset folder not found"):
        load_beir(tmp_path / "absent")
    root = make(tmp_path)
    (root / "queries.jsonl").unlink()
    with pytest.raises(InputError, match=r"queries\.jsonl is missing"):
        load_beir(root)


def test_duplicate_document_id(tmp_path):
    root = make(tmp_path, docs=[*DOCS, {"_id": "d2", "text": "again"}])
    with pytest.raises(InputError, match=at(root / "corpus.jsonl", 4) + "_id: duplicate document id 'd2' .*line 2"):
        load_beir(root)


def test_duplicate_query_id(tmp_path):
    root = make(tmp_path, queries=[*QUERIES, {"_id": "q1", "text": "x"}])
    with pytest.raises(InputError, match=at(root / "queries.jsonl", 5) + "_id: duplicate query id 'q1'"):
        load_beir(root)


def test_truncated_json_line(tmp_path):
    text = json.dumps(DOCS[0]) + "\n" + json.dumps(DOCS[1])[:-5] + "\n"
    root = make(tmp_path, raw={"corpus.jsonl": text})
    with pytest.raises(InputError, match=at(root / "corpus.jsonl", 2) + "invalid JSON"):
        load_beir(root)


@pytest.mark.parametrize(
    "line, match",
    [
        ('["not", "an", "object"]', "expected a JSON object, got list"),
        ('{"text": "no id"}', "_id: missing"),
        ('{"_id": "a b", "text": "x"}', "_id: .*whitespace"),
        ('{"_id": "", "text": "x"}', "_id: .*empty"),
        ('{"_id": true, "text": "x"}', "_id: must be a string"),
        ('{"_id": "d9", "text": 5}', "text"),
    ],
)
def test_bad_corpus_line(tmp_path, line, match):
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps(DOCS[0]) + "\n" + line + "\n")
    with pytest.raises(InputError, match=at(path, 2) + match):
        read_corpus(path)


def test_bad_query_lines(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text('{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": "   "}\n')
    with pytest.raises(InputError, match=at(path, 2) + "text: query text is missing or empty"):
        read_queries(path)


def test_corpus_not_utf8(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=at(path, 2) + "not valid UTF-8"):
        read_corpus(path)


def test_bad_qrels_line_in_a_beir_folder(tmp_path):
    root = make(tmp_path, qrels={"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\tyes\n"})
    with pytest.raises(InputError, match=at(root / "qrels" / "test.tsv", 3) + "grade: .*'yes'"):
        load_beir(root)


def test_judgments_for_unknown_queries_are_dropped_and_unknown_docs_kept(tmp_path, caplog):
    qrels = {"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tgone\t1\nghost\td1\t1\n"}
    with caplog.at_level(logging.WARNING, logger="harness"):
        ds = load_beir(make(tmp_path, qrels=qrels))
    assert ds.qrels == {"q1": {"d1": 1, "gone": 1}}
    assert [q.id for q in ds.queries] == ["q1"]
    text = caplog.text
    assert "1 judged queries are not in queries.jsonl" in text and "ghost" in text
    assert "1 judged documents are not in corpus.jsonl" in text


def test_split_without_queries(tmp_path):
    root = make(tmp_path, qrels={"test": "query-id\tcorpus-id\tscore\n"})
    with pytest.raises(InputError, match=r"test.tsv: no judgments found"):
        load_beir(root)


def test_keyword_queries_are_judged_by_content(tmp_path):
    queries = [
        {"_id": "k1", "text": "coffee?", "keywords": ["coffee", "ESPRESSO"]},
        {"_id": "k2", "text": "chains", "keywords": "chain", "split": "test"},
        {"_id": "k3", "text": "other split", "keywords": ["tea"], "split": "dev"},
        {"_id": "q1", "text": "plain, unjudged"},
    ]
    root = make(tmp_path, queries=queries, qrels={})
    ds = load_beir(root)  # no qrels/test.tsv needed when keywords judge the queries
    assert [q.id for q in ds.queries] == ["k1", "k2"]
    assert ds.qrels == {"k1": {"d1": 1}, "k2": {"3": 1}}  # case-insensitive, title or text
    assert ds.queries[1].keywords == ("chain",)
    dev = load_beir(root, "dev")
    assert sorted(q.id for q in dev.queries) == ["k1", "k3"]  # no split field: every split
    assert dev.qrels["k3"] == {"d2": 1}


def test_keyword_query_also_judged_by_id_is_refused(tmp_path):
    queries = [{"_id": "q1", "text": "espresso", "keywords": ["espresso"]}, QUERIES[1]]
    root = make(tmp_path, queries=queries)
    with pytest.raises(InputError, match="'q1' has keywords and is also judged"):
        load_beir(root)


def test_keyword_matching_nothing_gives_an_unanswerable_query(tmp_path):
    root = make(tmp_path, queries=[{"_id": "k", "text": "x", "keywords": ["zebra"]}], qrels={})
    ds = load_beir(root)
    assert ds.qrels == {"k": {}}


def test_demo_dataset(demo_dataset):
    assert len(demo_dataset.corpus) == 187 and len(demo_dataset.queries) == 83
    assert set(demo_dataset.qrels) == {q.id for q in demo_dataset.queries}


# ----------------------------------------------------------------------------- real collections
def count(ds) -> tuple[int, int, int]:
    return len(ds.corpus), len(ds.queries), sum(len(j) for j in ds.qrels.values())


@pytest.mark.slow
def test_scifact_counts():
    root = shared("scifact")
    assert count(load_beir(root)) == (5183, 300, 339)
    assert count(load_beir(root, "train")) == (5183, 809, 919)
    ds = load_beir(root)
    assert all(g == 1 for j in ds.qrels.values() for g in j.values())


@pytest.mark.slow
def test_nfcorpus_counts():
    ds = load_beir(shared("nfcorpus"))
    assert count(ds) == (3162, 323, 12334)
    grades = [g for j in ds.qrels.values() for g in j.values()]
    assert grades.count(2) == 576 and grades.count(1) == 11758


@pytest.mark.slow
def test_cranfield_counts():
    ds = load_beir(shared("cranfield"))
    assert len(ds.corpus) == 1400 and sum(len(j) for j in ds.qrels.values()) == 1837
    assert len(ds.queries) == len(ds.qrels) == 225
    grades = [g for j in ds.qrels.values() for g in j.values()]
    assert {g: grades.count(g) for g in set(grades)} == {-1: 225, 1: 128, 2: 387, 3: 734, 4: 363}
    empty = [d.id for d in ds.corpus if not d.text and not d.title]
    assert empty == ["471", "995"]
