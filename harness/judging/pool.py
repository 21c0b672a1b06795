"""Depth-k pooling: the documents some retriever ranks in its top k that nobody has judged.

A golden set judged from one system's results has holes wherever another system looks. TREC's
answer is the pool: the union of every system's top k, judged, so each system is scored on
documents someone actually looked at. :func:`build_pool` reads the stored runs of results folders
(no retriever is run again) and lists, per judged query, the pooled documents that carry no
judgment yet, with the text a judge needs. The pool file is a CSV (or JSON Lines) with the columns
:data:`COLUMNS`; ``grade`` is left empty for ``harness judge serve`` (or a spreadsheet) to fill in.

Order is deterministic: queries by id, then documents by best rank (the highest any retriever put
them), then by how many retrievers found them (more first), then by id.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io import atomic, jsontext
from harness.io.csvcell import neutralise, restore
from harness.io.grades import GradeError, parse_grade
from harness.io.lines import iter_lines, open_checked
from harness.io.trec import read_qrels
from harness.model import Qrels
from harness.results import Results
from harness.run import Run

log = logging.getLogger("harness")

COLUMNS = ("query_id", "query", "doc_id", "title", "text", "retrieved_by", "best_rank", "grade")
#: grades the judging page offers (the keys 0-3); a pool file may hold any integer
GRADES = (0, 1, 2, 3)
#: separator of the retriever names in ``retrieved_by``
SEP = ";"


@dataclass
class PoolRow:
    query_id: str
    query: str
    doc_id: str
    title: str
    text: str
    retrieved_by: str
    best_rank: int
    grade: int | None = None
    #: the file's other columns (``judge``, a spreadsheet's notes), kept as read and written back:
    #: a tool that rewrites the file drops nothing it does not own
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The row as one JSON object: the pool's columns, then its other ones."""
        base = {c: getattr(self, c) for c in COLUMNS}
        return {**base, **{k: v for k, v in self.extra.items() if k not in base}}


def top_docs(run: Run, depth: int) -> dict[str, list[str]]:
    """``{query_id: doc ids of the top depth}`` in rank order (the run's canonical order)."""
    out: dict[str, list[str]] = {}
    for i, q in enumerate(run.query_ids):
        n = min(int(run.lengths[i]), depth)
        out[q] = run.doc_ids[run.indices[i, :n]].tolist()
    return out


def pooled(
    runs: Mapping[str, Run], qrels: Qrels, depth: int, *, max_per_query: int | None = None
) -> list[tuple[str, str, list[str], int]]:
    """``(query_id, doc_id, retrieved_by, best_rank)`` for every unjudged document in any run's top
    ``depth`` of a judged query, in the module's order. Any grade (0 and negative too) counts as a
    judgment: someone looked at the document."""
    if depth < 1:
        raise InputError("--depth must be at least 1", field="--depth")
    if max_per_query is not None and max_per_query < 1:
        raise InputError("--max-per-query must be at least 1", field="--max-per-query")
    found: dict[str, dict[str, tuple[int, set[str]]]] = {}
    for name, run in runs.items():
        for q, docs in top_docs(run, depth).items():
            judged = qrels.get(q)
            if judged is None:
                continue  # not an evaluated query: a judgment would change no score
            per_q = found.setdefault(q, {})
            for rank, d in enumerate(docs, 1):
                if d in judged:
                    continue
                best, by = per_q.get(d, (rank, set()))
                by.add(name)
                per_q[d] = (min(best, rank), by)
    out = []
    for q in sorted(found):
        ranked = sorted(found[q].items(), key=lambda kv: (kv[1][0], -len(kv[1][1]), kv[0]))
        if max_per_query is not None:
            ranked = ranked[:max_per_query]
        out += [(q, d, sorted(by), best) for d, (best, by) in ranked]
    return out


def build_pool(
    folders: Sequence[str | os.PathLike[str]],
    depth: int = 10,
    *,
    max_per_query: int | None = None,
    qrels: str | os.PathLike[str] | None = None,
    allow_incomplete: bool = False,
) -> list[PoolRow]:
    """The pool of the stored runs of ``folders`` against ``qrels`` (default: the folders' own
    ``qrels.tsv``, which must then agree), with each query's and document's text from the dataset
    the folders record.

    A folder is read only when it is whole, as ``harness report`` reads it
    (:func:`harness.results.integrity.check_results`): an interrupted run would pool only the
    retrievers that finished, and an edited run file would pool documents its scores never saw.
    ``allow_incomplete`` turns each refusal into a warning."""
    from harness.results.store import read_runs

    loaded = [Results.open(f, allow_incomplete=allow_incomplete) for f in folders]
    runs = _named_runs(loaded, read_runs)
    judged = read_qrels(qrels) if qrels is not None else _folder_qrels(loaded)
    rows = pooled(runs, judged, depth, max_per_query=max_per_query)
    ds = _dataset(loaded[0])
    queries = {q.id: q.text for q in ds.queries}
    corpus = {d.id: d for d in ds.corpus}
    out = []
    for q, d, by, best in rows:
        doc = corpus.get(d)
        title, text = (doc.title, doc.text) if doc is not None else ("", "")
        out.append(PoolRow(q, queries.get(q, ""), d, title, text, SEP.join(by), best))
    return out


def _dataset(res: Results):
    """The dataset a results folder records (the judges need its query and document text)."""
    from harness.results.manifest import Manifest

    ref = Manifest.of(res).dataset
    where, why = ref.where()
    if where is None:
        raise InputError(f"no query or document text for the judges ({why})", path=res.folder)
    return ref.load()


def _named_runs(loaded: list[Results], read_runs) -> dict[str, Run]:
    """Every stored run, named ``retriever`` (or ``folder/retriever`` where two folders share a name)."""
    per = [(res, read_runs(res)) for res in loaded]
    for res, runs in per:
        missing = [n for n in res.summary if n not in runs]
        if missing:
            raise InputError(f"no stored run for {', '.join(missing)} (runs/*.trec)", path=res.folder)
    counts: dict[str, int] = {}
    for _, runs in per:
        for n in runs:
            counts[n] = counts.get(n, 0) + 1
    out: dict[str, Run] = {}
    for res, runs in per:
        for n, r in runs.items():
            out[n if counts[n] == 1 else f"{res.folder.name if res.folder else '?'}/{n}"] = r
    return out


def _folder_qrels(loaded: list[Results]) -> Qrels:
    first: Qrels | None = None
    first_path = None
    for res in loaded:
        path = (res.folder or Path(".")) / "qrels.tsv"
        if not path.is_file():
            raise InputError("no qrels.tsv in this results folder; name the judgments with --qrels", path=res.folder)
        q = read_qrels(path)
        if first is None:
            first, first_path = q, path
        elif q != first:
            raise InputError(
                f"judgments differ from {first_path}'s; name the ones to pool against with --qrels", path=path
            )
    assert first is not None
    return first


# ----------------------------------------------------------------------------- the pool file


def file_format(path: str | os.PathLike[str]) -> str:
    """``jsonl`` for ``.jsonl`` / ``.ndjson``, else ``csv``."""
    return _fmt(Path(path))


def _fmt(path: Path) -> str:
    return "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson") else "csv"


def extra_columns(rows: Iterable[PoolRow]) -> list[str]:
    """The columns beside :data:`COLUMNS` that the rows carry, in the order first met."""
    seen: dict[str, None] = {}
    for r in rows:
        for k in r.extra:
            if k not in COLUMNS:
                seen.setdefault(k, None)
    return list(seen)


def header(fmt: str, extra: Sequence[str] = ()) -> bytes:
    """What the pool file starts with: the CSV header line (nothing for JSON Lines)."""
    if fmt == "jsonl":
        return b""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([*COLUMNS, *(neutralise(c) for c in extra)])
    return buf.getvalue().encode("utf-8", "surrogatepass")


def encode_row(r: PoolRow, fmt: str, extra: Sequence[str] = ()) -> bytes:
    """One row as written (``csv`` or ``jsonl``); an empty grade is an empty cell / ``null``.

    CSV text cells are neutralised (:func:`harness.io.csvcell.neutralise`: a spreadsheet evaluates
    none of them); JSON Lines carry the text unchanged. A lone surrogate (text decoded from a JSON
    ``\\ud800`` escape) is not UTF-8: a JSON line holding one is written ASCII-escaped, so it reads
    back exactly; a CSV file has no escape, so its text shows U+FFFD there and an id holding one is
    refused (write a .jsonl pool)."""
    if fmt == "jsonl":
        rec = r.record()
        text = json.dumps(rec, ensure_ascii=False) + "\n"
        if _SURROGATE.search(text):
            text = json.dumps(rec) + "\n"
        return text.encode("utf-8")
    for name in ("query_id", "doc_id"):
        if _SURROGATE.search(getattr(r, name)):
            raise InputError(f"{name} {getattr(r, name)!r:.60} holds a lone surrogate, which CSV cannot carry; "
                             "write the pool as .jsonl", field=name)  # fmt: skip
    buf = io.StringIO()
    cells = [neutralise(_SURROGATE.sub("\ufffd", c)) for c in (r.query_id, r.query, r.doc_id, r.title, r.text,
                                                                   r.retrieved_by)]  # fmt: skip
    others = [neutralise(_SURROGATE.sub("\ufffd", _cell_text(r.extra.get(c)))) for c in extra]
    csv.writer(buf, lineterminator="\n").writerow([*cells, r.best_rank, "" if r.grade is None else r.grade, *others])
    return buf.getvalue().encode("utf-8")


def _cell_text(value: object) -> str:
    """An extra column's value as a CSV cell (None: empty; JSON values from a .jsonl row as JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(rows: Iterable[PoolRow], fmt: str) -> str:
    """The pool file's text."""
    rows = list(rows)
    extra = extra_columns(rows)
    return (header(fmt, extra) + b"".join(encode_row(r, fmt, extra) for r in rows)).decode("utf-8")


def write_pool(
    path: str | os.PathLike[str],
    rows: Iterable[PoolRow],
    *,
    encoded: Sequence[bytes] | None = None,
    extra: Sequence[str] | None = None,
) -> Path:
    """Write the pool file atomically (temp file, fsync, rename, fsync of the folder): a process
    killed at any moment leaves the previous file or the new one, and a written one survives a crash.
    ``encoded``: the rows already encoded (:func:`encode_row` with ``extra``, the file's other
    columns), as the judging server keeps them; by default every column the rows carry is written."""
    p = Path(path)
    fmt = _fmt(p)
    rows = list(rows)
    if extra is None:
        extra = extra_columns(rows)
    lines = encoded if encoded is not None else [encode_row(r, fmt, extra) for r in rows]
    atomic.write_bytes(p, header(fmt, extra) + b"".join(lines))
    # the file is in place (its content fsynced): from here on it is saved, and a folder that cannot
    # be synced is a warning, never an error a caller would report as "not saved"
    try:
        fd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        log.warning("%s: saved, but its folder could not be synced (%s)", p, e.strerror or e)
    return p


def read_pool(path: str | os.PathLike[str]) -> list[PoolRow]:
    """Read a pool file (as written, or edited in a spreadsheet); errors name file, line and field.

    JSON Lines are split where JSON ends a line (``\\n``; ``\\r\\n`` too), never at U+2028 or the other
    characters :meth:`str.splitlines` breaks on, which JSON allows inside strings. CSV cells written
    neutralised (:mod:`harness.io.csvcell`) read back as the text they were made from. Grades (and
    ranks) are read by the one strict parser (:func:`harness.io.grades.parse_grade`)."""
    p = Path(path)
    records: list[tuple[int, dict, dict]] = []
    if _fmt(p) == "jsonl":
        for lineno, line in iter_lines(p, "pool file", skip_comments=False):
            rec = jsontext.loads(line, path=p, line=lineno, parse_float=str)
            if not isinstance(rec, dict):
                raise InputError("expected a JSON object per line", path=p, line=lineno)
            other = [k for k in rec if k not in COLUMNS]
            # other columns are kept as JSON values (numbers as numbers), not as the grades' text
            plain = json.loads(line) if other else {}
            records.append((lineno, rec, {k: plain[k] for k in other}))
    else:
        try:
            text = open_checked(p, "pool file").read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"not valid UTF-8 (byte {e.start})", path=p) from None
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in ("query_id", "doc_id", "grade") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)} (expected {', '.join(COLUMNS)})", path=p, line=1)
        other = [c for c in reader.fieldnames or [] if c not in COLUMNS]
        for rec in reader:
            rec = {k: restore(v) if isinstance(v, str) else v for k, v in rec.items() if k is not None}
            records.append((reader.line_num, rec, {restore(c): rec.get(c) for c in other}))
    rows: list[PoolRow] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, rec, other in records:
        text = {c: _text(rec.get(c), p, lineno, c) for c in ("query_id", "query", "doc_id", "title", "text",
                                                             "retrieved_by")}  # fmt: skip
        for c in ("query_id", "doc_id"):
            if not text[c].strip():
                raise InputError("empty", path=p, line=lineno, field=c)
        q, d = text["query_id"].strip(), text["doc_id"].strip()
        if (q, d) in seen:
            raise InputError(f"query {q!r}, doc {d!r} is listed twice (also line {seen[q, d]})", path=p, line=lineno)
        seen[q, d] = lineno
        rows.append(
            PoolRow(
                q,
                text["query"],
                d,
                text["title"],
                text["text"],
                text["retrieved_by"],
                _int(rec.get("best_rank"), p, lineno, "best_rank", default=0),
                _int(rec.get("grade"), p, lineno, "grade", default=None),
                other,
            )
        )
    return rows


def _text(value: object, p: Path, lineno: int, field: str) -> str:
    """A text cell: a string as it is, a JSON integer as its digits (id ``0`` is an id, not an empty
    cell), a JSON number as its text (read with ``parse_float=str``); null or absent is empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"expected text or a number, not {json.dumps(value)[:40]}", path=p, line=lineno, field=field)


def _int(value: object, p: Path, lineno: int, field: str, *, default: int | None) -> int | None:
    """An empty cell (or JSON ``null``) is ``default``; anything else must be a grade-like integer."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        return parse_grade(value)
    except GradeError as e:
        raise InputError(str(e), path=p, line=lineno, field=field) from None
