"""Golden sets as RAG teams hold them: one row per question, judged by ids and/or answer strings.

Columns (any tabular format :mod:`harness.io.tabular` reads: JSONL, CSV/TSV, Parquet, a Hugging Face
``datasets`` folder):

- ``question`` (or ``query``): the text to search with; required, non-empty.
- ``id`` (or ``_id``, ``query_id``): optional; rows without one are named ``q<line>``.
- ``relevant_ids``: the documents (or chunks) that answer it. A JSON list ``["d1", "d2"]`` or a
  grade map ``{"d1": 2, "d2": 1}``; in CSV the same JSON, or ``d1;d2`` / ``d1:2;d2:1`` (``id:grade``
  only when the part after the last ``:`` is an integer, so ids that contain ``:`` survive). Listed
  ids without a grade get grade 1.
- ``answers`` / ``keywords`` / ``answer``: strings whose presence in a document (case-insensitive)
  makes it relevant, which keeps the golden set valid when the corpus is re-chunked. ``answers`` and
  ``keywords`` are lists (JSON; ``a;b`` in CSV); ``answer`` is one string taken whole, so an answer
  that contains ``;`` survives a CSV.
- ``tags``: optional labels for slices (a list, or ``a;b`` in CSV), kept in ``metadata["tags"]``.
- every other column is kept in the query's ``metadata``.

A row is judged by its ids or by its answers; a row with both needs ``judge_by`` (``ids`` or
``answers``) so the choice is the user's, not a silent rule (the other kind is kept in the query's
``metadata``). A row with neither is an error (it
could never score anything).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from harness import defaults
from harness.errors import DATA_WARNING, InputError, warn_ids
from harness.io import jsontext
from harness.io.grades import GradeError, parse_grade
from harness.io.tabular import Row, check_id, read_rows
from harness.io.tags import parse_tags
from harness.model import GoldenDataset, Query

log = logging.getLogger("harness")

JudgeBy = Literal["auto", "ids", "answers"]

_QUESTION = ("question", "query")
_ID = ("id", "_id", "query_id")
_RELEVANT = ("relevant_ids",)
_ANSWER_LISTS = ("answers", "keywords")
_ANSWER_ONE = ("answer",)
_TAGS = ("tags",)


@dataclass
class GoldenRows:
    """A golden set read from a file: queries (with ``keywords`` for answer-judged rows) and the
    id judgments (``{query_id: {doc_id: grade}}``) of id-judged rows."""

    path: Path
    queries: list[Query] = field(default_factory=list)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # query id -> line/row it came from


def _pick(columns: Iterable[str], names: tuple[str, ...]) -> str | None:
    cols = list(columns)
    found = [n for n in names if n in cols]
    return found[0] if found else None


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return bool(isinstance(value, str) and not value.strip())


def _json_cell(text: str, row: Row, column: str, what: str) -> Any:
    """A cell that looks like JSON, parsed (nesting depth bounded); one located error when it does not parse."""
    return jsontext.loads(
        text, path=row.path, line=row.line, field=column, invalid=f"looks like {what} but does not parse"
    )


def _as_text_list(value: Any, row: Row, column: str, *, split_text: bool) -> list[str]:
    """A list of non-empty strings from a JSON list, a single string, or ``a;b`` text."""
    if _missing(value):
        return []
    if isinstance(value, str):
        s = value.strip()
        if row.text_cells and s.startswith("["):
            value = _json_cell(s, row, column, "a JSON list")
        elif split_text:
            return [part.strip() for part in s.split(";") if part.strip()]
        else:
            return [s]
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()  # numpy arrays from Parquet
    if not isinstance(value, (list, tuple)):
        raise InputError(
            f"expected a list of strings, got {type(value).__name__}", path=row.path, line=row.line, field=column
        )
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise InputError(
                f"item {i} is {type(item).__name__}, expected a string", path=row.path, line=row.line, field=column
            )
        text = str(item).strip()
        if not text:
            raise InputError(f"item {i} is an empty string", path=row.path, line=row.line, field=column)
        out.append(text)
    return out


#: Grades are stored as int64, as qrels files are (see :func:`harness.io.trec.read_qrels`).
_GRADE_MIN, _GRADE_MAX = -(2**63), 2**63 - 1


def _tags(value: Any, row: Row, column: str) -> list[str]:
    """A row's tags: a list, ``a;b`` or ``a, b`` text (CSV), checked by :func:`parse_tags`."""
    if _missing(value):
        return []
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()
    if isinstance(value, str):
        s = value.strip()
        if row.text_cells and s.startswith("["):
            value = jsontext.loads(s, path=row.path, line=row.line, field=column, what="JSON list")
        else:
            value = s.replace(";", ",")
    try:
        return parse_tags(value)
    except ValueError as e:
        raise InputError(str(e), path=row.path, line=row.line, field=column) from None


def _grade(raw: Any, row: Row, column: str, doc: str) -> int:
    """An integer grade: an int, an integral float (``2.0``), or their text; ``99999999999999999999999``
    is out of range rather than silently rounded to a float."""

    def bad(why: str = "must be an integer") -> InputError:
        return InputError(f"grade of {doc!r:.60} {why}, got {raw!r:.40}", path=row.path, line=row.line, field=column)

    if hasattr(raw, "item") and not isinstance(raw, (list, tuple, dict)):
        raw = raw.item()  # a numpy scalar from Parquet
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise bad()
    if isinstance(raw, str):  # text: the one grade parser (harness/io/grades.py), as qrels and pools
        try:
            raw = parse_grade(raw.strip())
        except GradeError as e:
            why = "is out of range (a 64-bit integer)" if "out of range" in str(e) else "must be an integer"
            raise bad(why) from None
    if isinstance(raw, float):
        if not math.isfinite(raw) or raw != int(raw):
            raise bad()
        raw = int(raw)
    if not _GRADE_MIN <= raw <= _GRADE_MAX:
        raise bad("is out of range (a 64-bit integer)")
    return raw


def _relevant(value: Any, row: Row, column: str, *, allow_empty: bool = False) -> dict[str, int]:
    """``{doc_id: grade}`` from a list, a grade map, or ``a;b:2`` text (``allow_empty``: an empty list
    or map is ``{}``, not an error)."""
    if _missing(value):
        return {}
    if isinstance(value, str):
        s = value.strip()
        if s.startswith(("[", "{")):
            value = _json_cell(s, row, column, "JSON")
        else:
            out: dict[str, int] = {}
            for part in (x.strip() for x in s.split(";")):
                if not part:
                    continue
                doc, sep, grade = part.rpartition(":")
                if sep and doc and _is_int(grade):
                    out[check_id(doc.strip(), row, column)] = _grade(grade, row, column, doc.strip())
                else:
                    out[check_id(part, row, column)] = 1
            return out
    if isinstance(value, dict):
        if not value:
            if allow_empty:
                return {}
            raise _empty(row, column)
        return {check_id(str(k), row, column): _grade(v, row, column, str(k)) for k, v in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        out = {}
        for i, item in enumerate(value):
            if isinstance(item, dict) and ("id" in item or "_id" in item):
                # [{"id": "d1", "grade": 2}] (a Parquet / HF list of structs)
                doc = str(item.get("id", item.get("_id")))
                out[check_id(doc, row, column)] = _grade(item.get("grade", 1), row, column, doc)
            elif isinstance(item, (str, int)) and not isinstance(item, bool):
                out[check_id(str(item).strip(), row, column)] = 1
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                # a Parquet map<string, int> column reads as [(key, value), ...]
                out[check_id(item[0].strip(), row, column)] = _grade(item[1], row, column, item[0])
            else:
                raise InputError(
                    f"item {i} is {type(item).__name__}, expected a document id",
                    path=row.path,
                    line=row.line,
                    field=column,
                )
        if not out and not allow_empty:
            raise _empty(row, column)
        return out
    raise InputError(
        f"expected a list of ids or a {{id: grade}} map, got {type(value).__name__}",
        path=row.path,
        line=row.line,
        field=column,
    )


def _empty(row: Row, column: str) -> InputError:
    """An empty list or map of relevant ids judges nothing: the question would score 0 on every
    retriever, silently. Leaving the cell empty (with answers) is how a row is judged by answers."""
    return InputError(
        "is empty: the question has no relevant document and would score 0 everywhere; "
        "list its relevant ids, or leave the cell empty and give answers",
        path=row.path,
        line=row.line,
        field=column,
    )


def _is_int(s: str) -> bool:
    s = s.strip()
    return bool(s) and (s.isascii() and (s.isdigit() or (s[0] in "+-" and s[1:].isdigit())))


def read_golden(
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    split: str | None = None,
    judge_by: JudgeBy = "auto",
    keep_unjudged: bool = False,
) -> GoldenRows:
    """Read a golden set: its queries and id judgments (answer rows carry ``keywords``).

    ``keep_unjudged``: a row with empty judgments (no relevant ids, no answers) is kept as a query
    without judgments instead of refused: ``harness inspect`` lists such rows, a run refuses them."""
    p = Path(path).expanduser()
    columns, rows = read_rows(p, "golden set", fmt=fmt, split=split)
    q_col = _pick(columns, _QUESTION)
    if q_col is None:
        raise InputError(
            f"no question column (expected 'question'; found: {', '.join(columns) or 'no columns'})",
            path=p,
            line=1,
            field="question",
        )
    id_col = _pick(columns, _ID)
    rel_col = _pick(columns, _RELEVANT)
    ans_cols = [c for c in (*_ANSWER_LISTS, *_ANSWER_ONE) if c in columns]
    tag_col = _pick(columns, _TAGS)
    if rel_col is None and not ans_cols:
        raise InputError(
            "no judgments: add a 'relevant_ids' column (ids of relevant documents or chunks) "
            f"and/or an 'answers' column (strings found in relevant text); found: {', '.join(columns)}",
            path=p,
            line=1,
        )
    known = {q_col, id_col, rel_col, tag_col, *ans_cols} - {None}
    out = GoldenRows(path=p)
    for row in rows:
        cells = row.cells
        question = cells.get(q_col)
        if question is not None and not isinstance(question, str) and not _missing(question):
            raise InputError(
                f"must be text, got {type(question).__name__} {question!r:.40} (quote it in the file)",
                path=row.path,
                line=row.line,
                field=q_col,
            )
        if _missing(question) or not isinstance(question, str):
            raise InputError("question is missing or empty", path=row.path, line=row.line, field=q_col)
        raw_id = cells.get(id_col) if id_col else None
        if _missing(raw_id):
            qid = f"q{row.line}"
        else:
            if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
                raise InputError(
                    f"must be a string, got {type(raw_id).__name__}", path=row.path, line=row.line, field=id_col
                )
            qid = check_id(str(raw_id).strip(), row, id_col or "id")
        if qid in out.lines:
            raise InputError(
                f"duplicate query id {qid!r} (first at line {out.lines[qid]})",
                path=row.path,
                line=row.line,
                field=id_col or "id",
            )
        relevant = _relevant(cells.get(rel_col), row, rel_col, allow_empty=keep_unjudged) if rel_col else {}
        has_rel = rel_col is not None and not _missing(cells.get(rel_col)) and (bool(relevant) or not keep_unjudged)
        answers: list[str] = []
        for c in ans_cols:
            answers += _as_text_list(cells.get(c), row, c, split_text=c in _ANSWER_LISTS)
        answers = list(dict.fromkeys(answers))
        if has_rel and answers:
            if judge_by == "auto":
                raise InputError(
                    f"row has both {rel_col} and {'/'.join(ans_cols)}: choose how it is judged "
                    "(dataset: {judge_by: ids} or {judge_by: answers})",
                    path=row.path,
                    line=row.line,
                )
            ids_kept: dict[str, int] = {}
            if judge_by == "ids":
                answers_kept, answers = answers, []
            else:
                answers_kept, ids_kept, relevant, has_rel = [], relevant, {}, False
        else:
            answers_kept, ids_kept = [], {}
            if judge_by == "ids" and answers and not has_rel:
                raise InputError(
                    "judge_by is 'ids' but this row has no relevant_ids", path=row.path, line=row.line, field=rel_col
                )
            if judge_by == "answers" and has_rel and not answers:
                raise InputError(
                    "judge_by is 'answers' but this row has no answers",
                    path=row.path,
                    line=row.line,
                    field=ans_cols[0] if ans_cols else "answers",
                )
        if not has_rel and not answers and not keep_unjudged:
            raise InputError(
                "row has neither relevant_ids nor answers: it could never score", path=row.path, line=row.line
            )
        metadata: dict[str, Any] = {k: _plain(v) for k, v in cells.items() if k not in known and not _missing(v)}
        if tag_col:
            tags = _tags(cells.get(tag_col), row, tag_col)
            if tags:
                metadata["tags"] = tags
        if answers_kept:
            metadata["answers"] = answers_kept
        if ids_kept:
            metadata["relevant_ids"] = ids_kept
        try:
            query = Query(id=qid, text=question, keywords=tuple(answers), metadata=metadata)
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(err["msg"], path=row.path, line=row.line, field=str(err["loc"][0])) from None
        out.queries.append(query)
        out.lines[qid] = row.line
        if has_rel:
            out.qrels[qid] = relevant
    if not out.queries:
        raise InputError("golden set has no rows", path=p)
    return out


def _plain(value: Any) -> Any:
    """A JSON-able form of a cell (Parquet gives numpy arrays and timestamps)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


#: Keys of a ``dataset:`` mapping in a config (see :func:`resolve_dataset_section`).
#: ``weights`` is read by the session from the loaded queries (``harness.datasets.query_weights``), and
#: ``nuggets``/``assignments`` from the nugget files (``harness.nuggets``), not here
SECTION_KEYS = (
    "path", "corpus", "golden", "split", "name", "judge_by", "corpus_format", "golden_format", "weights", "nuggets",
    "assignments",
)


def assemble_golden(
    corpus: str | os.PathLike[str],
    golden: str | os.PathLike[str],
    *,
    name: str | None = None,
    split: str | None = None,
    judge_by: str = "auto",
    corpus_format: str | None = None,
    golden_format: str | None = None,
    keep_unjudged: bool = False,
) -> GoldenDataset:
    """A corpus and a golden set given separately, in the shapes RAG teams hold them (see
    this module and :mod:`harness.io.corpus`), as one :class:`GoldenDataset`.

    Answer-judged rows are resolved against the corpus by :func:`harness.model.keyword_judgments`
    (the mechanism the demo's keyword queries use); id-judged rows keep their ids. ``split`` picks a
    split of a Hugging Face ``DatasetDict`` folder. Judged ids that are not in the corpus are kept
    (they count as relevant, so recall is honest about what the corpus lacks) and warned about, as
    for BEIR folders.
    """
    from harness.io.corpus import read_any_corpus

    if judge_by not in ("auto", "ids", "answers"):
        raise InputError(f"judge_by must be auto, ids or answers, got {judge_by!r}", field="judge_by")
    gpath = Path(golden).expanduser()
    cpath = Path(corpus).expanduser()
    docs = read_any_corpus(cpath, fmt=corpus_format)
    rows = read_golden(
        gpath,
        fmt=golden_format,
        split=split,
        judge_by=judge_by,  # type: ignore[arg-type]
        keep_unjudged=keep_unjudged,
    )
    known = {d.id for d in docs}
    unknown = sorted({d for judged in rows.qrels.values() for d in judged if d not in known})
    if unknown and len(unknown) == len({d for judged in rows.qrels.values() for d in judged}):
        raise InputError(
            f"none of the relevant_ids are document ids of the corpus {cpath} (e.g. {unknown[0]!r}); "
            "ids of chunks need the corpus they were written against",
            path=gpath,
            field="relevant_ids",
        )
    if unknown:
        kept = "kept: they count as relevant but cannot be retrieved"
        warn_ids(log, gpath, f"relevant ids are not in the corpus ({kept}), e.g. %s", unknown)
    dataset = GoldenDataset.build(
        name or gpath.stem, docs, rows.queries, rows.qrels, split=split or defaults.SPLIT, source=f"{cpath} + {gpath}"
    )
    unmatched = [q.id for q in dataset.queries if q.keywords and not dataset.qrels.get(q.id)]
    if unmatched:
        log.warning(
            "%s: %d answer-judged questions match no document (they score 0), e.g. %s (line %d)",
            gpath,
            len(unmatched),
            unmatched[0],
            rows.lines[unmatched[0]],
            extra=DATA_WARNING,
        )
    return dataset


def resolve_dataset_section(
    section: Any,
    base_dir: str | os.PathLike[str] | None,
    load_path: Callable[..., GoldenDataset],
    *,
    keep_unjudged: bool = False,
) -> GoldenDataset:
    """A config's ``dataset:`` value as a dataset. ``load_path(path, split, name=...)`` loads the
    single-path forms (``demo``, BEIR, ``irds:``); relative paths are resolved against ``base_dir``.
    ``keep_unjudged``: see :func:`read_golden`."""
    base = Path(base_dir) if base_dir is not None else Path.cwd()

    def resolve(value: Any, key: str) -> str:
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            raise InputError(f"must be a path, got {value!r}", field=f"dataset.{key}")
        s = str(value)
        if s == "demo" or s.startswith(("irds:", "ir_datasets:")):
            return s
        p = Path(s).expanduser()
        return str(p if p.is_absolute() else base / p)

    if isinstance(section, GoldenDataset):
        return section
    if isinstance(section, (str, os.PathLike)):
        return load_path(resolve(section, "path"), defaults.SPLIT)
    if not isinstance(section, dict):
        raise InputError(f"must be a path or a mapping, got {type(section).__name__}", field="dataset")
    unknown = sorted(set(section) - set(SECTION_KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} (known: {', '.join(SECTION_KEYS)})", field=f"dataset.{unknown[0]}"
        )
    has_pair = section.get("corpus") is not None or section.get("golden") is not None
    if has_pair:
        if section.get("path") not in (None, "demo") and "path" in section:
            raise InputError("give either path or corpus + golden, not both", field="dataset.path")
        for key in ("corpus", "golden"):
            if section.get(key) is None:
                raise InputError(f"{key} is missing (corpus and golden go together)", field=f"dataset.{key}")
        return assemble_golden(
            resolve(section["corpus"], "corpus"),
            resolve(section["golden"], "golden"),
            name=section.get("name"),
            split=section.get("split"),
            judge_by=section.get("judge_by") or "auto",
            corpus_format=section.get("corpus_format"),
            golden_format=section.get("golden_format"),
            keep_unjudged=keep_unjudged,
        )
    for key in ("judge_by", "corpus_format", "golden_format"):
        if section.get(key) not in (None, "auto"):
            raise InputError(f"{key} applies to corpus + golden, not to path", field=f"dataset.{key}")
    return load_path(
        resolve(section.get("path") or defaults.DATASET, "path"),
        section.get("split") or defaults.SPLIT,
        name=section.get("name"),
    )
