"""Write a :class:`GoldenDataset` as a BEIR folder (``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``), so any golden set the harness reads can be handed to other tools.

Answer-judged queries: by default their judgments, resolved against this corpus, go into the qrels
file like any other (every BEIR tool can score them) and the answer strings are kept in the query's
``metadata.answers`` (the harness's BEIR loader keeps them; other tools ignore them). With
``keywords="keep"`` they stay ``keywords`` and are left out of the qrels, so the harness keeps
judging them by content (which survives re-chunking) but other tools see no judgments for them.
A query judged with nothing relevant gets one grade-0 row, so it stays in every mean.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from harness import defaults
from harness.errors import InputError
from harness.io import atomic, staged
from harness.io.beir import check_split_name
from harness.model import GoldenDataset

KeywordMode = Literal["resolve", "keep"]


def write_beir(dataset: GoldenDataset, out: str | os.PathLike[str], *, keywords: KeywordMode = "resolve") -> Path:
    """Under the lock of ``out`` (:func:`harness.io.staged.lock`): a second command given the same
    folder while this one writes is refused in one line, never mixed in. See :func:`_write_beir`."""
    with staged.lock(out):
        return _write_beir(dataset, out, keywords=keywords)


def _write_beir(dataset: GoldenDataset, out: str | os.PathLike[str], *, keywords: KeywordMode = "resolve") -> Path:
    """Write ``dataset`` under ``out`` (created; must not hold a BEIR folder already: nothing a
    user wrote is overwritten). Returns the folder."""
    root = Path(out).expanduser()
    split = check_split_name(dataset.split or defaults.SPLIT)
    targets = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"]
    present = [t for t in targets if t.exists()]
    if present:
        raise InputError("already exists; choose an empty --out folder (nothing is overwritten)", path=present[0])
    if root.exists() and not root.is_dir():
        raise InputError("--out must be a folder", path=root)
    if keywords not in ("resolve", "keep"):
        raise InputError(f"keywords must be 'resolve' or 'keep', got {keywords!r}", field="keywords")

    corpus_lines = []
    for d in dataset.corpus:
        rec: dict = {"_id": d.id, "title": d.title, "text": d.text}
        if d.metadata:
            rec["metadata"] = d.metadata
        corpus_lines.append(json.dumps(rec, ensure_ascii=False))
    query_lines = []
    qrels_rows = ["query-id\tcorpus-id\tscore"]
    for q in dataset.queries:
        rec = {"_id": q.id, "text": q.text}
        meta = dict(q.metadata)
        if q.keywords and keywords == "keep":
            rec["keywords"] = list(q.keywords)
        elif q.keywords:
            meta["answers"] = list(q.keywords)
        if meta:
            rec["metadata"] = meta
        query_lines.append(json.dumps(rec, ensure_ascii=False))
        if q.keywords and keywords == "keep":
            continue
        judged = dataset.qrels.get(q.id, {})
        if not judged and dataset.corpus:
            # judged, nothing relevant (an answer found nowhere): one grade-0 row keeps the query in
            # the mean, as it is here; a BEIR loader drops queries with no qrels row at all
            judged = {dataset.corpus[0].id: 0}
        for doc_id, grade in judged.items():
            qrels_rows.append(f"{q.id}\t{doc_id}\t{grade}")
    atomic.write_text(root / "corpus.jsonl", "\n".join(corpus_lines) + "\n")
    atomic.write_text(root / "queries.jsonl", "\n".join(query_lines) + "\n")
    atomic.write_text(root / "qrels" / f"{split}.tsv", "\n".join(qrels_rows) + "\n")
    return root
