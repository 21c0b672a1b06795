"""TREC qrels and run files, and BEIR qrels tsv files.

Formats (whitespace separated):
- TREC qrels: ``qid iter docno grade`` (``iter`` ignored).
- BEIR qrels: ``query-id<TAB>corpus-id<TAB>score`` with an optional header line.
- TREC run: ``qid Q0 docno rank score tag`` (``Q0`` and ``rank`` ignored: trec_eval ranks by score);
  text after the sixth column is tolerated, as trec_eval does.

Scalars are strict: a grade is a plain ASCII integer within int64 (``1``, ``-1``, ``2.0``; not
``1_0``, ``٣``, ``1e3`` or ``99999999999999999999999``); a score is a plain ASCII decimal number.
Comments: a line whose first character is ``#`` followed by a space (or nothing) is a comment, as in
trec_eval's test files; a line starting ``#`` directly (``#q01 0 d1 1``) is a comment only when it does
not have the data shape, so a query id may start with ``#`` (see :func:`harness.io.lines.is_comment`).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path

from harness.errors import DATA_WARNING, InputError
from harness.io import atomic
from harness.io.grades import GradeError, is_grade_text, parse_grade
from harness.io.lines import iter_lines
from harness.io.trec_columnar import read_run_columnar, worth_it
from harness.model import Qrels
from harness.run import Run

log = logging.getLogger("harness")

#: A plain ASCII decimal number (``float()`` would also take ``1_0``, ``٣.٥``, `` nan`` and ``infinity``).
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _grade(token: str, path: Path, lineno: int) -> int:
    try:
        return parse_grade(token)
    except GradeError as e:
        raise InputError(f"relevance grade {e}", path=path, line=lineno, field="grade") from None


def _qrels_shape(line: str) -> bool:
    parts = line.split()
    return len(parts) in (3, 4) and is_grade_text(parts[-1])


def _run_shape(line: str) -> bool:
    parts = line.split()
    return len(parts) >= 6 and bool(_FLOAT.match(parts[4]))


def _hash_data(path: Path, lineno: int, line: str) -> None:
    if line.startswith("#"):
        log.warning(
            "%s:%d: read as data, for id %r (a comment line starts with '# ', a hash and a space)",
            path,
            lineno,
            line.split()[0],
            extra=DATA_WARNING,
        )


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read TREC (4 columns) or BEIR (3 columns, optional header) judgments.

    A repeated (query, doc) pair with the same grade is tolerated; with a different grade it is an
    error, because either choice would silently change the scores.
    """
    p = Path(path)
    qrels: Qrels = {}
    ncols: int | None = None
    for lineno, line in iter_lines(p, "qrels file", is_data=_qrels_shape):
        _hash_data(p, lineno, line)
        parts = line.split()
        if ncols is None:
            if len(parts) == 3 and _is_header(parts):
                ncols = 3  # BEIR header: query-id corpus-id score
                continue
            if len(parts) not in (3, 4):
                raise InputError(
                    f"expected 4 columns (qid iter docno grade) or 3 (query-id corpus-id score), found {len(parts)}",
                    path=p,
                    line=lineno,
                )
            ncols = len(parts)
        if len(parts) != ncols:
            raise InputError(f"expected {ncols} columns like the first line, found {len(parts)}", path=p, line=lineno)
        if ncols == 4:
            qid, _, doc, g = parts
        else:
            qid, doc, g = parts
        grade = _grade(g, p, lineno)
        judged = qrels.setdefault(qid, {})
        if doc in judged and judged[doc] != grade:
            raise InputError(
                f"query {qid!r}, doc {doc!r} judged twice with different grades ({judged[doc]} and {grade})",
                path=p,
                line=lineno,
                field="grade",
            )
        judged[doc] = grade
    if not qrels:
        raise InputError(
            "no judgments found (expected lines `qid iter docno grade` or `query-id corpus-id score`)", path=p
        )
    return qrels


_HEADER_WORDS = {
    "query-id",
    "query_id",
    "qid",
    "query",
    "corpus-id",
    "corpus_id",
    "doc-id",
    "doc_id",
    "docid",
    "docno",
    "score",
    "relevance",
    "label",
    "grade",
    "rel",
}


def _is_header(parts: list[str]) -> bool:
    """A BEIR header names its columns (``query-id corpus-id score``); a data line with a bad grade
    must not be mistaken for one."""
    return not _is_number(parts[2]) and any(p.lower() in _HEADER_WORDS for p in parts)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True  # any number, even '٣': a header's third column is a word


def write_qrels(path: str | os.PathLike[str], qrels: Qrels) -> Path:
    """TREC format (4 columns), queries and docs in sorted order so the file diffs cleanly."""
    lines = [f"{q} 0 {d} {g}" for q in sorted(qrels) for d, g in sorted(qrels[q].items())]
    return atomic.write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def read_run(path: str | os.PathLike[str], *, name: str | None = None, doc_ids: Iterable[str] | None = None) -> Run:
    """Read a TREC run file into a canonical ``Run`` (named after the file stem by default)."""
    p = Path(path)
    if doc_ids is not None and not isinstance(doc_ids, (list, tuple)):
        doc_ids = list(doc_ids)  # read twice when the columnar reader gives up
    if worth_it(p):  # a large file in the plain shape: read in column blocks (memory ~ its columns)
        run = read_run_columnar(p, name=name if name is not None else p.stem, doc_ids=doc_ids)
        if run is not None:
            return run
    fixed = doc_ids is not None
    vocab: dict[str, int] = {d: i for i, d in enumerate(doc_ids)} if fixed else {}
    rows: dict[str, tuple[list[int], list[float]]] = {}
    tags: set[str] = set()
    for lineno, line in iter_lines(p, "run file", is_data=_run_shape):
        _hash_data(p, lineno, line)
        parts = line.split()
        if len(parts) < 6:
            raise InputError(
                f"expected 6 columns (qid Q0 docno rank score tag), found {len(parts)}", path=p, line=lineno
            )
        qid, _, doc, _, s, tag = parts[:6]
        if not _FLOAT.match(s) and s.strip("+-").lower() not in ("nan", "inf", "infinity"):
            raise InputError(f"score {s!r:.40} is not a number", path=p, line=lineno, field="score")
        try:
            score = float(s)
        except ValueError:  # pragma: no cover - the pattern admits only what float() reads
            raise InputError(f"score {s!r:.40} is not a number", path=p, line=lineno, field="score") from None
        if not math.isfinite(score):
            raise InputError(f"score is {s} (scores must be finite)", path=p, line=lineno, field="score")
        i = vocab.get(doc)
        if i is None:
            if fixed:
                raise InputError(f"doc id {doc!r} is not in the corpus", path=p, line=lineno, field="docno")
            i = vocab[doc] = len(vocab)
        r = rows.get(qid)
        if r is None:
            r = rows[qid] = ([], [])
        r[0].append(i)
        r[1].append(score)
        tags.add(tag)
    return Run.from_rows(list(rows), list(vocab), list(rows.values()), name=name if name is not None else p.stem)


def format_run(run: Run, tag: str | None = None) -> str:
    """TREC run text; scores written with repr precision so a re-read run is bit-identical."""
    tag = (tag or run.name or "run").replace(" ", "_")
    out: list[str] = []
    for i, q in enumerate(run.query_ids):
        n = int(run.lengths[i])
        docs = run.doc_ids[run.indices[i, :n]]
        for r, (d, s) in enumerate(zip(docs, run.scores[i, :n].tolist()), start=1):
            out.append(f"{q} Q0 {d} {r} {s!r} {tag}")
    return "\n".join(out) + ("\n" if out else "")


def write_run(path: str | os.PathLike[str], run: Run, tag: str | None = None) -> Path:
    return atomic.write_text(path, format_run(run, tag))
