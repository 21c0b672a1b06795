"""Connect mode: the harness reads a team's own table and changes nothing.

The test plays the team: it starts a real PostgreSQL with pgvector (``pgserver``, unix socket) and a
LanceDB folder, creates tables with its own schema (``doc_key``/``emb`` instead of ``id``/``vector``,
extra columns), and fills them with embeddings computed outside the harness (sentence-transformers
called directly, same model). The harness then connects to both: nDCG@10 equals dense's flat index to
1e-4, filters on the team's columns hold, and afterwards each table's row count and checksum are
what they were."""

from __future__ import annotations

import hashlib

import pytest

from harness.filters import query_filter
from harness.model import Document, GoldenDataset, Query
from tests.conftest import encode_corpus, team_postgres

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def team(demo_dataset, tmp_path_factory):
    """The demo corpus in a team's pgvector table and LanceDB table; yields what connect needs."""
    import lancedb
    import psycopg
    import pyarrow as pa

    corpus = demo_dataset.corpus
    emb = encode_corpus(corpus)
    cats = ["brewing", "gear", "beans"]
    rows = [(d.id, d.text, emb[i], cats[i % 3], 2000 + i % 10) for i, d in enumerate(corpus)]

    root = tmp_path_factory.mktemp("team")
    server, dsn = team_postgres(
        root,
        "CREATE TABLE team_docs (doc_key text PRIMARY KEY, body text, emb vector(384), category text, "
        "published int, note text DEFAULT 'kept')",
        "COPY team_docs (doc_key, body, emb, category, published) FROM STDIN",
        ((key, body, "[" + ",".join(map(repr, v.tolist())) + "]", cat, year) for key, body, v, cat, year in rows),
    )
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE INDEX ON team_docs USING hnsw (emb vector_cosine_ops)")

    db = lancedb.connect(str(root / "lance"))
    db.create_table(
        "team_docs",
        data=pa.table(
            {
                "doc_key": [r[0] for r in rows],
                "body": [r[1] for r in rows],
                "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1), pa.float32()), emb.shape[1]),
                "category": [r[3] for r in rows],
                "published": pa.array([r[4] for r in rows], pa.int64()),
            }
        ),
    )
    yield {"dsn": dsn, "lance": root / "lance", "cats": cats, "rows": rows, "root": root}
    server.cleanup()


def pg_state(dsn: str) -> tuple[int, str]:
    import psycopg

    with psycopg.connect(dsn) as c:
        n, digest = c.execute(
            "SELECT count(*), md5(string_agg(t::text, E'\\n' ORDER BY doc_key)) FROM team_docs t"
        ).fetchone()
    return int(n), digest


def lance_state(path) -> tuple[int, int, str]:
    import lancedb

    t = lancedb.connect(str(path)).open_table("team_docs")
    table = t.to_arrow().sort_by("doc_key")
    h = hashlib.sha256()
    for col in table.column_names:
        h.update(repr(table.column(col).to_pylist()).encode())
    files = hashlib.sha256()
    for p in sorted((path / "team_docs.lance").rglob("*")):
        if p.is_file():
            files.update(str(p.relative_to(path)).encode() + p.read_bytes())
    return t.count_rows(), t.version, h.hexdigest() + files.hexdigest()


def with_filters(ds: GoldenDataset, cats: list[str]) -> GoldenDataset:
    """Document metadata as the team's columns hold it, and a filter on every third query."""
    docs = [
        Document(id=d.id, title=d.title, text=d.text, metadata={"category": cats[i % 3], "published": 2000 + i % 10})
        for i, d in enumerate(ds.corpus)
    ]
    flts = [None, None, {"category": {"in": ["gear", "beans"]}, "published": {"gte": 2002}}]
    qs = [
        Query(id=q.id, text=q.text, metadata={"filter": flts[i % 3]} if flts[i % 3] else {})
        for i, q in enumerate(ds.queries)
    ]
    return GoldenDataset.build(ds.name, docs, qs, ds.qrels)


def test_connect_reads_team_tables_and_changes_nothing(team, demo_dataset, cache_dir):
    from harness.api import benchmark

    before_pg, before_lance = pg_state(team["dsn"]), lance_state(team["lance"])
    common = {"mode": "connect", "collection": "team_docs", "id_field": "doc_key", "vector_field": "emb"}
    specs = {
        "dense": {"type": "dense"},
        "pgvector": {"type": "pgvector", "dsn": team["dsn"], **common},
        "lancedb": {"type": "lancedb", "path": str(team["lance"]), **common},
    }
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=5, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    for e in ("pgvector", "lancedb"):
        print(f"connect {e}: ndcg@10 {res.summary[e]['ndcg@10']!r} vs dense {res.summary['dense']['ndcg@10']!r}")
        assert res.summary[e]["ndcg@10"] == pytest.approx(res.summary["dense"]["ndcg@10"], abs=1e-4), e
        assert res.efficiency[e]["rows"] == len(demo_dataset.corpus)
        assert res.efficiency[e]["ann_recall@100"] >= 0.99
        assert res.efficiency[e]["encode_seconds"] == 0.0  # the corpus is the team's: never embedded
    assert "<set>" in str(res.manifest["retrievers"]["pgvector"]["spec"]["dsn"])  # the dsn is not recorded

    fds = with_filters(demo_dataset, team["cats"])
    res = benchmark(fds, specs, cache_dir=cache_dir, latency_queries=5, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    meta = {d.id: d.metadata for d in fds.corpus}
    for name, run in res.runs.items():
        for q in fds.queries:
            f = query_filter(q)
            assert f is None or all(f.matches(meta[d]) for d, _ in run.ranking(q.id)), (name, q.id)
    for e in ("pgvector", "lancedb"):
        assert res.summary[e]["ndcg@10"] == pytest.approx(res.summary["dense"]["ndcg@10"], abs=1e-4), e

    after_pg, after_lance = pg_state(team["dsn"]), lance_state(team["lance"])
    print(f"before/after: pgvector {before_pg} / {after_pg}; lancedb {before_lance} / {after_lance}")
    assert pg_state(team["dsn"]) == before_pg
    assert lance_state(team["lance"]) == before_lance


def test_pgvector_connect_cannot_write(team, cache_dir):
    import psycopg

    from harness.registry import BuildContext, spec_class

    spec = spec_class("pgvector").model_validate(
        {
            "type": "pgvector",
            "mode": "connect",
            "dsn": team["dsn"],
            "collection": "team_docs",
            "id_field": "doc_key",
            "vector_field": "emb",
        }
    )
    r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
    try:
        assert r.driver.connect() > 0
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            r.driver.conn.execute("DELETE FROM team_docs")
        r.driver.conn.rollback()
    finally:
        r.close()
    assert pg_state(team["dsn"])[0] > 0


def test_connect_names_a_missing_column(team, cache_dir):
    from harness.errors import InputError
    from harness.registry import BuildContext, spec_class

    for engine, where in (("pgvector", {"dsn": team["dsn"]}), ("lancedb", {"path": str(team["lance"])})):
        spec = spec_class(engine).model_validate(
            {
                "type": engine,
                "mode": "connect",
                "collection": "team_docs",
                "id_field": "doc_key",
                "vector_field": "vec",
                **where,
            }
        )
        r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
        try:
            with pytest.raises(InputError, match="no column 'vec'"):
                r.driver.connect()
        finally:
            r.close()


def test_connect_qdrant_and_chroma_collections(team, demo_dataset, cache_dir):
    """A Qdrant local collection with a named vector and the id in a payload key, and a Chroma
    collection, both made by the team: nDCG@10 equals dense's, counts unchanged afterwards."""
    import chromadb
    from chromadb.config import Settings
    from qdrant_client import QdrantClient, models

    rows = team["rows"]
    qpath = team["root"] / "qdrant"
    client = QdrantClient(path=str(qpath))
    client.create_collection(
        "team", vectors_config={"emb": models.VectorParams(size=384, distance=models.Distance.COSINE)}
    )
    client.upsert(
        "team",
        [
            models.PointStruct(id=i, vector={"emb": r[2].tolist()}, payload={"doc_key": r[0], "category": r[3]})
            for i, r in enumerate(rows)
        ],
    )
    client.close()
    cpath = team["root"] / "chroma"
    chroma = chromadb.PersistentClient(path=str(cpath), settings=Settings(anonymized_telemetry=False))
    col = chroma.create_collection("team", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=[r[0] for r in rows], embeddings=[r[2] for r in rows], metadatas=[{"category": r[3]} for r in rows])
    before = col.count()

    from harness.api import benchmark

    specs = {
        "dense": {"type": "dense"},
        "qdrant": {
            "type": "qdrant",
            "mode": "connect",
            "path": str(qpath),
            "collection": "team",
            "id_field": "doc_key",
            "vector_field": "emb",
        },
        "chroma": {"type": "chroma", "mode": "connect", "path": str(cpath), "collection": "team"},
    }
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=5, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    for e in ("qdrant", "chroma"):
        print(f"connect {e}: ndcg@10 {res.summary[e]['ndcg@10']!r} vs dense {res.summary['dense']['ndcg@10']!r}")
        assert res.summary[e]["ndcg@10"] == pytest.approx(res.summary["dense"]["ndcg@10"], abs=1e-4), e
        assert res.efficiency[e]["rows"] == len(rows)
    assert col.count() == before
    client = QdrantClient(path=str(qpath))
    assert client.count("team", exact=True).count == len(rows)
    client.close()


def test_pgvector_build_mode_on_a_team_server_drops_its_own_table(team, demo_dataset, cache_dir):
    """With a ``dsn`` in build mode the harness writes a table of its own there and drops it after."""
    import psycopg

    from harness.registry import BuildContext, spec_class

    def tables() -> set[str]:
        with psycopg.connect(team["dsn"]) as c:
            return {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}

    before = tables()
    spec = spec_class("pgvector").model_validate({"type": "pgvector", "dsn": team["dsn"], "index": "hnsw"})
    r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
    try:
        r.index(demo_dataset.corpus[:30])
        assert len(r.search(demo_dataset.queries[:3], 5).ranking(demo_dataset.queries[0].id)) == 5
        made = tables() - before
        assert len(made) == 1 and next(iter(made)).startswith("harness_")
        assert r.driver.server is None  # no PostgreSQL of its own
    finally:
        r.close()
    assert tables() == before
