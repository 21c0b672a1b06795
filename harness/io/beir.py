"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Only the split's queries are evaluated: those named in ``qrels/<split>.tsv`` plus keyword-judged
queries (a ``keywords`` field) that are in the split (an optional ``split`` field, default: every
split). Decisions on imperfect data, applied the same way everywhere:
- duplicate document or query ids, empty query text: error (which copy is meant is unknowable);
- judgments naming a query that is not in ``queries.jsonl``: dropped, counted, warned (no text to
  search with);
- judgments naming a document not in the corpus: kept (they still count as relevant, so recall is
  honest about what the corpus lacks), counted, warned.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness import defaults
from harness.errors import DATA_WARNING, InputError, warn_ids
from harness.io.lines import iter_lines, json_object
from harness.io.tags import parse_tags
from harness.io.trec import read_qrels
from harness.model import Corpus, GoldenDataset, Query

log = logging.getLogger("harness")

_WHITESPACE = re.compile(r"\s")
_DOC_KEYS = {"_id", "id", "title", "text", "metadata"}
_QUERY_KEYS = {"_id", "id", "text", "keywords", "metadata", "split"}


def _validation_error(e: ValidationError, path: Path, lineno: int) -> InputError:
    err = e.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or None
    field = {"id": "_id"}.get(field or "", field)
    return InputError(err["msg"], path=path, line=lineno, field=field)


def _metadata(obj: dict[str, Any], path: Path, lineno: int) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise InputError(f"must be a JSON object, got {type(meta).__name__}", path=path, line=lineno, field="metadata")
    return dict(meta)


def _id_of(obj: dict[str, Any], path: Path, lineno: int) -> str:
    raw = obj.get("_id", obj.get("id"))
    if raw is None:
        raise InputError("missing", path=path, line=lineno, field="_id")
    if not isinstance(raw, (str, int)) or isinstance(raw, bool):
        raise InputError(f"must be a string, got {type(raw).__name__}", path=path, line=lineno, field="_id")
    value = raw if isinstance(raw, str) else str(raw)
    # re's \s on str is exactly str.isspace (Py_UNICODE_ISSPACE), without a generator per id
    if not value or _WHITESPACE.search(value):
        raise InputError(
            f"{value!r} is empty or contains whitespace (TREC files could not hold it)",
            path=path,
            line=lineno,
            field="_id",
        )
    return value


def _records(path: Path, what: str, known_keys: set[str]) -> Iterator[tuple[int, dict[str, Any], str, dict[str, Any]]]:
    """``(line, object, id, metadata)`` per JSONL record; ids must be unique. Keys we do not know
    are kept in the metadata rather than lost."""
    first_seen: dict[str, int] = {}
    for lineno, line in iter_lines(path, f"{what}s file", skip_comments=False):
        obj = json_object(path, lineno, line)
        rid = _id_of(obj, path, lineno)
        if rid in first_seen:
            raise InputError(
                f"duplicate {what} id {rid!r} (first at line {first_seen[rid]})", path=path, line=lineno, field="_id"
            )
        first_seen[rid] = lineno
        extra = {k: v for k, v in obj.items() if k not in known_keys}
        yield lineno, obj, rid, _metadata(obj, path, lineno) | extra


def _string_field(obj: dict[str, Any], key: str, path: Path, lineno: int, *, none_ok: bool) -> str:
    """``obj[key]`` as a string, with pydantic's message for anything else (the checks a
    ``Document`` would make, without building one per line)."""
    value = obj.get(key)
    if isinstance(value, str):
        return value
    if value is None and (none_ok or key not in obj):
        return ""
    raise InputError("Input should be a valid string", path=path, line=lineno, field=key)


def read_corpus(path: str | os.PathLike[str]) -> Corpus:
    """The corpus as columns: one dict per line is parsed and dropped, so memory holds the
    strings and not a million objects (one pydantic model per line cost 12x ``json.loads``)."""
    p = Path(path)
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    metadata: dict[int, dict[str, Any]] = {}
    first_seen: dict[str, int] = {}
    for lineno, line in iter_lines(p, "documents file", skip_comments=False):
        obj = json_object(p, lineno, line)
        doc_id = _id_of(obj, p, lineno)
        if doc_id in first_seen:
            msg = f"duplicate document id {doc_id!r} (first at line {first_seen[doc_id]})"
            raise InputError(msg, path=p, line=lineno, field="_id")
        first_seen[doc_id] = lineno
        text = _string_field(obj, "text", p, lineno, none_ok=False)
        # a falsy title (null, "") is no title, as before
        title = _string_field(obj, "title", p, lineno, none_ok=True) if obj.get("title") else ""
        if not _DOC_KEYS.issuperset(obj) or "metadata" in obj:
            meta = _metadata(obj, p, lineno) | {k: v for k, v in obj.items() if k not in _DOC_KEYS}
            if meta:
                metadata[len(ids)] = meta
        ids.append(doc_id)
        titles.append(title)
        texts.append(text)
    del first_seen
    return Corpus(ids, texts, titles, metadata)


def read_queries(path: str | os.PathLike[str]) -> tuple[list[Query], dict[str, str | None]]:
    """Queries, and each query's ``split`` field (None when absent)."""
    p = Path(path)
    queries: list[Query] = []
    splits: dict[str, str | None] = {}
    for lineno, obj, qid, metadata in _records(p, "query", _QUERY_KEYS):
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError("query text is missing or empty", path=p, line=lineno, field="text")
        keywords = obj.get("keywords") or ()
        if isinstance(keywords, str):
            keywords = (keywords,)
        if not isinstance(keywords, (list, tuple)) or not all(isinstance(k, str) for k in keywords):
            raise InputError("must be a list of strings", path=p, line=lineno, field="keywords")
        if "tags" in metadata:
            try:
                metadata["tags"] = parse_tags(metadata["tags"])
            except ValueError as e:
                field = "metadata.tags" if "tags" in (obj.get("metadata") or {}) else "tags"
                raise InputError(str(e), path=p, line=lineno, field=field) from None
        try:
            queries.append(Query(id=qid, text=text, keywords=tuple(keywords), metadata=metadata))
        except ValidationError as e:
            raise _validation_error(e, p, lineno) from None
        splits[qid] = obj.get("split")
    return queries, splits


#: Longest split name: it is a file name (``qrels/<split>.tsv``).
MAX_SPLIT_CHARS = 100


def check_split_name(split: object) -> str:
    """``split`` if it can name ``qrels/<split>.tsv`` inside the folder: plain text, no path
    separators, not ``.``/``..``, no control characters (``--split ../../x`` would read, and
    ``harness convert`` write, a file outside the folder)."""
    if not isinstance(split, str) or not split.strip():
        raise InputError(f"a split is a non-empty name, got {split!r}", field="split")
    bad = next((c for c in split if c in "/\\" or ord(c) < 32 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None or split in (".", "..") or len(split) > MAX_SPLIT_CHARS:
        why = f"holds {bad!r}" if bad is not None else ("is too long" if len(split) > MAX_SPLIT_CHARS else "is a path")
        raise InputError(
            f"split {split[:60]!r} {why}: a split names qrels/<split>.tsv, so it is a plain name of at most "
            f"{MAX_SPLIT_CHARS} characters with no / \\ or control characters",
            field="split",
        )
    return split


def available_splits(folder: str | os.PathLike[str]) -> list[str]:
    qdir = Path(folder) / "qrels"
    return sorted(f.stem for f in qdir.glob("*.tsv")) if qdir.is_dir() else []


def load_beir(folder: str | os.PathLike[str], split: str = defaults.SPLIT, *, name: str | None = None) -> GoldenDataset:
    """Load a BEIR folder as a :class:`GoldenDataset` restricted to ``split``."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise InputError(
            "dataset folder not found (expected a BEIR folder with corpus.jsonl, queries.jsonl, qrels/)", path=root
        )
    for required in ("corpus.jsonl", "queries.jsonl"):
        if not (root / required).is_file():
            raise InputError(f"not a BEIR folder: {required} is missing", path=root)
    qrels_path = root / "qrels" / f"{check_split_name(split)}.tsv"
    corpus = read_corpus(root / "corpus.jsonl")
    queries, query_splits = read_queries(root / "queries.jsonl")
    has_keywords = any(q.keywords for q in queries)
    if qrels_path.is_file():
        qrels = read_qrels(qrels_path)
    elif has_keywords and not available_splits(root):
        qrels = {}  # a golden set judged only by keywords
    else:
        found = ", ".join(available_splits(root)) or "none"
        raise InputError(f"split {split!r} has no judgments file qrels/{split}.tsv (splits found: {found})", path=root)

    known_queries = {q.id for q in queries}
    unknown_q = sorted(set(qrels) - known_queries)
    if unknown_q:
        warn_ids(log, qrels_path, "judged queries are not in queries.jsonl and are skipped (e.g. %s)", unknown_q)
        for q in unknown_q:
            del qrels[q]
    known_docs = set(corpus.ids.tolist())
    unknown_d = {d for judged in qrels.values() for d in judged if d not in known_docs}
    if unknown_d:
        log.warning(
            "%s: %d judged documents are not in corpus.jsonl (kept: they count as relevant but cannot be retrieved)",
            qrels_path,
            len(unknown_d),
            extra=DATA_WARNING,
        )
    keyword_in_split = {q.id for q in queries if q.keywords and query_splits.get(q.id) in (None, split)}
    clash = sorted(q for q in keyword_in_split if q in qrels)
    if clash:
        raise InputError(
            f"query {clash[0]!r} has keywords and is also judged in qrels/{split}.tsv; use one or the other",
            path=root / "queries.jsonl",
            field="keywords",
        )
    selected = [q for q in queries if q.id in qrels or q.id in keyword_in_split]
    dataset = GoldenDataset.build(name or root.name, corpus, selected, qrels, split=split, source=str(root))
    if not dataset.queries:
        raise InputError(f"split {split!r} has no queries to evaluate", path=root)
    return dataset
