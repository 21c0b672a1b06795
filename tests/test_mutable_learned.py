"""The mutable retriever protocol (harness.protocol.Mutable) of the learned rows: retrievers.sparse
(``splade``: appended segments, merged) and retrievers.colbert (``colbert`` full scan: delta segments
in memory), with retrievers.held keeping positions, deletions, the tie rank and filter masks. After
any sequence of add, delete and update each answers, ids and scores, as an index built fresh over the
documents it holds; ``harness stream`` scores both as exact."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from harness.model import Document, Query
from harness.protocol import Mutable, Updatable
from harness.registry import BuildContext, spec_class
from tests.learned_models import build_tiny_colbert, build_tiny_splade, harness_cli
from tests.test_mutable_retrievers import DOCS, OPS, QUERIES, SCRIPT, _apply

pytest.importorskip("sentence_transformers.multi_vector_encoder")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, dict]:
    """The two rows' specs over tiny models built once (colbert's vectors float32, so scores compare
    to 1e-5 whatever the batch a document was encoded in)."""
    root = tmp_path_factory.mktemp("learned-models")
    return {
        "splade": {"type": "splade", "model": str(build_tiny_splade(root))},
        "colbert": {"type": "colbert", "model": str(build_tiny_colbert(root)), "precision": "float32"},
    }


def _build(spec: dict, cache: Path):
    return spec_class(spec["type"]).model_validate(spec).build(BuildContext(cache_dir=cache, show_progress=False))


def _answers(obj, queries=QUERIES, k: int = 20) -> dict[str, list[tuple[str, float]]]:
    from harness.run import Run

    run = dict(Run.coerce(obj.search(queries, k)).items())
    return {q.id: run.get(q.id, []) for q in queries}


def _fresh(spec: dict, cache: Path, held: dict[str, Document]):
    """An index built fresh over ``held``, in another order than the written one (ties by id)."""
    from retrievers.colbert import forget_rows

    forget_rows()  # the fresh colbert encodes every document itself, not copying the written one's rows
    fresh = _build(spec, cache)
    fresh.index(sorted(held.values(), key=lambda d: d.id, reverse=True))
    return fresh


def _same(got: dict, want: dict) -> None:
    for qid, ranking in want.items():
        assert [d for d, _ in got[qid]] == [d for d, _ in ranking], qid
        assert [s for _, s in got[qid]] == pytest.approx([s for _, s in ranking], abs=1e-5), qid


def _after_writes_equals_a_fresh_index(spec: dict, cache: Path, ops, merge_every_write: bool) -> None:
    import retrievers.colbert as cb
    import retrievers.sparse as sparse

    held = {d.id: d for d in DOCS[:100]}
    obj = _build(spec, cache)
    assert isinstance(obj, Mutable) and isinstance(obj, Updatable)
    obj.index(list(held.values()))
    old = sparse.MAX_SEGMENTS, cb.MAX_SEGMENTS
    if merge_every_write:  # a merge after every add: renumbered positions must not change an answer
        sparse.MAX_SEGMENTS = cb.MAX_SEGMENTS = 0
    try:
        _apply(obj, held, ops)
    finally:
        sparse.MAX_SEGMENTS, cb.MAX_SEGMENTS = old
    if not held:
        assert all(not r for r in _answers(obj).values())
        return
    _same(_answers(obj), _answers(_fresh(spec, cache, held)))


@settings(max_examples=12, deadline=None)
@given(ops=OPS, merge_every_write=...)
def test_splade_after_writes_equals_a_fresh_index(models, tmp_path_factory, ops, merge_every_write: bool) -> None:
    _after_writes_equals_a_fresh_index(models["splade"], tmp_path_factory.getbasetemp() / "splade-cache", ops,
                                       merge_every_write)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(ops=OPS, merge_every_write=...)
def test_colbert_after_writes_equals_a_fresh_index(models, tmp_path_factory, ops, merge_every_write: bool) -> None:
    _after_writes_equals_a_fresh_index(models["colbert"], tmp_path_factory.getbasetemp() / "colbert-cache", ops,
                                       merge_every_write)  # fmt: skip


@pytest.mark.parametrize("row", ["splade", "colbert"])
def test_the_script_deleted_documents_never_return_and_the_size_is_what_is_held(models, tmp_path, row: str) -> None:
    spec = models[row]
    held = {d.id: d for d in DOCS[:100]}
    obj = _build(spec, tmp_path)
    obj.index(list(held.values()))
    _apply(obj, held, SCRIPT)
    got = _answers(obj, k=200)
    for ranking in got.values():
        assert {d for d, _ in ranking} <= set(held)
        assert len(ranking) == len(held)  # every live document, once: an updated one's old row is gone
    fresh = _fresh(spec, tmp_path, held)
    _same(got, _answers(fresh, k=200))
    size = obj.efficiency_extra(10)
    want = fresh.efficiency_extra(10)
    if row == "splade":
        assert size["index_nnz"] > want["index_nnz"]  # the dead rows are still held, until a merge
        obj._merge()
        assert obj.efficiency_extra(10)["index_nnz"] == want["index_nnz"]
        _same(_answers(obj, k=200), _answers(fresh, k=200))
    else:
        assert size["index_vectors"] > want["index_vectors"]  # the store's dead rows stay, masked
        assert size["index_mb"] > want["index_mb"]


@pytest.mark.parametrize("row", ["splade", "colbert"])
def test_filters_cover_added_documents(models, tmp_path, row: str) -> None:
    """A filter's mask computed before an add is extended by the added documents' own matches."""
    spec = models[row]

    def tagged(docs, offset: int) -> list[Document]:
        return [d.model_copy(update={"metadata": {"half": "even" if (i + offset) % 2 else "odd"}})
                for i, d in enumerate(docs)]  # fmt: skip

    queries = [Query(id=q.id, text=q.text, metadata={"filter": {"half": "even"}}) for q in QUERIES]
    base, added = tagged(DOCS[:60], 0), tagged(DOCS[60:120], 60)
    obj = _build(spec, tmp_path)
    obj.index(base)
    _answers(obj, queries)  # the mask of {half: even}, over the base only
    obj.add(added)
    obj.delete([d.id for d in base[:10]])
    held = {d.id: d for d in base[10:] + added}
    got = _answers(obj, queries, k=100)
    even = {d.id for d in held.values() if d.metadata["half"] == "even"}
    for ranking in got.values():
        assert {d for d, _ in ranking} == even
    assert any(d in {x.id for x in added} for r in got.values() for d, _ in r)
    _same(got, _answers(_fresh(spec, tmp_path, held), queries, k=100))


def test_a_colbert_write_past_the_memory_limit_is_refused_and_changes_nothing(models, tmp_path) -> None:
    from harness.errors import InputError

    obj = _build(models["colbert"], tmp_path)
    obj.index(DOCS[:40])
    before = _answers(obj)
    obj.spec = obj.spec.model_copy(update={"memory_limit_mb": obj.efficiency_extra(10)["index_mb"] + 0.01})
    with pytest.raises(InputError) as e:
        obj.add(DOCS[40:])
    line = str(e.value)
    assert "\n" not in line and e.value.field == "memory_limit_mb"
    assert f"adding {len(DOCS) - 40} documents would take the token-vector store to" in line
    assert "over the memory limit of" in line
    assert _answers(obj) == before


def test_a_colbert_stage_does_not_change(models, tmp_path) -> None:
    from harness.errors import RetrieverError

    stage = _build({**models["colbert"], "of": "bm25"}, tmp_path)
    stage.index(DOCS[:20])
    with pytest.raises(RetrieverError, match="does not change in place"):
        stage.add(DOCS[20:22])


def test_the_exact_reference_of_a_written_colbert_row_copies_its_rows(models, tmp_path) -> None:
    """A fresh store over the documents held (the stream's exact reference) encodes none of them:
    every row is copied from the written row's store and segments, which hold the same texts."""
    held = {d.id: d for d in DOCS[:100]}
    obj = _build(models["colbert"], tmp_path)
    obj.index(list(held.values()))
    _apply(obj, held, SCRIPT)
    ref = _build(models["colbert"], tmp_path / "elsewhere")
    ref.index(list(held.values()))
    cost = ref.efficiency_extra(10)
    assert cost["cache_hit_rate"] == 1.0 and cost["encode_docs_per_s"] is None
    assert _answers(ref, k=100) == _answers(obj, k=100)


@pytest.mark.slow
def test_harness_stream_scores_splade_and_colbert_as_exact(models, tmp_path) -> None:
    cfg = tmp_path / "stream.yaml"
    rows = {"splade": models["splade"], "colbert": models["colbert"]}
    cfg.write_text(
        "dataset: demo\nmetrics: [ndcg@10, recall@100]\ndepth: 100\nretrievers:\n"
        + "".join(f"  {name}: {json.dumps(spec)}\n" for name, spec in rows.items())
        + "stream:\n  steps: 3\n  probes: 5\n  poll_s: 0.02\n  probe_deadline_s: 5\n",
        encoding="utf-8",
    )
    proc = harness_cli("stream", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "out" / "stream.json").read_text(encoding="utf-8"))
    assert doc["complete"] is True
    for name in rows:
        cps = doc["retrievers"][name]["checkpoints"]
        assert len(cps) == 5
        for c in cps:
            assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12), (name, c["checkpoint"])
            assert c["ghost_hits"]["hits"] == 0 and c["stale_hits"]["hits"] == 0, (name, c["checkpoint"])
        assert np.isfinite(cps[-1]["metrics"]["ndcg@10"])
