"""Metadata filters: the engine-neutral form, its checks before work, and bm25/dense honouring it
exactly (every returned document satisfies the query's filter; the filtered top k equals brute force
over the admitted documents)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.filters import Condition, check_filters, doc_mask, metadata_kinds, parse_filter, query_filter
from harness.model import Corpus, Document, GoldenDataset, Query


def test_forms_parse_to_anded_conditions():
    f = parse_filter({"lang": "en", "src": {"in": ["a", "b"]}, "year": {"gte": 2019, "lte": 2021}})
    assert f is not None
    assert f.conditions == (
        Condition("lang", "eq", "en"),
        Condition("src", "in", ("a", "b")),
        Condition("year", "gte", 2019),
        Condition("year", "lte", 2021),
    )
    assert f.matches({"lang": "en", "src": "b", "year": 2020})
    assert not f.matches({"lang": "en", "src": "b", "year": 2022})
    assert not f.matches({"lang": "en", "year": 2020})  # a missing field never matches
    assert parse_filter(None) is None and parse_filter({}) is None and parse_filter("") is None
    assert parse_filter('{"lang": "en"}') == parse_filter({"lang": "en"})  # a CSV cell


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"tags": ["a", "b"]}, "in: [...]"),
        ({"year": {"between": 1}}, "unknown operator"),
        ({"year": {"in": []}}, "non-empty list"),
        ({"year": {"gte": "2019"}}, "expected a number"),
        ({"year": None}, "got null"),
        ("[1, 2]", "must be a mapping"),
        ("{not json", "not valid JSON"),
    ],
)
def test_malformed_filters_say_what_is_wrong(bad, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        parse_filter(bad)


def test_values_compare_by_type():
    assert parse_filter({"n": 1}).matches({"n": 1.0})  # numbers as numbers
    assert not parse_filter({"n": 1}).matches({"n": True})  # a boolean is not the number 1
    assert not parse_filter({"n": True}).matches({"n": 1})
    assert not parse_filter({"n": "1"}).matches({"n": 1})
    assert not parse_filter({"n": {"gte": 0}}).matches({"n": "5"})


def _dataset(filters, meta=None):
    docs = [
        Document(id=f"d{i}", text=f"coffee tea water {i}", metadata=(meta or (lambda i: {"g": f"g{i % 3}", "y": i}))(i))
        for i in range(9)
    ]
    qs = [
        Query(id=f"q{j}", text="coffee", metadata={"filter": f} if f is not None else {}) for j, f in enumerate(filters)
    ]
    return GoldenDataset.build("f", docs, qs, {q.id: {"d1": 1} for q in qs}, source="golden.jsonl")


@pytest.mark.parametrize(
    ("flt", "words"),
    [
        ({"lang": "en"}, "names field 'lang', which no document has"),
        ({"g": {"gte": 1}}, "a range needs a numeric field"),
        ({"y": "3"}, "cannot equal the field's int values"),
        ({"y": {"in": [1, "x"]}}, "cannot equal"),
        ({"y": ["a"]}, "in: "),
    ],
)
def test_check_refuses_before_work(flt, words):
    with pytest.raises(InputError, match=words.replace("[", r"\[")) as e:
        check_filters(_dataset([None, flt]))
    assert e.value.field == "filter" and "q1" in str(e.value)


def test_mixed_type_field_is_not_filterable():
    ds = _dataset([{"g": "a"}], meta=lambda i: {"g": "a" if i % 2 else 1})
    assert metadata_kinds(ds.corpus)["g"] == "mixed"
    with pytest.raises(InputError, match="several types"):
        check_filters(ds)


def test_unknown_field_is_exit_2_before_any_retriever_runs(tmp_path):
    from harness.cli import main

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as f:
        for i in range(4):
            f.write(json.dumps({"_id": f"d{i}", "text": f"coffee {i}", "metadata": {"year": 2000 + i}}) + "\n")
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "coffee", "metadata": {"filter": {"yaer": 2001}}}) + "\n"
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"dataset: {{path: {folder}}}\nretrievers:\n  bm25: {{type: bm25}}\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert not (tmp_path / "out").exists()


def test_bm25_filtered_top_k_is_brute_force_over_admitted_docs():
    from retrievers.bm25 import BM25

    filters = [None, {"g": "g1"}, {"y": {"gte": 2, "lt": 7}}, {"g": {"in": ["g0", "g2"]}, "y": {"lte": 4}}]
    ds = _dataset(filters)
    for backend in ("bm25s", "rank_bm25"):
        r = BM25(backend=backend, show_progress=False)
        r.index(ds.corpus)
        run = r.search(ds.queries, 5)
        plain = r.search([Query(id="p", text="coffee")], 9)
        order = [d for d, _ in plain.ranking("p")]
        for q in ds.queries:
            f = query_filter(q)
            got = [d for d, _ in run.ranking(q.id)]
            admitted = [d for d in order if f is None or f.matches(ds.corpus[int(d[1:])].metadata)]
            assert sorted(got) == sorted(admitted[:5]), (backend, q.id)


@pytest.mark.slow
def test_dense_filter_is_exact_for_flat_and_respected_by_hnsw(cache_dir):
    from retrievers.dense import Dense

    filters = [None, {"g": "g1"}, {"y": {"gte": 2, "lt": 7}}, {"g": {"in": ["g0", "g2"]}, "y": {"lte": 4}}]
    ds = _dataset(filters)
    flat = Dense(cache_dir=cache_dir, show_progress=False)
    flat.index(ds.corpus)
    emb = flat.encoder.encode_documents(ds.corpus)
    q = flat.encoder.encode_queries(ds.queries)
    run = flat.search(ds.queries, 4)
    for i, query in enumerate(ds.queries):
        f = query_filter(query)
        mask = np.ones(len(ds.corpus), bool) if f is None else doc_mask(ds.corpus, f)
        s = np.where(mask, emb @ q[i], -np.inf)
        want = [ds.corpus.ids[j] for j in np.argsort(-s)[: min(4, int(mask.sum()))]]
        assert [d for d, _ in run.ranking(query.id)] == want
    hnsw = Dense(cache_dir=cache_dir, show_progress=False, index="hnsw")
    hnsw.index(ds.corpus)
    run = hnsw.search(ds.queries, 4)
    for query in ds.queries:
        f = query_filter(query)
        assert all(f is None or f.matches(ds.corpus[int(d[1:])].metadata) for d, _ in run.ranking(query.id))
    assert hnsw.efficiency_extra(4)["ann_recall@4"] == pytest.approx(1.0)


scalars = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False, width=32), st.booleans())


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abc"), scalars, max_size=3),
    st.lists(st.dictionaries(st.sampled_from("abc"), scalars), min_size=1, max_size=6),
)
def test_doc_mask_agrees_with_matches(raw, metas):
    flt = parse_filter(raw)
    if flt is None:
        return
    corpus = Corpus.from_documents(Document(id=f"d{i}", text="t", metadata=m) for i, m in enumerate(metas))
    assert doc_mask(corpus, flt).tolist() == [flt.matches(m) for m in metas]
