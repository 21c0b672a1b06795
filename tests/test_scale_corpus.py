"""The columnar corpus: a ``Sequence[Document]`` that stores columns, reads like the old list,
and fingerprints to the same value the per-document implementation gave."""

from __future__ import annotations

import hashlib
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.io.beir import load_beir
from harness.model import Corpus, Document, GoldenDataset, Query
from tests.conftest import shared


def reference_fingerprint(ds: GoldenDataset) -> str:
    """The implementation results.json files were written with (a pydantic object per document)."""
    h = hashlib.sha256()
    for d in sorted(ds.corpus, key=lambda d: d.id):
        h.update(json.dumps(["d", d.id, d.title, d.text], ensure_ascii=False).encode())
        h.update(b"\n")
    for q in sorted(ds.queries, key=lambda q: q.id):
        h.update(json.dumps(["q", q.id, q.text, list(q.keywords)], ensure_ascii=False).encode())
        h.update(b"\n")
    for qid in sorted(ds.qrels):
        for doc_id, grade in sorted(ds.qrels[qid].items()):
            h.update(json.dumps(["r", qid, doc_id, grade], ensure_ascii=False).encode())
            h.update(b"\n")
    return "sha256:" + h.hexdigest()


# hostile text: quotes, backslashes, control characters, non-ASCII digits, astral characters
# (lone surrogates cannot be encoded to UTF-8 by either implementation; the reader refuses them)
TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30)
IDS = st.text(alphabet=st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.dictionaries(IDS, st.tuples(TEXT, TEXT), min_size=1, max_size=12),
    grades=st.lists(st.integers(-3, 5), min_size=1, max_size=5),
)
def test_fingerprint_equals_per_document_reference(docs, grades):
    corpus = [Document(id=i, text=t, title=ti) for i, (t, ti) in docs.items()]
    ids = list(docs)
    qrels = {"q\u0663": {ids[j % len(ids)]: g for j, g in enumerate(grades)}}
    ds = GoldenDataset(name="x", corpus=corpus, queries=[Query(id="q\u0663", text='say "hi"\\')], qrels=qrels)
    assert isinstance(ds.corpus, Corpus)
    assert ds.fingerprint == reference_fingerprint(ds)


def test_fingerprint_of_real_data_unchanged():
    ds = load_beir(shared("scifact"), "test")
    assert ds.fingerprint == reference_fingerprint(ds)


def test_list_of_documents_is_wrapped_and_reads_back():
    docs = [
        Document(id="a", text="alpha", title="A", metadata={"lang": "en"}),
        Document(id="b", text="beta"),
        Document(id="c", text="gamma", title="C"),
    ]
    ds = GoldenDataset(name="x", corpus=docs, queries=[Query(id="q", text="t")], qrels={"q": {"a": 1}})
    corpus = ds.corpus
    assert isinstance(corpus, Corpus) and len(corpus) == 3
    assert list(corpus) == docs and corpus == docs  # equal documents, metadata included
    assert corpus[-1] == docs[-1] and corpus[0].content == "A alpha"
    assert list(corpus.contents()) == [d.content for d in docs]
    assert corpus.ids.tolist() == ["a", "b", "c"] and ds.doc_index == {"a": 0, "b": 1, "c": 2}
    assert list(corpus[1:]) == docs[1:]
    with pytest.raises(IndexError):
        corpus[3]
    # a Document built on access is a copy: mutating its metadata cannot change the corpus
    corpus[0].metadata["lang"] = "fr"
    assert corpus[0].metadata == {"lang": "en"}
    assert pickle.loads(pickle.dumps(corpus)) == corpus
    dicts = GoldenDataset(name="x", corpus=[d.model_dump() for d in docs], queries=[], qrels={})
    assert dicts.corpus == corpus


def test_loader_reads_columns_and_keeps_metadata(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": null, "text": "x", "lang": "en"}\n'
        '{"_id": 2, "title": "T", "text": "y", "metadata": {"k": 1}}\n'
        '{"_id": "d3"}\n'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("q\td1\t1\n")
    ds = load_beir(tmp_path)
    assert [(d.id, d.title, d.text, d.metadata) for d in ds.corpus] == [
        ("d1", "", "x", {"lang": "en"}),
        ("2", "T", "y", {"k": 1}),
        ("d3", "", "", {}),
    ]
