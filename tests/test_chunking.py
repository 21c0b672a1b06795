"""Chunking as a library (:mod:`harness.chunking`): chunkers, spans, the on-disk cache, relevance
through parent ids and answers, and the document-level collapse of a chunk ranking."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import evaluate
from harness.chunking import (
    ChunkSpec,
    answer_qrels,
    chunk_corpus,
    chunk_level_qrels,
    chunk_qrels,
    collapse_to_documents,
    context_covers,
    make_chunker,
    parse_chunking,
    token_counts,
)
from harness.chunking.chunkers import load_tokenizer
from harness.errors import InputError
from harness.metrics.context import recall_at_tokens
from harness.model import Document, GoldenDataset, Query
from harness.run import Run

WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
]
SPECS = [
    {"method": "tokens", "size": 8, "overlap": 2},
    {"method": "tokens", "size": 16, "overlap": 0},
    {"method": "sentences", "size": 12, "overlap": 4},
    {"method": "sentences", "size": 32},
    {"method": "recursive", "size": 10},
    {"method": "markdown", "size": 10},
]


def count(text: str) -> int:
    tok, _ = load_tokenizer(None)
    return len(tok.encode(text, add_special_tokens=False).ids)


# ---------------------------------------------------------------- specs


def test_specs_validate_with_located_errors():
    specs = parse_chunking({"none": {"method": "none"}, "t128": {"method": "tokens", "size": 128, "overlap": 32}})
    assert specs["t128"].params() == {"method": "tokens", "size": 128, "overlap": 32}
    for bad, field in [
        ({"x": {"method": "tokens"}}, "chunking.x"),
        ({"x": {"method": "tokens", "size": 64, "overlap": 64}}, "chunking.x"),
        ({"x": {"method": "words", "size": 64}}, "chunking.x.method"),
        ({"x": {"method": "none", "size": 64}}, "chunking.x"),
        ({"x": {"method": "tokens", "size": 64, "colour": 1}}, "chunking.x.colour"),
        ({"a b": {"method": "none"}}, "chunking"),
    ]:
        with pytest.raises(InputError) as e:
            parse_chunking(bad)
        assert e.value.field == field, bad


# ---------------------------------------------------------------- chunkers, hand-checked


def test_token_windows_hand_checked():
    text = " ".join(WORDS)  # every word is one WordPiece token
    ch = make_chunker({"method": "tokens", "size": 8, "overlap": 2})
    chunks = [text[a:b] for a, b in ch.spans(text)]
    assert chunks == [" ".join(WORDS[0:8]), " ".join(WORDS[6:14]), " ".join(WORDS[12:16])]


def test_token_windows_never_cut_a_word():
    text = "alpha " * 5 + "unbelievableness " + "beta " * 5  # the long word is several tokens
    ch = make_chunker({"method": "tokens", "size": 8, "overlap": 0})
    for a, b in ch.spans(text):
        assert (a == 0 or text[a - 1] == " ") and (b == len(text) or text[b] == " "), text[a:b]
        assert count(text[a:b]) <= 8


def test_sentences_pack_whole_sentences_with_overlap():
    s = ["One two three.", "Four five six!", "Seven eight nine?", "Ten eleven twelve."]  # 4 tokens each
    text = " ".join(s)
    chunks = [text[a:b] for a, b in make_chunker({"method": "sentences", "size": 8}).spans(text)]
    assert chunks == [" ".join(s[0:2]), " ".join(s[2:4])]
    chunks = [text[a:b] for a, b in make_chunker({"method": "sentences", "size": 8, "overlap": 4}).spans(text)]
    assert chunks == [" ".join(s[0:2]), " ".join(s[1:3]), " ".join(s[2:4])]


def test_markdown_keeps_headings_with_their_section():
    text = "# Coffee\n\nEspresso is strong.\n\n# Tea\n\nGreen tea is steeped below boiling.\n"
    chunks = [text[a:b] for a, b in make_chunker({"method": "markdown", "size": 12}).spans(text)]
    assert chunks == ["# Coffee\n\nEspresso is strong.", "# Tea\n\nGreen tea is steeped below boiling."]


# ---------------------------------------------------------------- properties on hostile text

hostile = st.lists(
    st.one_of(
        st.characters(),  # any code point, lone surrogates included
        st.sampled_from(
            [
                "\ud800",
                "\udfff",
                "\r\n",
                "\n\n",
                "😀",
                "é",
                "e\u0301",
                "٣",
                "१",
                "# ",
                ". ",
                "? ",
                "\t",
                "word ",
                "naïve ",
            ]
        ),
    ),
    max_size=120,
).map("".join)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "-".join(str(v) for v in s.values()))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile)
def test_spans_reproduce_chunk_text_on_hostile_text(spec, text):
    doc = Document(id="d", text=text, title="t")
    chunked = chunk_corpus([doc], make_chunker(spec))
    starts = []
    for chunk, parent, (a, b) in zip(chunked.corpus, chunked.parent_ids, chunked.spans.tolist()):
        assert parent == "d"
        assert chunk.text == text[a:b]
        assert chunk.metadata["start"] == a and chunk.metadata["end"] == b
        assert 0 <= a <= b <= len(text)
        starts.append(a)
    assert starts == sorted(starts)
    assert [c.id for c in chunked.corpus] == [f"d#{n}" for n in range(len(chunked))]
    assert len(chunked) >= 1  # an empty document still has a chunk (its title is retrievable)


@given(text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400))
@settings(max_examples=25, deadline=None)
def test_chunks_fit_the_size_and_cover_the_text(text):
    for spec in SPECS:
        ch = make_chunker(spec)
        spans = ch.spans(text)
        covered = np.zeros(len(text), dtype=bool)
        for a, b in spans:
            covered[a:b] = True
            if spec["method"] != "sentences":
                # sentences may exceed the size only through a single over-long word split by tokens
                assert count(text[a:b]) <= spec["size"] + (2 if spec["method"] == "tokens" else 0), (spec, text[a:b])
        uncovered = "".join(c for c, cov in zip(text, covered) if not cov)
        assert count(uncovered) == 0 or not uncovered.strip() or spec["method"] in ("tokens",), (spec, uncovered)


docs_st = st.lists(
    st.tuples(st.text(alphabet="abcxyz-_.", min_size=1, max_size=6), st.text(max_size=60)),
    min_size=1,
    max_size=8,
    unique_by=lambda t: t[0],
)


def _random_run(ids: list[str], data: st.DataObject, n_queries: int = 3) -> Run:
    rankings = {}
    for q in range(n_queries):
        picked = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
        scores = data.draw(st.lists(st.integers(0, 5), min_size=len(picked), max_size=len(picked)))
        rankings[f"q{q}"] = [(d, float(s)) for d, s in zip(picked, scores)]
    return Run.from_lists(rankings, doc_ids=ids)


@given(docs=docs_st, data=st.data())
@settings(max_examples=60, deadline=None)
def test_chunking_none_then_collapse_is_the_identity_on_runs(docs, data):
    corpus = [Document(id=i, text=t) for i, t in docs]
    chunked = chunk_corpus(corpus, make_chunker({"method": "none"}))
    assert [c.id for c in chunked.corpus] == [d.id for d in corpus]
    assert all(c is d for c, d in zip(chunked.corpus, corpus))
    run = _random_run([d.id for d in corpus], data)
    back = collapse_to_documents(run, chunked, doc_ids=[d.id for d in corpus])
    assert back.query_ids == run.query_ids
    assert back.doc_ids.tolist() == run.doc_ids.tolist()
    np.testing.assert_array_equal(back.indices, run.indices)
    np.testing.assert_array_equal(back.scores, run.scores)
    assert back.duplicates_dropped == run.duplicates_dropped


@given(docs=docs_st, data=st.data())
@settings(max_examples=60, deadline=None)
def test_collapse_never_duplicates_and_first_chunk_places_the_document(docs, data):
    corpus = [Document(id=i, text=(t + " ") * 6) for i, t in docs]
    chunked = chunk_corpus(corpus, make_chunker({"method": "tokens", "size": 8, "overlap": 2}))
    run = _random_run([c.id for c in chunked.corpus], data)
    back = collapse_to_documents(run, chunked)
    for qid in run.query_ids:
        ranked = back.ranking(qid)
        ids = [d for d, _ in ranked]
        assert len(ids) == len(set(ids))
        best: dict[str, float] = {}
        order: list[str] = []
        for c, s in run.ranking(qid):
            p = chunked.parent_of[c]
            if p not in best:
                best[p] = s
                order.append(p)
        assert dict(ranked) == best  # the first (best-ranked) chunk's score
        assert set(ids) == set(order)


# ---------------------------------------------------------------- relevance


@pytest.fixture(scope="module")
def small():
    corpus = [
        Document(id="a", title="Coffee", text="Espresso uses finely ground coffee. " * 6 + "Brew at 93 degrees."),
        Document(id="b", title="Tea", text="Green tea likes 80 degrees water. " * 3),
        Document(id="c", title="Bikes", text="Oil the chain."),
    ]
    queries = [
        Query(id="q1", text="espresso"),
        Query(id="q2", text="tea temperature", keywords=("80 degrees", "93 DEGREES")),
    ]
    ds = GoldenDataset.build("small", corpus, queries, {"q1": {"a": 2, "c": 0, "zz": 1}})
    chunked = chunk_corpus(corpus, make_chunker({"method": "tokens", "size": 16, "overlap": 4}))
    return ds, chunked


def test_chunk_qrels_reach_every_chunk_through_the_parent(small):
    ds, chunked = small
    cq = chunk_qrels({"q1": ds.qrels["q1"]}, chunked)
    a_chunks = [c.id for c in chunked.corpus if c.metadata["parent_id"] == "a"]
    assert len(a_chunks) > 1
    assert cq["q1"] == {**dict.fromkeys(a_chunks, 2), "c#0": 0, "zz": 1}  # zz: judged, not in corpus: kept


def test_answer_qrels_resolve_per_chunk_case_insensitive(small):
    ds, chunked = small
    aq = answer_qrels(ds.queries, chunked.corpus)
    expected = {c.id for c in chunked.corpus if "80 degrees" in c.text or "93 degrees" in c.text.casefold()}
    assert set(aq["q2"]) == expected
    assert "q1" not in aq
    assert any(c.startswith("a#") for c in expected) and any(c.startswith("b#") for c in expected)
    full = chunk_level_qrels(ds, chunked)
    assert set(full) == {"q1", "q2"} and full["q2"] == aq["q2"]


def test_document_level_scores_of_a_none_chunking_equal_the_unchunked_run(small):
    ds, _ = small
    chunked = chunk_corpus(ds.corpus, make_chunker({"method": "none"}))
    run = Run.from_lists({"q1": [("b", 3.0), ("a", 2.0), ("c", 1.0)], "q2": [("c", 1.0), ("b", 0.5)]})
    metrics = ["ndcg@10", "mrr@10", "recall@2"]
    assert evaluate(ds.qrels, collapse_to_documents(run, chunked), metrics, per_query=True) == evaluate(
        ds.qrels, run, metrics, per_query=True
    )


def test_collapse_rejects_a_run_from_another_chunking(small):
    _, chunked = small
    with pytest.raises(InputError, match="no chunk of this chunking"):
        collapse_to_documents(Run.from_lists({"q": [("a#99", 1.0)]}), chunked)


def test_context_covers_feed_the_context_metrics(small):
    ds, chunked = small
    tokens = token_counts(chunked.corpus)
    first_a = next(c.id for c in chunked.corpus if c.id.startswith("a#"))
    b0 = "b#0"
    run = Run.from_lists({"q1": [(first_a, 2.0), (b0, 1.0)], "q2": [(b0, 1.0)]})
    qids, toks, covers = context_covers(run, ds, chunked, tokens)
    assert qids == ["q1", "q2"]
    # q1 units: a (grade 2) and zz (not in corpus); c is grade 0, not a unit
    assert covers[0].tolist() == [[True, False], [False, False]]
    assert covers[1].tolist() == [[True, False]]  # b#0 holds "80 degrees", not "93 degrees"
    assert toks[0].tolist() == [
        tokens[chunked.corpus.index(next(c for c in chunked.corpus if c.id == first_a))],
        tokens[[c.id for c in chunked.corpus].index(b0)],
    ]
    assert recall_at_tokens(toks, covers, 10_000).tolist() == [0.5, 0.5]


def test_chunk_ids_that_collide_with_document_ids_are_refused():
    corpus = [Document(id="x", text="one two three " * 10), Document(id="x#1", text="other")]
    with pytest.raises(InputError, match="collide"):
        chunk_corpus(corpus, make_chunker({"method": "tokens", "size": 8}))


# ---------------------------------------------------------------- cache


def test_chunk_cache_hit_miss_and_corruption(tmp_path, caplog, demo_dataset):
    ch = make_chunker({"method": "sentences", "size": 64, "overlap": 16})
    first = chunk_corpus(demo_dataset.corpus, ch, cache_dir=tmp_path)
    again = chunk_corpus(demo_dataset.corpus, ch, cache_dir=tmp_path)
    assert not first.cached and again.cached
    assert [c.id for c in again.corpus] == [c.id for c in first.corpus]
    assert [c.text for c in again.corpus] == [c.text for c in first.corpus]
    np.testing.assert_array_equal(again.spans, first.spans)
    # another size, another key; an edited corpus, another key
    other = chunk_corpus(demo_dataset.corpus, make_chunker({"method": "sentences", "size": 96}), cache_dir=tmp_path)
    assert not other.cached
    edited = [Document(id=d.id, text=d.text + " x", title=d.title) for d in demo_dataset.corpus]
    assert not chunk_corpus(edited, ch, cache_dir=tmp_path).cached
    # a damaged cache file is ignored and rewritten
    for f in (tmp_path / "chunks").glob("*.npy"):
        f.write_bytes(b"not numpy")
    with caplog.at_level(logging.WARNING, logger="harness"):
        healed = chunk_corpus(demo_dataset.corpus, ch, cache_dir=tmp_path)
    assert not healed.cached and "chunk cache" in caplog.text
    np.testing.assert_array_equal(healed.spans, first.spans)
    assert chunk_corpus(demo_dataset.corpus, ch, cache_dir=tmp_path).cached


def test_spec_objects_and_dicts_make_the_same_chunker():
    a = make_chunker(ChunkSpec(method="tokens", size=64, overlap=8))
    b = make_chunker({"method": "tokens", "size": 64, "overlap": 8})
    assert a.name == b.name == "tokens-64-8" and a.params() == b.params()


def test_demo_chunked_config_sections_are_valid(tmp_path):
    """configs/demo-chunked.yaml, as far as this library goes: its chunking section validates and
    every chunking works on the demo (the engine wires the rest)."""
    from pathlib import Path

    import yaml

    from harness.datasets import load_from_config

    path = Path(__file__).parent.parent / "configs" / "demo-chunked.yaml"
    cfg = yaml.safe_load(path.read_text())
    ds = load_from_config(cfg["dataset"], path.parent)
    specs = parse_chunking(cfg["chunking"])
    assert list(specs) == ["none", "t48", "s64"]
    sizes = {}
    for name, spec in specs.items():
        chunked = chunk_corpus(ds.corpus, make_chunker(spec), cache_dir=tmp_path)
        assert set(chunked.parent_ids) == set(ds.doc_ids)
        sizes[name] = len(chunked)
    assert sizes["none"] == len(ds.corpus) < sizes["s64"] < sizes["t48"]


def test_chunk_dataset_judges_chunks_and_none_keeps_the_fingerprint(small, demo_dataset):
    from harness.chunking import chunk_dataset

    ds, chunked = small
    cds = chunk_dataset(ds, chunked)
    assert [d.id for d in cds.corpus] == [c.id for c in chunked.corpus]
    assert cds.qrels == chunk_level_qrels(ds, chunked)
    assert [q.id for q in cds.queries] == [q.id for q in ds.queries]
    none = chunk_corpus(demo_dataset.corpus, make_chunker({"method": "none"}))
    assert chunk_dataset(demo_dataset, none).fingerprint == demo_dataset.fingerprint
