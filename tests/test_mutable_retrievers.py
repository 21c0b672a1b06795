"""The mutable retriever protocol (harness.protocol.Mutable) of the built-in retrievers: bm25, dense and
the vector databases. After any sequence of add, delete and update, an exact engine answers as an index
built fresh over the documents it holds; an approximate one never returns a deleted document."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.datasets import load_dataset
from harness.model import Document
from harness.protocol import Mutable, Updatable
from harness.registry import BuildContext, spec_class

DEMO = load_dataset("demo")
DOCS = list(DEMO.corpus)
QUERIES = DEMO.queries[:12]


def _build(spec: dict, tmp_path) -> object:
    cls = spec_class(spec["type"])
    return cls.model_validate(spec).build(BuildContext(cache_dir=tmp_path, show_progress=False))


@contextlib.contextmanager
def _written(spec: dict, tmp_path):
    """The retriever indexed over the first 100 demo documents, then written by SCRIPT, and what it
    holds; closed after (a vector database's store deleted)."""
    held = {d.id: d for d in DOCS[:100]}
    obj = _build(spec, tmp_path)
    try:
        obj.index(list(held.values()))
        _apply(obj, held, SCRIPT)
        yield obj, held
    finally:
        close = getattr(obj, "close", None)
        if close:
            close()


def _answers(obj, k: int = 10) -> dict[str, list[tuple[str, float]]]:
    from harness.run import Run

    run = dict(Run.coerce(obj.search(QUERIES, k)).items())
    return {q.id: run.get(q.id, []) for q in QUERIES}


def _apply(obj, held: dict[str, Document], ops: list[tuple[str, list[int]]]) -> None:
    for op, picks in ops:
        if op == "add":
            docs = [d for i, d in enumerate(DOCS) if i in picks and d.id not in held]
            obj.add(docs)
            held.update((d.id, d) for d in docs)
        elif op == "delete":
            ids = [d.id for i, d in enumerate(DOCS) if i in picks and d.id in held]
            obj.delete(ids)
            for i in ids:
                del held[i]
        else:
            docs = [held[d.id].model_copy(update={"text": held[d.id].text + " revised"})
                    for i, d in enumerate(DOCS) if i in picks and d.id in held]  # fmt: skip
            obj.update(docs)
            held.update((d.id, d) for d in docs)


OPS = st.lists(
    st.tuples(st.sampled_from(["add", "delete", "update"]), st.lists(st.integers(0, len(DOCS) - 1), max_size=12)),
    max_size=6,
)


@settings(max_examples=15, deadline=None)
@given(ops=OPS)
def test_bm25_after_writes_equals_a_fresh_index(tmp_path_factory, ops) -> None:
    tmp = tmp_path_factory.mktemp("bm25")
    held = {d.id: d for d in DOCS[:100]}
    obj = _build({"type": "bm25"}, tmp)
    assert isinstance(obj, Mutable) and isinstance(obj, Updatable)
    obj.index(list(held.values()))
    _apply(obj, held, ops)
    fresh = _build({"type": "bm25"}, tmp)
    fresh.index(list(held.values()) or DOCS[:1])
    if not held:
        assert all(not r for r in _answers(obj).values())
        return
    assert _answers(obj) == _answers(fresh)


SCRIPT = [("add", list(range(100, 140))), ("delete", [*range(0, 30, 3), 105, 110]),
          ("update", [*range(1, 40, 4), 120]), ("add", [0, 3]), ("delete", list(range(130, 140)))]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [
        {"type": "dense"},
        {"type": "dense", "index": "ivf"},
        {"type": "qdrant"},
        {"type": "lancedb"},
        {"type": "pgvector"},
    ],
    ids=["dense-flat", "dense-ivf", "qdrant", "lancedb", "pgvector"],
)
def test_exact_vector_engines_after_writes_equal_a_fresh_flat_index(tmp_path, spec: dict) -> None:
    with _written(spec, tmp_path) as (obj, held):
        fresh = _build({"type": "dense"}, tmp_path)
        fresh.index(list(held.values()))
        got, want = _answers(obj, 100), _answers(fresh, 100)
        for q in QUERIES:
            assert {d for d, _ in got[q.id]} <= set(held)
            if spec.get("index") == "ivf":
                continue  # IVF: approximate, only what it holds is checked
            assert [d for d, _ in got[q.id]] == [d for d, _ in want[q.id]], q.id
            assert [s for _, s in got[q.id]] == pytest.approx([s for _, s in want[q.id]], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [{"type": "dense", "index": "hnsw"}, {"type": "chroma"}], ids=["dense-hnsw", "chroma"])
def test_approximate_engines_never_return_a_deleted_document(tmp_path, spec: dict) -> None:
    with _written(spec, tmp_path) as (obj, held):
        for ranking in _answers(obj, 50).values():
            assert {d for d, _ in ranking} <= set(held)
