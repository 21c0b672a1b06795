"""Vector databases as retrievers, each engine started by the test itself (LanceDB, Chroma and Qdrant
embedded; pgvector in a real PostgreSQL from the ``pgserver`` wheel on a unix socket).

On the demo corpus with metadata and per-query filters: every engine at its exact setting ranks as
dense's flat index does (nDCG@10 equal to 1e-6), every returned document satisfies its query's
filter, ANN indexes report ann_recall against exact filtered search, and the store a run built is
gone (and PostgreSQL stopped) once the retriever is closed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.filters import query_filter
from harness.model import Document, GoldenDataset, Query

pytestmark = pytest.mark.slow

ENGINES = ["lancedb", "chroma", "qdrant", "pgvector"]
FILTERS = [
    None,
    {"group": "g1"},
    {"year": {"gte": 2003, "lte": 2006}},
    {"group": {"in": ["g0", "g2"]}, "flag": True},
    {"weight": 1.5},
    {"year": {"gt": 2001.5}, "group": "g0's"},
]


def filtered_demo(demo: GoldenDataset) -> GoldenDataset:
    """The demo dataset with metadata of every kind on its documents and a filter on 5 queries in 6."""
    groups = ["g0's", "g1", "g2"]  # a quote in a value: SQL engines must bind or escape it
    docs = [
        Document(
            id=d.id,
            title=d.title,
            text=d.text,
            metadata={"group": groups[i % 3], "year": 2000 + i % 10, "weight": (i % 7) / 2, "flag": i % 2 == 0},
        )
        for i, d in enumerate(demo.corpus)
    ]
    queries = [
        Query(id=q.id, text=q.text, metadata={"filter": FILTERS[i % len(FILTERS)]} if FILTERS[i % len(FILTERS)] else {})
        for i, q in enumerate(demo.queries)
    ]
    return GoldenDataset.build("demo-filtered", docs, queries, demo.qrels)


@pytest.fixture(scope="module")
def fdemo(demo_dataset):
    return filtered_demo(demo_dataset)


def violations(ds: GoldenDataset, run) -> int:
    meta = {d.id: d.metadata for d in ds.corpus}
    bad = 0
    for q in ds.queries:
        f = query_filter(q)
        if f is not None:
            bad += sum(not f.matches(meta[d]) for d, _ in run.ranking(q.id))
    return bad


def test_every_engine_exact_equals_dense_flat_and_honours_filters(fdemo, cache_dir):
    from harness.api import benchmark

    specs = {"dense": {"type": "dense"}, "bm25": {"type": "bm25"}}
    specs |= {e: {"type": e} for e in ENGINES}
    res = benchmark(fdemo, specs, cache_dir=cache_dir, latency_queries=5, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    dense = res.summary["dense"]["ndcg@10"]
    for name in specs:
        assert violations(fdemo, res.runs[name]) == 0, name
    # the filters bite: some filtered queries return fewer than the 100 asked (few docs admitted)
    assert min(int(n) for n in res.runs["dense"].lengths) < 100
    for e in ENGINES:
        eff = res.efficiency[e]
        assert eff["index_mb"] > 0 and eff["build_seconds"] > 0 and eff["latency_ms_p95"] is not None
        assert eff["ann_recall@100"] >= (0.95 if e == "chroma" else 0.999), e
        if e != "chroma":  # chroma has no exact search: its HNSW is checked by recall alone
            assert res.summary[e]["ndcg@10"] == pytest.approx(dense, abs=1e-6), e
    assert "index MB" in res.table() and "ann recall@100" in res.table()


@pytest.mark.parametrize(
    ("engine", "index"), [("lancedb", "hnsw"), ("lancedb", "ivf"), ("pgvector", "hnsw"), ("pgvector", "ivf")]
)
def test_ann_indexes_filter_and_report_recall_against_exact_filtered_search(fdemo, cache_dir, engine, index):
    from harness.registry import BuildContext, spec_class

    spec = spec_class(engine).model_validate({"type": engine, "index": index})
    r = spec.build(BuildContext(cache_dir=cache_dir, depth=20, show_progress=False))
    try:
        r.index(fdemo.corpus)
        run = r.search(fdemo.queries, 20)
        assert violations(fdemo, run) == 0
        extra = r.efficiency_extra(20)
        assert extra["ann_recall@20"] >= 0.8
        assert r.params()["engine"]["index_params"]
    finally:
        r.close()


def test_build_store_is_removed_and_postgres_stopped_on_close(fdemo, cache_dir, tmp_path):
    from harness.registry import BuildContext, spec_class

    spec = spec_class("pgvector").model_validate({"type": "pgvector", "work_dir": str(tmp_path)})
    r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
    r.index(fdemo.corpus[:20])
    pid = r.driver.server.get_pid()
    assert pid and Path(f"/proc/{pid}").exists()
    assert list(tmp_path.iterdir())
    r.close()
    assert not list(tmp_path.iterdir())
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_missing_extra_names_the_pip_command(monkeypatch, tmp_path):
    from harness.registry import spec_class

    spec = spec_class("lancedb").model_validate({"type": "lancedb"})
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lancedb" else real(name, *a))
    with pytest.raises(InputError, match=r"pip install 'retrieval-harness\[lancedb\]'"):
        spec.preflight(tmp_path)


def test_options_are_checked_when_the_config_is_read():
    from pydantic import ValidationError

    from harness.registry import spec_class

    with pytest.raises(ValidationError, match="chroma supports hnsw"):
        spec_class("chroma").model_validate({"type": "chroma", "index": "none"})
    with pytest.raises(ValidationError, match="connect mode needs the table"):
        spec_class("lancedb").model_validate({"type": "lancedb", "mode": "connect", "path": "x"})
    with pytest.raises(ValidationError, match="qdrant supports none, hnsw"):
        spec_class("qdrant").model_validate({"type": "qdrant", "index": "ivf"})
    with pytest.raises(ValidationError, match=r"local mode .* always searches exactly"):
        spec_class("qdrant").model_validate({"type": "qdrant", "index": "hnsw"})
    dumped = spec_class("pgvector").model_validate({"type": "pgvector", "dsn": "postgresql://u:pw@h/db"}).redacted()
    assert dumped["dsn"] == "<set>"


hostile = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(hostile, min_size=1, max_size=8), probe=hostile, pick=st.integers(0, 7))
def test_lancedb_sql_filter_quotes_hostile_strings(tmp_path_factory, values, probe, pick):
    """Strings with quotes, backticks, backslashes or any Unicode reach LanceDB's SQL filter as
    literals: the rows it returns are exactly the ones the reference filter admits."""
    import lancedb
    import numpy as np
    import pyarrow as pa

    from harness.filters import parse_filter
    from retrievers.vectordb.lance import where_clause

    db = lancedb.connect(str(tmp_path_factory.mktemp("lance")))
    n = len(values)
    emb = np.eye(n, 4, dtype=np.float32) + 0.1
    t = db.create_table(
        "t",
        data=pa.table(
            {
                "id": [str(i) for i in range(n)],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), 4),
                "m0": values,
            }
        ),
    )
    target = values[pick % n] if pick < n else probe
    for raw in ({"s": target}, {"s": {"in": [target, probe]}}):
        flt = parse_filter(raw)
        sql = where_clause(flt, lambda f: ("m0", "str"))
        got = t.search(emb[0]).where(sql, prefilter=True).bypass_vector_index().limit(n).select(["id"]).to_arrow()
        want = {str(i) for i, v in enumerate(values) if flt.matches({"s": v})}
        assert set(got.column("id").to_pylist()) == want, (raw, sql)


def test_scifact_config_validates():
    """configs/scifact-vectordb.yaml (the measured table in docs/vector-databases.md) loads and names
    the rows the docs show, every engine's spec checked (extras installed, options valid)."""
    from harness.config import load_config

    config = load_config(Path(__file__).parent.parent / "configs" / "scifact-vectordb.yaml")
    specs = config.specs()
    assert {s.type for s in specs.values()} == {"dense", "lancedb", "pgvector", "qdrant", "chroma"}
    assert [specs[n].index for n in ("lancedb", "pgvector", "qdrant")] == ["none"] * 3
    doc = (Path(__file__).parent.parent / "docs" / "vector-databases.md").read_text()
    assert "configs/scifact-vectordb.yaml" in doc
