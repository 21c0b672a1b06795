"""``harness traces pool DIR --run NAME=FILE ... --out pool.csv``: what to grade, before any judgment exists.

``harness pool`` pools the queries a golden set already judges (a grade there would change a score);
a folder from ``harness traces import`` judges nothing yet, so here every query is pooled: the
unjudged documents of production's top ``depth`` (``runs/production.trec``) and of each candidate's
run file, with the query and document texts of the folder. The rows, their order and the file are
``harness pool``'s (:func:`harness.judging.pool.pooled`, :func:`~harness.judging.pool.write_pool`),
so ``judge sample``, ``judge serve``, ``judge auto`` and ``judge merge`` take the file as they take
any pool. ``--qrels`` pools against judgments already made (the next round).
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import InputError
from harness.io.beir import read_corpus, read_queries
from harness.io.trec import read_qrels, read_run
from harness.judging.pool import SEP, PoolRow, pooled, write_pool
from harness.traces.folder import RUN_NAME, TracesFile


def pool_traces(
    folder: str | os.PathLike[str],
    runs: dict[str, str],
    out: str | os.PathLike[str],
    *,
    depth: int = 10,
    max_per_query: int | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> list[PoolRow]:
    """Write the pool of production's and ``runs``' (name -> TREC file) top ``depth`` to ``out``."""
    root = Path(folder)
    TracesFile.read(root)  # ours, whole, and every file as the import wrote it
    production = root / "runs" / f"{RUN_NAME}.trec"
    if not production.is_file() or not (root / "queries.jsonl").is_file():
        raise InputError("not a folder `harness traces import` wrote (no runs/production.trec)", path=root)
    if RUN_NAME in runs:
        raise InputError(f"{RUN_NAME!r} names the folder's own run; give candidates other names", field="--run")
    target = Path(out)
    if target.exists():
        raise InputError("already exists (a pool may hold grades: never overwritten)", path=target, field="--out")
    loaded = {RUN_NAME: read_run(production, name=RUN_NAME)}
    for name, path in runs.items():
        loaded[name] = read_run(path, name=name)
    queries, _ = read_queries(root / "queries.jsonl")
    judged = read_qrels(qrels) if qrels is not None else {}
    wanted = {q.id: dict(judged.get(q.id, {})) for q in queries}
    unknown = sorted({q for r in loaded.values() for q in r.query_ids} - set(wanted))
    if unknown:
        raise InputError(f"run ranks query {unknown[0]!r}, which is not in {root / 'queries.jsonl'}", field="--run")
    rows = pooled(loaded, wanted, depth, max_per_query=max_per_query)
    corpus = read_corpus(root / "corpus.jsonl")
    where = {d: i for i, d in enumerate(corpus.ids.tolist())}
    texts = {q.id: q.text for q in queries}
    out_rows = []
    for q, d, by, best in rows:
        i = where.get(d)
        title, text = (str(corpus.titles[i]), str(corpus.texts[i])) if i is not None else ("", "")
        out_rows.append(PoolRow(q, texts.get(q, ""), d, title, text, SEP.join(by), best))
    write_pool(target, out_rows)
    return out_rows
