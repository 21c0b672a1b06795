"""pgvector connect mode searches with its own settings, in a session that cannot write.

The test plays a team: a real PostgreSQL (``pgserver``) with a table of the demo corpus's embeddings
(computed outside the harness) and an HNSW index of its own. Connected with ``index: none`` the
harness must ignore that index and rank exactly as FAISS flat (``dense``) does: the same ids (ties
within 1e-6 aside), metrics to 1e-9, every query answered to full depth. With ``index: hnsw`` the
``ef_search`` it is given must reach the searches (pgvector returns at most ef_search rows). And the
team's table is untouched: same checksum, same ``n_tup_ins/upd/del`` in ``pg_stat_user_tables``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import encode_corpus, team_postgres

pytestmark = pytest.mark.slow

DEPTH = 100


@pytest.fixture(scope="module")
def team_pg(demo_dataset, tmp_path_factory):
    import psycopg

    from retrievers.vectordb.pgvector import vector_literal

    corpus = demo_dataset.corpus
    emb = encode_corpus(corpus)
    server, dsn = team_postgres(
        tmp_path_factory.mktemp("team-pg"),
        "CREATE TABLE team_docs (doc_key text PRIMARY KEY, emb vector(384), category text) "
        "WITH (autovacuum_enabled = off)",
        "COPY team_docs (doc_key, emb, category) FROM STDIN",
        ((d.id, vector_literal(emb[i]), ["a", "b"][i % 2]) for i, d in enumerate(corpus)),
    )
    with psycopg.connect(dsn, autocommit=True) as c:
        # a table with churn, not yet vacuumed: its heap is large, so PostgreSQL's planner prefers the
        # HNSW index (as it does on any table of a few thousand rows) for an ORDER BY ... LIMIT
        c.execute(
            "INSERT INTO team_docs SELECT 'old' || g || doc_key, emb, category FROM team_docs, generate_series(1, 15) g"
        )
        c.execute("DELETE FROM team_docs WHERE doc_key LIKE 'old%'")
        c.execute("CREATE INDEX ON team_docs USING hnsw (emb vector_cosine_ops)")
        c.execute("ANALYZE team_docs")
    yield {"dsn": dsn, "emb": emb}
    server.cleanup()


def table_state(dsn: str) -> tuple[str, tuple[int, int, int]]:
    """The table's checksum and its write counters (stats flushed by ended sessions)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        digest = c.execute("SELECT md5(string_agg(t::text, E'\\n' ORDER BY doc_key)) FROM team_docs t").fetchone()[0]
        c.execute("SELECT pg_stat_clear_snapshot()")
        counts = c.execute(
            "SELECT n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = 'team_docs'"
        ).fetchone()
    return digest, tuple(int(x) for x in counts)


def test_connect_index_none_is_exact_and_ef_search_reaches_the_searches(team_pg, demo_dataset, cache_dir):
    from harness.api import benchmark

    team_pg = team_pg["dsn"]
    before = table_state(team_pg)
    common = {"type": "pgvector", "mode": "connect", "dsn": team_pg, "collection": "team_docs"}
    common |= {"id_field": "doc_key", "vector_field": "emb"}
    specs = {
        "dense": {"type": "dense"},
        "exact": {**common, "index": "none"},
        "ef10": {**common, "index": "hnsw", "search_params": {"ef_search": 10}},
        "ef400": {**common, "index": "hnsw", "search_params": {"ef_search": 400}},
    }
    metrics = ["ndcg@10", "recall@100", "map@100", "mrr@10"]
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=3, warmup_queries=1, metrics=metrics)
    assert not res.failures, res.failures

    dense, exact = res.runs["dense"], res.runs["exact"]
    for q in demo_dataset.queries:
        want, got = dense.ranking(q.id), exact.ranking(q.id)
        assert len(got) == len(want) == DEPTH, (q.id, len(got))  # every query to full depth
        assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-6), q.id  # rank by rank
        cut = want[-1][1]
        differ = {d for d, _ in want} ^ {d for d, _ in got}
        # ids that differ are ties (at the cut, or reordered within 1e-6)
        scores = dict(want) | dict(got)
        assert all(abs(scores[d] - cut) <= 1e-6 for d in differ), (q.id, differ)
    for m in metrics:
        print(f"{m}: exact {res.summary['exact'][m]!r} dense {res.summary['dense'][m]!r}")
        assert res.summary["exact"][m] == pytest.approx(res.summary["dense"][m], abs=1e-9), m
    assert res.efficiency["exact"][f"ann_recall@{DEPTH}"] == 1.0

    r10, r400 = res.efficiency["ef10"][f"ann_recall@{DEPTH}"], res.efficiency["ef400"][f"ann_recall@{DEPTH}"]
    print(f"ann_recall@{DEPTH}: ef_search 10 -> {r10}, ef_search 400 -> {r400}")
    assert max(len(res.runs["ef10"].ranking(q.id)) for q in demo_dataset.queries) <= 10  # ef_search caps rows
    assert r10 <= 0.1 and r400 >= 0.95
    assert all(len(res.runs["ef400"].ranking(q.id)) == DEPTH for q in demo_dataset.queries)

    assert table_state(team_pg) == before  # not a row written, updated or deleted


def test_connect_session_is_read_only_even_in_autocommit(team_pg, cache_dir):
    """psycopg's ``read_only`` only changes BEGIN: the session itself must refuse writes."""
    import psycopg

    from harness.registry import BuildContext, spec_class

    team_pg = team_pg["dsn"]
    spec = spec_class("pgvector").model_validate(
        {
            "type": "pgvector",
            "mode": "connect",
            "dsn": team_pg,
            "collection": "team_docs",
            "id_field": "doc_key",
            "vector_field": "emb",
        }
    )
    before = table_state(team_pg)
    r = spec.build(BuildContext(cache_dir=cache_dir, show_progress=False))
    try:
        r.driver.connect()
        conn = r.driver.conn
        conn.rollback()
        conn.autocommit = True
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        for statement in ("DELETE FROM team_docs", "UPDATE team_docs SET category = 'x'", "CREATE TABLE t (x int)"):
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute(statement)
    finally:
        r.close()
    assert table_state(team_pg) == before


def team_table(dsn: str, name: str, rows: list[tuple[str, np.ndarray | None]]) -> None:
    """A team table without a key: the same id may be written twice, a vector may be NULL."""
    import psycopg

    from retrievers.vectordb.pgvector import vector_literal

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {name} (doc_key text, emb vector(384))")
        with c.cursor().copy(f"COPY {name} (doc_key, emb) FROM STDIN") as cp:
            for key, v in rows:
                cp.write_row((key, None if v is None else vector_literal(v)))


def connect_spec(dsn: str, table: str, **kw):
    return {"type": "pgvector", "mode": "connect", "dsn": dsn, "collection": table, "id_field": "doc_key"} | {
        "vector_field": "emb",
        **kw,
    }


def test_duplicate_ids_and_null_vectors_are_found_before_any_search(team_pg, demo_dataset, cache_dir):
    """A table holding 30 ids twice (the second row: another document's vector, so it would push a
    document out of the top k) is refused with the count and the first ids; ``keep_best`` keeps each
    id's best row: every query full depth, distinct ids, exact against the store's own vectors. NULL
    vectors are refused at connect, not after the whole search."""
    from harness.api import benchmark

    dsn, emb = team_pg["dsn"], team_pg["emb"]
    ids = [d.id for d in demo_dataset.corpus]
    rows = [(d, emb[i]) for i, d in enumerate(ids)]
    team_table(dsn, "team_dups", rows + [(ids[i], emb[i + 1]) for i in range(30)])
    team_table(dsn, "team_nulls", rows[:-3] + [(d, None) for d in ids[-3:]])
    specs = {"dups": connect_spec(dsn, "team_dups"), "nulls": connect_spec(dsn, "team_nulls")}
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=2, warmup_queries=1, metrics=["ndcg@10"])
    print(res.failures)
    assert set(res.failures) == {"dups", "nulls"}
    dups = str(res.failures["dups"])
    assert "30 id(s) are held by more than one row" in dups and repr(ids[0]) in dups and "keep_best" in dups
    nulls = str(res.failures["nulls"])
    assert "3 row(s) have no vector" in nulls and repr(ids[-3]) in nulls

    specs = {"kept": connect_spec(dsn, "team_dups", duplicate_ids="keep_best")}
    res = benchmark(demo_dataset, specs, cache_dir=cache_dir, latency_queries=2, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    kept = res.runs["kept"]
    for q in demo_dataset.queries:
        got = [d for d, _ in kept.ranking(q.id)]
        assert len(got) == len(set(got)) == DEPTH, q.id
    assert res.efficiency["kept"][f"ann_recall@{DEPTH}"] == 1.0


def test_a_filter_on_a_column_the_table_lacks_is_refused_before_any_search(team_pg, demo_dataset, cache_dir):
    from harness.api import benchmark
    from harness.model import Document, GoldenDataset, Query

    docs = [Document(id=d.id, title=d.title, text=d.text, metadata={"lang": "en"}) for d in demo_dataset.corpus]
    queries = [Query(id=q.id, text=q.text, metadata={"filter": {"lang": "en"}}) for q in demo_dataset.queries]
    ds = GoldenDataset.build("demo-lang", docs, queries, demo_dataset.qrels)
    spec = connect_spec(team_pg["dsn"], "team_docs")
    res = benchmark(ds, {"team": spec}, cache_dir=cache_dir, latency_queries=2, warmup_queries=1, metrics=["ndcg@10"])
    message = str(res.failures["team"])
    print(message)
    assert "names field 'lang': table 'team_docs' has no such column" in message
    assert f"query {demo_dataset.queries[0].id!r}" in message
