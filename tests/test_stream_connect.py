"""``harness stream`` over a team's vector database (``mode: connect``): it streams a harness-owned copy of
the team's collection, and the team's store is unchanged afterwards.

The test plays the team: the demo corpus's embeddings, computed by the harness's own encoder (so a
build-mode row over the same corpus holds the very same float32 vectors), go into a LanceDB table and a
Qdrant local collection with the team's column names, and into a pgvector table of a real PostgreSQL
(``pgserver``). Each connected row streams beside a build-mode row of the same engine: at every
checkpoint its figures are the build row's (same vectors, same writes), its engine figures equal its
exact reference, and afterwards every file of the team's folders and the pgvector table's checksum are
what they were, and the copy (folders, the ``harness_<random>`` table) is gone."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.errors import InputError
from harness.model import Corpus
from harness.stream import StreamOptions, run_stream
from tests.conftest import team_postgres
from tests.test_vectordb_connect import pg_state
from tests.test_vectordb_connect_stores import fingerprint

pytestmark = pytest.mark.slow

STREAM = "stream:\n  steps: 3\n  probes: 5\n  poll_s: 0.02\n  probe_deadline_s: 5\n"
ENGINES = ("lancedb", "qdrant", "pgvector")


def harness_vectors(corpus, cache_dir: Path) -> np.ndarray:
    """The corpus as the harness's encoder embeds it, read back from its cache: the bits a build-mode row
    gets when it embeds the same documents."""
    from retrievers.vectordb.lance import LanceDBSpec

    enc = LanceDBSpec().make_encoder(cache_dir, False)
    enc.encode_documents(Corpus.of(corpus), progress=False)
    return np.ascontiguousarray(enc.encode_documents(Corpus.of(corpus), progress=False), dtype=np.float32)


@pytest.fixture(scope="module")
def team(demo_dataset, cache_dir, tmp_path_factory):
    """The demo corpus in a team's LanceDB table, Qdrant local collection and pgvector table, under the
    team's own names (``doc_key``/``emb``, an extra column), clients closed."""
    import lancedb
    import pyarrow as pa
    from qdrant_client import QdrantClient, models

    corpus = demo_dataset.corpus
    emb = harness_vectors(corpus, cache_dir)
    ids = [d.id for d in corpus]
    root = tmp_path_factory.mktemp("stream-team")
    lancedb.connect(str(root / "lance")).create_table(
        "team_docs",
        data=pa.table(
            {
                "doc_key": ids,
                "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1), pa.float32()), emb.shape[1]),
                "note": ["kept"] * len(ids),
            }
        ),
    )
    q = QdrantClient(path=str(root / "qdrant"))
    q.create_collection("team", vectors_config=models.VectorParams(size=emb.shape[1], distance=models.Distance.COSINE))
    q.upsert("team", models.Batch(ids=list(range(len(ids))), vectors=emb.tolist(),
                                  payloads=[{"doc_key": d} for d in ids]))  # fmt: skip
    q.close()
    (root / "pg").mkdir()
    server, dsn = team_postgres(
        root / "pg",
        "CREATE TABLE team_docs (doc_key text PRIMARY KEY, emb vector(384), note text DEFAULT 'kept')",
        "COPY team_docs (doc_key, emb) FROM STDIN",
        ((d, "[" + ",".join(map(repr, v.tolist())) + "]") for d, v in zip(ids, emb)),
    )
    yield {"root": root, "dsn": dsn, "lance": root / "lance", "qdrant": root / "qdrant"}
    server.cleanup()


def _rows(team: dict, work: Path) -> str:
    w = f"work_dir: '{work}'"
    return (
        f"  lancedb_build: {{type: lancedb, {w}}}\n"
        f"  lancedb_team: {{type: lancedb, mode: connect, path: '{team['lance']}', collection: team_docs, "
        f"id_field: doc_key, vector_field: emb, {w}}}\n"
        f"  qdrant_build: {{type: qdrant, {w}}}\n"
        f"  qdrant_team: {{type: qdrant, mode: connect, path: '{team['qdrant']}', collection: team, "
        f"id_field: doc_key, {w}}}\n"
        f"  pgvector_build: {{type: pgvector, {w}}}\n"
        f"  pgvector_team: {{type: pgvector, mode: connect, dsn: '{team['dsn']}', collection: team_docs, "
        f"id_field: doc_key, vector_field: emb, {w}}}\n"
    )


def _config(tmp_path: Path, retrievers: str) -> Path:
    p = tmp_path / "stream.yaml"
    p.write_text(f"dataset: demo\nmetrics: [ndcg@10, recall@100]\ndepth: 100\nretrievers:\n{retrievers}{STREAM}")
    return p


def _harness_tables(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as c:
        rows = c.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'harness%'").fetchall()
    return [r[0] for r in rows]


def test_a_connected_row_streams_a_copy_with_a_build_rows_figures_and_the_team_store_unchanged(team, tmp_path, capsys):
    before = {e: fingerprint(team[e]) for e in ("lance", "qdrant")}
    before_pg = pg_state(team["dsn"])
    work = tmp_path / "work"
    cfg = _config(tmp_path, _rows(team, work))
    out = tmp_path / "out"
    assert main(["stream", "--config", str(cfg), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "stream.json").read_text())
    for engine in ENGINES:
        built, copied = doc["retrievers"][f"{engine}_build"], doc["retrievers"][f"{engine}_team"]
        assert "error" not in built and "error" not in copied, (built.get("error"), copied.get("error"))
        assert "team_copy" not in built
        assert "copy of the team's collection" in copied["team_copy"] and copied["config"]["mode"] == "connect"
        assert len(copied["checkpoints"]) == len(built["checkpoints"]) == 5
        for cp, (b, c) in enumerate(zip(built["checkpoints"], copied["checkpoints"], strict=True)):
            print(engine, cp, c["metrics"], b["metrics"], c["exact"], b["exact"])
            assert c["visible"] == b["visible"] and c["queries_scored"] == b["queries_scored"]
            assert c["metrics"] == pytest.approx(b["metrics"], abs=1e-12), (engine, cp)
            assert c["exact"] == pytest.approx(b["exact"], abs=1e-12), (engine, cp)
            assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12), (engine, cp)  # index: none, exact
            for key in ("ghost_hits", "stale_hits", "short_results"):
                assert c[key] == b[key] == ({"probes": c[key]["probes"], "hits": 0} if key != "short_results" else 0)
    assert text.count("streams a harness-owned copy of the team's collection") == 3
    assert main(["report", str(out)]) == 0  # harness report DIR reads it back and says it again
    assert capsys.readouterr().out.count("streams a harness-owned copy of the team's collection") == 3
    assert (out / "report.html").read_text().count("streams a harness-owned copy of the team") == 3
    raw = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert team["dsn"] not in raw and "<set>" in raw  # the dsn is never written
    gc.collect()  # the retrievers are freed: their copies go with them
    after = {e: fingerprint(team[e]) for e in ("lance", "qdrant")}
    assert after == before
    assert pg_state(team["dsn"]) == before_pg
    assert _harness_tables(team["dsn"]) == []  # the copy's table was dropped
    assert not list(work.iterdir())  # and its folders removed


def test_documents_the_team_store_lacks_are_refused_before_any_work(team, demo_dataset, tmp_path, cache_dir):
    """A team's table holding all but 7 of the dataset's documents: one line with the count and the first
    ids, before anything is written (no --out folder), and the table unchanged."""
    import lancedb
    import pyarrow as pa

    corpus = demo_dataset.corpus[7:]
    emb = harness_vectors(corpus, cache_dir)
    lancedb.connect(str(tmp_path / "part")).create_table(
        "team_docs",
        data=pa.table({"id": [d.id for d in corpus],
                       "vector": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), emb.shape[1])}),
    )  # fmt: skip
    before = fingerprint(tmp_path / "part")
    row = f"  team: {{type: lancedb, mode: connect, path: '{tmp_path / 'part'}', collection: team_docs}}\n"
    cfg = _config(tmp_path, row)
    with pytest.raises(InputError) as e:
        run_stream(StreamOptions(config=cfg, out=tmp_path / "out"))
    msg = str(e.value)
    print(msg)
    n = len(demo_dataset.corpus)
    assert f"7 of the dataset's {n:,} documents are not in it" in msg
    assert repr(demo_dataset.corpus[0].id) in msg and e.value.field == "retrievers.team.collection"
    assert not (tmp_path / "out").exists()
    assert fingerprint(tmp_path / "part") == before


@pytest.mark.parametrize("engine", ["qdrant", "chroma"])
def test_a_server_connect_is_refused_naming_the_engine(engine, tmp_path, capsys):
    """A copy on the team's server is not written yet: refused before anything is built or contacted."""
    cfg = _config(tmp_path, f"  team: {{type: {engine}, mode: connect, url: 'http://127.0.0.1:9', collection: c}}\n")
    out = tmp_path / "out"
    assert main(["stream", "--config", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"'team' ({engine}) connects to a {engine} server (url)" in err[0], err
    assert not out.exists()


def test_the_copy_and_its_reference_hold_the_teams_vectors_not_the_models(demo_dataset, tmp_path):
    """The team's vectors are random (seeded), nothing the model would compute: at the initial load the
    copy ranks by them (nDCG near chance) and its exact reference does too (engine == exact at every
    checkpoint, as the model's vectors join with the writes). Chroma (path) streams a copy likewise, and
    both team folders are byte-for-byte unchanged."""
    import chromadb
    import lancedb
    import pyarrow as pa
    from chromadb.config import Settings

    ids = [d.id for d in demo_dataset.corpus]
    emb = np.random.default_rng(5).standard_normal((len(ids), 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    lancedb.connect(str(tmp_path / "lance")).create_table(
        "team_docs",
        data=pa.table({"id": ids, "vector": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), 384)}),
    )
    chroma = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    col = chroma.create_collection("team", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=ids, embeddings=emb)
    del col, chroma
    gc.collect()
    before = {e: fingerprint(tmp_path / e) for e in ("lance", "chroma")}
    cfg = _config(
        tmp_path,
        f"  lancedb_team: {{type: lancedb, mode: connect, path: '{tmp_path / 'lance'}', collection: team_docs}}\n"
        f"  chroma_team: {{type: chroma, mode: connect, path: '{tmp_path / 'chroma'}', collection: team}}\n",
    )
    doc = run_stream(StreamOptions(config=cfg, out=tmp_path / "out")).to_json()
    for name in ("lancedb_team", "chroma_team"):
        rec = doc["retrievers"][name]
        assert "error" not in rec and "copy of the team's collection" in rec["team_copy"], rec.get("error")
        cps = rec["checkpoints"]
        print(name, [c["metrics"]["ndcg@10"] for c in cps], [c["exact"]["ndcg@10"] for c in cps])
        assert cps[0]["exact"]["ndcg@10"] < 0.3  # random vectors: the team's, not the model's (about 0.88)
        if name == "lancedb_team":  # flat: exact
            for c in cps:
                assert c["metrics"] == pytest.approx(c["exact"], abs=1e-12)
        assert cps[-1]["exact"]["ndcg@10"] > cps[0]["exact"]["ndcg@10"]  # the model's vectors came with writes
    gc.collect()
    assert {e: fingerprint(tmp_path / e) for e in ("lance", "chroma")} == before


def test_a_pgvector_role_that_cannot_create_the_copy_is_refused_before_any_work(team, tmp_path):
    """A read-only role (SELECT on the team's table, no CREATE in the schema): one line naming the dsn
    field and why, before anything is written; the team's table unchanged."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    with psycopg.connect(team["dsn"], autocommit=True) as c:
        c.execute("DROP ROLE IF EXISTS team_reader")
        c.execute("CREATE ROLE team_reader LOGIN")
        c.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        c.execute("GRANT USAGE ON SCHEMA public TO team_reader")
        c.execute("GRANT SELECT ON team_docs TO team_reader")
    reader = make_conninfo(**{**conninfo_to_dict(team["dsn"]), "user": "team_reader"})
    before = pg_state(team["dsn"])
    row = f"  team: {{type: pgvector, mode: connect, dsn: '{reader}', collection: team_docs, id_field: doc_key, "
    cfg = _config(tmp_path, row + "vector_field: emb}\n")
    with pytest.raises(InputError) as e:
        run_stream(StreamOptions(config=cfg, out=tmp_path / "out"))
    print(e.value)
    assert e.value.field == "retrievers.team.dsn" and "cannot create a table in schema 'public'" in str(e.value)
    assert reader not in str(e.value)
    assert not (tmp_path / "out").exists()
    assert pg_state(team["dsn"]) == before
