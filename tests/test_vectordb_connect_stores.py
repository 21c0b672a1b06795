"""Connect mode never writes a team's file-based store (Chroma, Qdrant local, LanceDB).

The test plays the team: it writes the demo corpus's embeddings (computed outside the harness) into
a Chroma store, a Qdrant local store and a LanceDB table with the engines' own clients, closes them,
and fingerprints every file of each folder (names and bytes). The harness connects with ``path:``,
searches (nDCG@10 equal to dense's flat index), and afterwards every folder is byte-for-byte what it
was. A ``path`` that does not exist is one line naming it (exit 2), and nothing is created there."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import encode_corpus

pytestmark = pytest.mark.slow


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: relative name -> sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def stores(demo_dataset, tmp_path_factory):
    """The demo corpus in a team's Chroma, Qdrant local and LanceDB stores (clients closed)."""
    import chromadb
    import lancedb
    import pyarrow as pa
    from chromadb.config import Settings
    from qdrant_client import QdrantClient, models

    from retrievers.vectordb.qdrant import _fast_local_writes

    corpus = demo_dataset.corpus
    emb = encode_corpus(corpus)
    ids = [d.id for d in corpus]
    root = tmp_path_factory.mktemp("team-stores")

    chroma = chromadb.PersistentClient(path=str(root / "chroma"), settings=Settings(anonymized_telemetry=False))
    col = chroma.create_collection("team", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=ids, embeddings=emb, metadatas=[{"category": ["a", "b"][i % 2]} for i in range(len(ids))])
    del col
    chroma.close() if hasattr(chroma, "close") else None

    q = QdrantClient(path=str(root / "qdrant"))
    q.create_collection("team", vectors_config=models.VectorParams(size=emb.shape[1], distance=models.Distance.COSINE))
    _fast_local_writes(q, "team")  # local mode commits every point to SQLite: the setup's slowest part
    q.upsert(
        "team", models.Batch(ids=list(range(len(ids))), vectors=emb.tolist(), payloads=[{"doc_key": d} for d in ids])
    )
    q.close()

    lancedb.connect(str(root / "lance")).create_table(
        "team",
        data=pa.table(
            {"id": ids, "vector": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), emb.shape[1])}
        ),
    )
    return root


def test_connect_reads_file_stores_byte_for_byte_unchanged(stores, demo_dataset, cache_dir, tmp_path):
    from harness.api import benchmark

    before = {name: fingerprint(stores / name) for name in ("chroma", "qdrant", "lance")}
    specs = {
        "dense": {"type": "dense"},
        "chroma": {"type": "chroma", "mode": "connect", "path": str(stores / "chroma"), "collection": "team"},
        "qdrant": {
            "type": "qdrant",
            "mode": "connect",
            "path": str(stores / "qdrant"),
            "collection": "team",
            "id_field": "doc_key",
        },
        "lancedb": {"type": "lancedb", "mode": "connect", "path": str(stores / "lance"), "collection": "team"},
    }
    for spec in specs.values():
        if spec["type"] != "dense":
            spec["work_dir"] = str(tmp_path / "work")
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=3, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    for name in ("chroma", "qdrant", "lancedb"):
        assert res.summary[name]["ndcg@10"] == pytest.approx(res.summary["dense"]["ndcg@10"], abs=1e-4), name
        assert res.efficiency[name]["rows"] == len(demo_dataset.corpus)
    del res
    import gc

    gc.collect()  # the retrievers are freed: their copies go with the work folders
    after = {name: fingerprint(stores / name) for name in ("chroma", "qdrant", "lance")}
    for name in before:
        changed = sorted(
            k for k in before[name].keys() | after[name].keys() if before[name].get(k) != after[name].get(k)
        )
        print(f"{name}: {len(before[name])} files, changed: {changed}")
        assert after[name] == before[name], (name, changed)
    assert not list((tmp_path / "work").iterdir())  # the copies were removed


@pytest.mark.parametrize("engine", ["chroma", "qdrant", "lancedb"])
def test_connect_to_a_missing_path_is_one_line_and_creates_nothing(engine, tmp_path, capsys):
    from harness.cli import main

    missing = tmp_path / "team" / "store"
    config = tmp_path / "c.yaml"
    config.write_text(
        "dataset: demo\n"
        f"retrievers:\n  team: {{type: {engine}, mode: connect, path: '{missing}', collection: team}}\n"
        "metrics: [ndcg@10]\n"
    )
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    print(err)
    assert len(err) == 1 and str(missing) in err[0] and "no store" in err[0]
    assert not missing.exists() and not missing.parent.exists()
    assert not (tmp_path / "out").exists()


def test_connect_to_a_folder_that_is_not_a_store_is_refused(tmp_path, cache_dir):
    from harness.errors import InputError
    from harness.registry import BuildContext, spec_class

    for engine in ("chroma", "qdrant"):
        folder = tmp_path / engine
        folder.mkdir()
        spec = spec_class(engine).model_validate(
            {"type": engine, "mode": "connect", "path": str(folder), "collection": "team"}
        )
        with pytest.raises(InputError, match="is not a"):
            spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
        assert list(folder.iterdir()) == []


def test_a_copy_without_room_is_refused_before_anything_is_written(stores, tmp_path, monkeypatch):
    """The free-space check: the work folder's disk reported too small for the store."""
    import shutil

    from harness.errors import InputError
    from retrievers.vectordb import store_copy

    real = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(store_copy.shutil, "disk_usage", lambda p: real._replace(free=1024))
    with pytest.raises(InputError, match=r"MB free: set work_dir"):
        store_copy.copy_store("chroma", stores / "chroma", tmp_path)
    assert list(tmp_path.iterdir()) == []


def big_int_dataset(demo, flt):
    from harness.model import Document, GoldenDataset, Query

    docs = [
        Document(id=d.id, title=d.title, text=d.text, metadata={"big": 2**53 + i % 4})
        for i, d in enumerate(demo.corpus)
    ]
    queries = [Query(id=q.id, text=q.text, metadata={"filter": flt}) for q in demo.queries[:12]]
    qrels = {q.id: demo.qrels[q.id] for q in queries if q.id in demo.qrels}
    return GoldenDataset.build("demo-big", docs, queries, qrels)


def test_integers_beyond_2_53_are_exact_or_refused_in_every_engine(demo_dataset, cache_dir):
    """Documents hold 2^53 + 0..3; the filter asks for 2^53. Chroma (numbers compared as floats)
    refuses it with its reason before any search; every other engine returns only documents equal to it."""
    from harness.api import benchmark
    from harness.filters import query_filter

    ds = big_int_dataset(demo_dataset, {"big": 2**53})
    specs = {"dense": {"type": "dense"}, "bm25": {"type": "bm25"}}
    specs |= {e: {"type": e} for e in ("lancedb", "qdrant", "chroma")}
    res = benchmark(ds, specs, cache_dir=cache_dir, latency_queries=2, warmup_queries=1, metrics=["ndcg@10"])
    print(res.failures)
    assert set(res.failures) == {"chroma"}
    assert "beyond 2^53" in str(res.failures["chroma"]) and "not exact in chroma" in str(res.failures["chroma"])
    meta = {d.id: d.metadata for d in ds.corpus}
    for name, run in res.runs.items():
        for q in ds.queries:
            got = run.ranking(q.id)
            assert got and all(query_filter(q).matches(meta[d]) for d, _ in got), (name, q.id)


def test_a_filter_integer_beyond_64_bits_is_refused_before_any_work(demo_dataset):
    from harness.errors import InputError
    from harness.filters import check_filters

    for flt in ({"big": 2**70}, {"big": {"gte": -(2**64)}}, {"big": {"in": [1, 2**63]}}):
        with pytest.raises(InputError, match="outside the 64-bit integer range") as e:
            check_filters(big_int_dataset(demo_dataset, flt))
        assert len(str(e.value).splitlines()) == 1 and "query 'q01'" in str(e.value)
