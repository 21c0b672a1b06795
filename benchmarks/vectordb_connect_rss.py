"""Peak memory of pgvector connect mode against the size of the team's table.

A private PostgreSQL (``pgserver``) gets team tables of seeded random 384-dimension unit vectors
(``--rows``, default 187 and 60,000), each the whole corpus of a synthetic golden set (ids and short
texts; 20 queries, one judged document each). For each table a child process runs ``benchmark`` with
one ``pgvector`` retriever in connect mode (``index: none``: ann recall is computed, which reads the
store's vectors) and the child's peak RSS is read from its own rusage (``wait4``), next to the
``peak_rss_mb`` the harness recorded for the row. Nothing is written into the repository.

    python benchmarks/vectordb_connect_rss.py                 # 187 and 60,000 rows
    python benchmarks/vectordb_connect_rss.py --rows 187 5000 # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent(
    """
    import json, sys
    from harness.api import benchmark
    from harness.model import Document, GoldenDataset, Query

    dsn, table, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    docs = [Document(id=f"D{i:07d}", text=f"document {i}") for i in range(n)]
    queries = [Query(id=f"q{j}", text=f"what is in document {j}") for j in range(20)]
    qrels = {f"q{j}": {f"D{j % n:07d}": 1} for j in range(20)}
    ds = GoldenDataset.build("synthetic", docs, queries, qrels)
    spec = {"type": "pgvector", "mode": "connect", "dsn": dsn, "collection": table, "id_field": "doc_key",
            "vector_field": "emb"}
    res = benchmark(ds, {"team": spec}, latency_queries=5, warmup_queries=1, metrics=["ndcg@10"])
    assert not res.failures, res.failures
    eff = res.efficiency["team"]
    print(json.dumps({"peak_rss_mb": eff["peak_rss_mb"], "ann_recall": eff.get("ann_recall@100"), "rows": eff["rows"]}))
    """
)


def fill(dsn: str, table: str, rows: int, seed: int) -> None:
    import psycopg

    from retrievers.vectordb.pgvector import vector_literal

    rng = np.random.default_rng(seed)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(f"CREATE TABLE {table} (doc_key text PRIMARY KEY, emb vector(384))")
        with c.cursor().copy(f"COPY {table} (doc_key, emb) FROM STDIN") as cp:
            for start in range(0, rows, 4096):
                block = rng.normal(size=(min(4096, rows - start), 384)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                for j, v in enumerate(block):
                    cp.write_row((f"D{start + j:07d}", vector_literal(v)))
        c.execute(f"ANALYZE {table}")


def run_child(dsn: str, table: str, rows: int) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, dsn, table, str(rows)], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"child failed:\n{err.read().decode()[-3000:]}")
        return usage.ru_maxrss / 1024, json.loads(out.read().decode().strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[187, 60_000])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or str(REPO))
    from retrievers.vectordb.pgvector import start_postgres

    with tempfile.TemporaryDirectory(prefix="harness-connect-rss-") as tmp:
        server = start_postgres(Path(tmp))
        try:
            dsn = server.get_uri()
            print("| table rows | peak RSS MB (process) | peak_rss_mb (row) | ann recall@100 |")
            print("|---:|---:|---:|---:|")
            for rows in args.rows:
                table = f"team_{rows}"
                fill(dsn, table, rows, args.seed)
                peak, got = run_child(dsn, table, rows)
                recall = "–" if got["ann_recall"] is None else f"{got['ann_recall']:.3f}"
                print(f"| {rows:,} | {peak:,.0f} | {got['peak_rss_mb']:,.0f} | {recall} |", flush=True)
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
