"""Checking what a retriever or stage returned, before anything is scored.

A team's retriever can return anything; a number from a half-valid ranking is worse than none,
so problems are errors that name the retriever and the query.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError, RetrieverError
from harness.filters import check_filters
from harness.io.tags import parse_tags
from harness.model import GoldenDataset, Query
from harness.run import Run

#: vocabularies already found equal to the corpus's, by id (the arrays are held so ids stay
#: unique): a retriever returns the same vocabulary on every call, so the O(corpus) comparison
#: is paid once, not on each of the single-query calls that latency is measured with
_VERIFIED: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}


def _same_vocab(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    hit = _VERIFIED.get((id(a), id(b)))
    if hit is not None and hit[0] is a and hit[1] is b:
        return True
    same = len(a) == len(b) and bool(np.array_equal(a, b))
    if same:
        if len(_VERIFIED) >= 32:
            _VERIFIED.clear()
        _VERIFIED[(id(a), id(b))] = (a, b)
    return same


def validate_output(
    result: Any, queries: Sequence[Query], k: int, doc_ids: np.ndarray, name: str, *, allow_unknown_docs: bool = False
) -> Run:
    """A canonical ``Run`` over the corpus vocabulary, cut to ``k``, holding only asked queries."""
    if result is None:
        raise RetrieverError(
            f"retriever {name!r}: search() returned None (expected {{query_id: [(doc_id, score), ...]}})"
        )
    if not isinstance(result, (Run, Mapping)):
        raise RetrieverError(
            f"retriever {name!r}: search() returned {type(result).__name__}; expected a Run or "
            "a mapping {query_id: [(doc_id, score), ...]}"
        )
    asked = {q.id for q in queries}
    try:
        if isinstance(result, Run):
            run = result
            if not _same_vocab(run.doc_ids, doc_ids) and not allow_unknown_docs:
                corpus = set(doc_ids.tolist())
                used = {run.doc_ids[j] for j in np.unique(run.indices[run.indices >= 0])}
                unknown = sorted(used - corpus)
                if unknown:
                    qid = next(q for q, ranking in run.items() if any(d == unknown[0] for d, _ in ranking))
                    raise InputError(
                        f"query {qid!r}: unknown doc id {unknown[0]!r} (not in the corpus; {len(unknown)} such ids)"
                    )
                run = Run.from_lists(dict(run.items()), doc_ids=doc_ids)
        else:
            run = Run.coerce(_rankings(result), doc_ids=None if allow_unknown_docs else doc_ids)
    except InputError as e:
        raise RetrieverError(f"retriever {name!r} returned an unusable ranking: {e}") from None
    extra = [q for q in run.query_ids if q not in asked]
    if extra:
        raise RetrieverError(
            f"retriever {name!r} returned results for query {extra[0]!r}, which was not asked "
            f"({len(extra)} such queries)"
        )
    if run.depth > k:
        run = run.cut(k)
    return run.with_name(name)


def _rankings(result: Mapping[Any, Any]) -> dict[str, Any]:
    """``{qid: ranking}`` with every ranking materialised (a generator is read once) and every item
    checked to be a ``(doc_id, score)`` pair, so a wrong shape is reported as such, naming the query,
    instead of surfacing later as an odd doc id (a bare string ``"d1"`` unpacks to ``("d", "1")``)."""
    out: dict[str, Any] = {}
    for qid, ranking in result.items():
        q = str(qid)
        if isinstance(ranking, Mapping):
            for pos, (doc, score) in enumerate(ranking.items()):
                _check_score(q, pos, doc, score)
            out[q] = ranking
            continue
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Iterable):
            raise InputError(
                f"query {q!r}: expected a list of (doc_id, score) pairs, got {type(ranking).__name__} {ranking!r:.80}"
            )
        items = list(ranking)
        for pos, item in enumerate(items):
            pair = isinstance(item, (Sequence, np.ndarray)) and not isinstance(item, (str, bytes)) and len(item) == 2
            if not pair:
                hint = " (doc ids alone carry no score: return (doc_id, score) pairs)" if isinstance(item, str) else ""
                raise InputError(f"query {q!r}, item {pos}: expected a (doc_id, score) pair, got {item!r:.80}{hint}")
        for pos, (doc, score) in enumerate(items):
            _check_score(q, pos, doc, score)
        out[q] = items
    return out


def _check_score(qid: str, pos: int, doc: Any, score: Any) -> None:
    """A score is a real number: ``True`` is not 1 and ``"3.5"`` is not 3.5 (both would be scored
    silently as numbers otherwise)."""
    if isinstance(score, (bool, np.bool_)) or not isinstance(score, numbers.Real):
        kind = "a boolean" if isinstance(score, (bool, np.bool_)) else type(score).__name__
        raise InputError(
            f"query {qid!r}, item {pos}, doc {doc!r:.60}: score {score!r:.40} is not a number ({kind}; return a float)"
        )


# ---------------------------------------------------------------------------- the dataset's text
def check_dataset_usable(dataset: GoldenDataset) -> None:
    """Refuse, before any retriever runs, a dataset nothing can be measured on: no judged query
    (every row would score nothing, hours later). An empty corpus is allowed here: a run file scored
    against judgments needs none (:func:`check_corpus_needed` refuses it for every other retriever)."""
    where = dataset.source
    if not dataset.queries or not dataset.qrels:
        raise InputError("no judged query: nothing to score", path=where, field="qrels")
    check_corpus_encodable(dataset)
    check_filters(dataset)  # a filter on a field no document has would silently find nothing


def check_corpus_needed(dataset: GoldenDataset, types: Mapping[str, str | None]) -> None:
    """A corpus of 0 documents, refused before any work when a retriever other than a run file
    (``types``: each retriever's type) would search it: bm25 has no vocabulary to build, a dense
    index nothing to encode, and a table of zeros would be printed as if measured."""
    if len(dataset.corpus) > 0:
        return
    reads = [name for name, kind in types.items() if kind != "run_file"]
    if not reads:
        return
    where = (
        Path(dataset.source) / "corpus.jsonl" if dataset.source and Path(dataset.source).is_dir() else dataset.source
    )
    raise InputError(
        f"the corpus has no documents: retriever {reads[0]!r} has nothing to search (only run_file "
        "retrievers are scored without a corpus)",
        path=where,
        field="corpus",
    )


def check_corpus_encodable(dataset: GoldenDataset) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate such as ``\\ud800``, which JSON
    allows as an escape), *before* any retriever runs: otherwise a run file, a results.json or a team
    service's request fails after hours of work. Names the file, line (found again on this error path
    only) and field; the document or query id otherwise."""
    corpus = dataset.corpus
    columns = [getattr(corpus, c, None) for c in ("ids", "titles", "texts")]
    if all(c is not None for c in columns):  # a columnar corpus: no Document built per row
        rows: Iterable[tuple[str, str, str]] = zip(*columns)
    else:
        rows = ((d.id, d.title, d.text) for d in corpus)
    for row in rows:
        for field, value in zip(("id", "title", "text"), row):
            if isinstance(value, str) and not _encodable(value):
                raise _unencodable(dataset, "corpus", row[0], field, value)
    for q in dataset.queries:
        for field, value in (("id", q.id), ("text", q.text), *(("keywords", k) for k in q.keywords)):
            if not _encodable(value):
                raise _unencodable(dataset, "queries", q.id, field, value)
        if "tags" in q.metadata:
            check_query_tags(dataset, q)
    if dataset.source and not _encodable(dataset.source):
        raise InputError(
            f"the dataset's path {dataset.source!r} is not valid UTF-8 text (a file or folder name in another "
            "encoding); results.json could not record it: rename it",
            field="dataset",
        )
    for qid, judged in dataset.qrels.items():
        for value in (qid, *judged):
            if not _encodable(value):
                raise InputError(
                    f"id {value!r:.60} is not valid Unicode text (a lone surrogate)", path=dataset.source, field="qrels"
                )


def check_query_tags(dataset: GoldenDataset, q: Query) -> None:
    """A query's ``metadata["tags"]`` in a documented form (a list of strings, or one comma-separated
    string), normalised in place to the list the file readers make of it: a dataset built in code gets
    the same check as a file, before any retriever runs, instead of a ``ValidationError`` when
    results.json is built after the first one."""
    try:
        tags = parse_tags(q.metadata["tags"])
    except ValueError as e:
        path, line = _find_record(dataset.source, "queries.jsonl", q.id)
        raise InputError(
            f"query {q.id!r:.60}: {e}", path=path or dataset.source, line=line, field="metadata.tags"
        ) from None
    if q.metadata["tags"] != tags:
        q.metadata["tags"] = tags


def _encodable(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unencodable(dataset: GoldenDataset, kind: str, rid: str, field: str, value: str) -> InputError:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        pos, char = e.start, value[e.start]
    what = "document" if kind == "corpus" else "query"
    message = (
        f"{what} {rid!r:.60}: character {pos} is a lone surrogate ({char!r}), not valid Unicode text; "
        "fix the escape in the file (e.g. a \\ud83d without its pair)"
    )
    json_field = {"id": "_id"}.get(field, field)
    path, line = _find_record(dataset.source, f"{kind}.jsonl", rid)
    if path is None:
        return InputError(message, path=dataset.source, field=json_field)
    return InputError(message, path=path, line=line, field=json_field)


def _find_record(source: str | None, name: str, rid: str) -> tuple[Path | None, int | None]:
    """File and line of the JSONL record with ``_id == rid`` (an error path: read once, stop when found)."""
    if not source:
        return None, None
    path = Path(source) / name
    if not path.is_file():
        return None, None
    try:
        with path.open(encoding="utf-8", errors="surrogateescape") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict) and str(obj.get("_id")) == rid:
                    return path, lineno
    except OSError:
        return path, None
    return path, None
