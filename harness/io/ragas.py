"""RAGAS evaluation datasets in: a BEIR folder and the run they hold, so plain IR metrics (with
intervals, tests and the gate) score what a RAGAS user already keeps.

A RAGAS ``EvaluationDataset`` is written by ``to_jsonl`` (one ``SingleTurnSample`` per line, None
fields left out) or ``to_csv`` (``csv.DictWriter``: a list cell is Python's ``str(list)``,
``['doc_1', 'doc_3']``). The fields read: ``user_input`` (the query), ``retrieved_context_ids`` (the
ranking, best first) with ``retrieved_contexts`` (their texts, same order), ``reference_context_ids``
(the relevant documents) with ``reference_contexts``; ``response`` and ``reference`` are kept in the
query's metadata. Ids may be strings or integers (an integer is its decimal string).

What is written (:func:`convert_ragas`): ``corpus.jsonl`` (every id whose text a sample gives; the
first text given wins), ``queries.jsonl`` (``q1``, ``q2``... in sample order), ``qrels/<split>.tsv``
(each reference id grade 1: RAGAS judgments are binary) and ``runs/ragas.trec``: the retrieved order
as ranks, rank r of n scored ``n - r + 1`` (descending, no ties, so every tool ranks them as RAGAS
listed them; an id retrieved twice keeps its first rank). A sample without reference ids (missing
or empty) cannot be scored: it is counted and left out, in the one summary line.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import defaults
from harness.errors import InputError
from harness.io import jsontext
from harness.io.beir import check_split_name
from harness.io.beir_write import write_beir
from harness.io.tabular import Row, check_id, read_rows
from harness.io.trec import write_run
from harness.model import Document, GoldenDataset, Query
from harness.run import Run

#: a list cell longer than this is not parsed as a Python literal (ast's parser is recursive)
_MAX_LITERAL = 1 << 20


@dataclass
class RagasImport:
    """A RAGAS file read: the dataset, its ranking, and what could not be used."""

    dataset: GoldenDataset
    run: Run
    samples: int = 0
    #: samples without reference ids: left out
    unjudged: int = 0
    #: ids retrieved twice in one sample (the later ranks dropped)
    repeated: int = 0
    #: ids given another text by a later sample (the first text kept)
    text_conflicts: int = 0

    def summary(self, out: Path | None = None) -> str:
        """The one line ``harness convert`` prints."""
        ds = self.dataset
        n_judg = sum(len(v) for v in ds.qrels.values())
        parts = [
            f"{len(ds.queries)} of {self.samples} samples as queries",
            f"{len(ds.corpus)} documents with text",
            f"{n_judg} judgments (qrels/{ds.split}.tsv)",
            "the retrieved order in runs/ragas.trec",
        ]
        if self.unjudged:
            parts.append(f"{self.unjudged} samples without reference_context_ids left out")
        if self.repeated:
            parts.append(f"{self.repeated} repeated retrieved ids dropped")
        if self.text_conflicts:
            parts.append(f"{self.text_conflicts} ids given another text later (first kept)")
        return (f"wrote {out}: " if out is not None else "") + "; ".join(parts)


def _list(value: Any, row: Row, column: str) -> list[Any] | None:
    """A list cell: a JSON list (JSONL), or ``str(list)`` / JSON text (CSV); None when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and row.text_cells:
        text = value.strip()
        if not text.startswith("["):
            raise InputError(
                f"expected a list, e.g. ['doc_1', 'doc_2'], got {text[:40]!r}",
                path=row.path,
                line=row.line,
                field=column,
            )
        try:
            value = jsontext.loads(text, path=row.path, line=row.line, field=column)
        except InputError:
            if len(text) > _MAX_LITERAL:
                raise InputError("list cell too long to read", path=row.path, line=row.line, field=column) from None
            try:
                value = ast.literal_eval(text)  # what csv.DictWriter wrote: Python's str(list)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise InputError(
                    f"does not parse as a list: {text[:40]!r}", path=row.path, line=row.line, field=column
                ) from None
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise InputError(f"expected a list, got {type(value).__name__}", path=row.path, line=row.line, field=column)
    return list(value)


def _ids(value: Any, row: Row, column: str) -> list[str] | None:
    items = _list(value, row, column)
    if items is None:
        return None
    out = []
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise InputError(
                f"item {i} is {type(v).__name__}, expected a string or an integer id",
                path=row.path,
                line=row.line,
                field=column,
            )
        out.append(check_id(str(v).strip(), row, column, what=f"item {i}: id "))
    return out


def _texts(value: Any, row: Row, column: str, n: int, ids_column: str) -> list[str] | None:
    items = _list(value, row, column)
    if items is None:
        return None
    if len(items) != n:
        raise InputError(
            f"{len(items)} texts for the {n} ids of {ids_column}; each id needs its text, in order",
            path=row.path,
            line=row.line,
            field=column,
        )
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise InputError(
                f"item {i} is {type(t).__name__}, expected a string", path=row.path, line=row.line, field=column
            )
    return items


def read_ragas(path: str | os.PathLike[str], *, fmt: str | None = None, split: str | None = None) -> RagasImport:
    """Read a RAGAS ``EvaluationDataset`` file (JSONL or CSV; ``fmt`` overrides the suffix) into a
    dataset and its run. Errors name the file, line and field; nothing is written."""
    p = Path(path).expanduser()
    columns, rows = read_rows(p, "RAGAS dataset", fmt=fmt)
    if "user_input" not in columns:
        raise InputError(
            "not a RAGAS EvaluationDataset: no user_input field (SingleTurnSample: user_input, "
            "retrieved_context_ids, reference_context_ids, ...)",
            path=p,
        )
    split = check_split_name(split or defaults.SPLIT)
    texts: dict[str, str] = {}
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, list[tuple[str, float]]] = {}
    counts = {"samples": 0, "unjudged": 0, "repeated": 0, "text_conflicts": 0}
    for n, row in enumerate(rows, start=1):
        counts["samples"] += 1
        c = row.cells
        query = c.get("user_input")
        if not isinstance(query, str) or not query.strip():
            raise InputError(
                "must be the query text (a non-empty string)", path=row.path, line=row.line, field="user_input"
            )
        retrieved = _ids(c.get("retrieved_context_ids"), row, "retrieved_context_ids") or []
        reference = _ids(c.get("reference_context_ids"), row, "reference_context_ids")
        for ids_col, text_col, ids in (
            ("retrieved_context_ids", "retrieved_contexts", retrieved),
            ("reference_context_ids", "reference_contexts", reference or []),
        ):
            given = _texts(c.get(text_col), row, text_col, len(ids), ids_col) if ids else None
            for d, t in zip(ids, given or []):
                if d not in texts:
                    texts[d] = t
                elif texts[d] != t:
                    counts["text_conflicts"] += 1
        if not reference:
            counts["unjudged"] += 1
            continue
        qid = f"q{n}"
        meta = {k: c[k] for k in ("response", "reference") if isinstance(c.get(k), str) and c[k]}
        queries.append(Query(id=qid, text=query, metadata=meta))
        qrels[qid] = dict.fromkeys(reference, 1)
        seen: dict[str, None] = {}
        for d in retrieved:
            if d in seen:
                counts["repeated"] += 1
            seen.setdefault(d)
        m = len(seen)
        rankings[qid] = [(d, float(m - r)) for r, d in enumerate(seen)]
    if not queries:
        raise InputError(
            f"none of the {counts['samples']} samples has reference_context_ids: nothing to judge a ranking by",
            path=p,
        )
    dataset = GoldenDataset(
        name=p.stem,
        corpus=[Document(id=d, text=t) for d, t in texts.items()],
        queries=queries,
        qrels=qrels,
        split=split,
        source=str(p),
    )
    run = Run.from_dict({q: dict(r) for q, r in rankings.items()}, name="ragas")
    return RagasImport(dataset, run, **counts)


def convert_ragas(
    path: str | os.PathLike[str], out: str | os.PathLike[str], *, fmt: str | None = None, split: str | None = None
) -> str:
    """``harness convert --golden FILE --golden-format ragas --out D``: the BEIR folder and
    ``D/runs/ragas.trec``; nothing that exists is overwritten. Returns the summary line."""
    root = Path(out).expanduser()
    run_path = root / "runs" / "ragas.trec"
    if run_path.exists():
        raise InputError("already exists; choose an empty --out folder (nothing is overwritten)", path=run_path)
    got = read_ragas(path, fmt=fmt, split=split)
    folder = write_beir(got.dataset, root)
    write_run(run_path, got.run, tag="ragas")
    return got.summary(folder)
