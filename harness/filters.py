"""Metadata filters: one engine-neutral form, checked once, evaluated exactly.

A query may carry a ``filter`` (a golden-set column, or ``metadata.filter`` of a BEIR query) that
restricts which documents may answer it. Its form is the same for every retriever, so a filtered
comparison of ``bm25``, ``dense`` and a vector database is like for like::

    {"lang": "en"}                        # field equals value
    {"source": {"in": ["wiki", "news"]}}  # field is one of the values
    {"year": {"gte": 2019, "lte": 2021}}  # numeric range (gte, gt, lte, lt)

Keys are ANDed. A document is matched on its ``metadata`` (the BEIR ``metadata`` object, or the
extra columns of a CSV/Parquet corpus); a document without the field never matches. Values compare
by type: a string equals only a string, a boolean only a boolean, and numbers compare as numbers
(``1 == 1.0``), so every engine can store a field in one typed column and answer the same way.

This module is the one reference: the built-in retrievers filter with :func:`doc_mask`, the vector
database drivers translate :class:`Filter` into their own syntax, and tests check every returned
document with :meth:`Filter.matches`. :func:`check_filters` refuses, before any work, a filter that
names a field no document has (it would silently return nothing) or compares a field with a value
of the wrong type.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.model import Corpus, GoldenDataset, Query

#: the key of a query's metadata that holds its filter
FILTER_KEY = "filter"
RANGE_OPS = ("gte", "gt", "lte", "lt")
OPS = ("eq", "in", *RANGE_OPS)

Scalar = str | int | float | bool
#: the integers a filter may name: what a bigint / int64 column holds
INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Condition:
    """``field <op> value``; ``value`` is a tuple for ``in``."""

    field: str
    op: str
    value: Any

    def matches(self, doc_value: Any) -> bool:
        if self.op == "eq":
            return same_value(doc_value, self.value)
        if self.op == "in":
            return any(same_value(doc_value, v) for v in self.value)
        if not _is_number(doc_value):
            return False
        if self.op == "gte":
            return bool(doc_value >= self.value)
        if self.op == "gt":
            return bool(doc_value > self.value)
        if self.op == "lte":
            return bool(doc_value <= self.value)
        return bool(doc_value < self.value)


@dataclass(frozen=True)
class Filter:
    """Conditions, all of which a document must satisfy."""

    conditions: tuple[Condition, ...]

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(c.field in metadata and c.matches(metadata[c.field]) for c in self.conditions)

    @property
    def fields(self) -> list[str]:
        return sorted({c.field for c in self.conditions})

    @property
    def key(self) -> str:
        """A canonical string: queries with equal filters share one document mask."""
        return json.dumps([[c.field, c.op, list(c.value) if c.op == "in" else c.value] for c in self.conditions])


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same_value(a: Any, b: Any) -> bool:
    """Equality as every engine can store it: numbers as numbers, booleans and strings by type."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return isinstance(a, str) and isinstance(b, str) and a == b


def _scalar(value: Any, where: str) -> Scalar:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not a usable value")
    if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
        # no engine stores it (bigint, int64 columns): it would fail mid-run, or compare as a rounded float
        raise ValueError(f"{where}: {value} is outside the 64-bit integer range every store can hold")
    if isinstance(value, (str, int, float, bool)):
        return value
    kind = "null" if value is None else type(value).__name__
    raise ValueError(f"{where}: expected a string, number or boolean, got {kind}")


def parse_filter(obj: Any) -> Filter | None:
    """The :class:`Filter` a config or golden set wrote (``None`` for no filter). A JSON string (a CSV
    cell) is parsed first. Raises ``ValueError`` saying what is wrong; callers add the location."""
    if obj is None or obj == "" or obj == {}:
        return None
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as e:
            raise ValueError(f"not valid JSON ({e.msg})") from None
        if obj is None or obj == {}:
            return None
    if not isinstance(obj, Mapping):
        raise ValueError(f"must be a mapping {{field: value}}, got {type(obj).__name__}")
    conds: list[Condition] = []
    for name, spec in obj.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"field names must be non-empty strings, got {name!r}")
        if isinstance(spec, Mapping):
            if not spec:
                raise ValueError(f"{name}: an empty condition")
            for op, value in spec.items():
                if op not in OPS:
                    raise ValueError(f"{name}: unknown operator {op!r} (use {', '.join(OPS)})")
                if op == "in":
                    if not isinstance(value, (list, tuple)) or not value:
                        raise ValueError(f"{name}.in: expected a non-empty list of values")
                    conds.append(Condition(name, "in", tuple(_scalar(v, f"{name}.in") for v in value)))
                elif op in RANGE_OPS:
                    if not _is_number(value) or not math.isfinite(value):
                        raise ValueError(f"{name}.{op}: expected a number, got {value!r}")
                    conds.append(Condition(name, op, _scalar(value, f"{name}.{op}")))
                else:
                    conds.append(Condition(name, "eq", _scalar(value, f"{name}.eq")))
        elif isinstance(spec, (list, tuple)):
            raise ValueError(f"{name}: a list is not a value; write {{{name}: {{in: [...]}}}} for any of several")
        else:
            conds.append(Condition(name, "eq", _scalar(spec, name)))
    return Filter(tuple(conds))


def query_filter(query: Query) -> Filter | None:
    """The filter a query carries (``metadata["filter"]``), or ``None``. Assumes :func:`check_filters`
    accepted the dataset; a bad filter raises ``InputError`` naming the query."""
    raw = query.metadata.get(FILTER_KEY)
    if raw is None:
        return None
    try:
        return parse_filter(raw)
    except ValueError as e:
        raise InputError(f"query {query.id!r}: filter {e}", field=FILTER_KEY) from None


def value_kind(value: Any) -> str:
    """``bool``, ``int``, ``float``, ``str`` or ``other`` (lists, objects, null)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "other"


def metadata_kinds(corpus: Corpus | Sequence[Any]) -> dict[str, str]:
    """Field -> the one type its values have across the corpus: ``str``, ``int``, ``float`` (numbers,
    ints among them), ``bool``; ``mixed`` when the values differ in type or are not scalars. Drivers
    store the scalar fields in typed columns; a ``mixed`` field cannot be filtered on."""
    seen: dict[str, set[str]] = {}
    for _, meta in _metadata_items(corpus):
        for field, value in meta.items():
            seen.setdefault(field, set()).add(value_kind(value))
    out: dict[str, str] = {}
    for field, kinds in seen.items():
        if kinds <= {"int", "float"}:
            out[field] = "int" if kinds == {"int"} else "float"
        elif len(kinds) == 1 and kinds != {"other"}:
            out[field] = next(iter(kinds))
        else:
            out[field] = "mixed"
    return out


def _metadata_items(corpus: Corpus | Sequence[Any]) -> Iterable[tuple[int, dict[str, Any]]]:
    if isinstance(corpus, Corpus):
        return corpus.metadata_items()
    return ((i, d.metadata) for i, d in enumerate(corpus) if d.metadata)


def doc_mask(corpus: Corpus | Sequence[Any], flt: Filter) -> np.ndarray:
    """Boolean mask over the corpus's positions: the documents ``flt`` admits."""
    mask = np.zeros(len(corpus), dtype=bool)
    for i, meta in _metadata_items(corpus):
        if flt.matches(meta):
            mask[i] = True
    return mask


class MaskCache:
    """Document masks per distinct filter, computed once per corpus (the latency loop asks for the
    same filter query after query)."""

    def __init__(self, corpus: Corpus | Sequence[Any]) -> None:
        self.corpus = corpus
        self._masks: dict[str, np.ndarray] = {}

    def __call__(self, flt: Filter) -> np.ndarray:
        mask = self._masks.get(flt.key)
        if mask is None:
            if len(self._masks) > 4096:
                self._masks.clear()
            mask = self._masks[flt.key] = doc_mask(self.corpus, flt)
        return mask


def group_by_filter(queries: Sequence[Query]) -> list[tuple[Filter | None, list[int]]]:
    """Positions of ``queries`` grouped by equal filter (unfiltered queries first, as one group), so
    an engine is asked once per distinct filter."""
    groups: dict[str, tuple[Filter | None, list[int]]] = {}
    for i, q in enumerate(queries):
        flt = query_filter(q)
        key = "" if flt is None else flt.key
        groups.setdefault(key, (flt, []))[1].append(i)
    return sorted(groups.values(), key=lambda g: g[0] is not None)


def has_filters(queries: Iterable[Query]) -> bool:
    return any(q.metadata.get(FILTER_KEY) not in (None, "", {}) for q in queries)


def check_filters(dataset: GoldenDataset) -> None:
    """Refuse, before any retriever runs, a query filter that cannot mean what it says: malformed,
    naming a field no document has, a field whose values differ in type, or a value of another type
    than the field's (a range over strings, ``"2020"`` against numbers). Each would otherwise
    filter out every document and read as a retriever that finds nothing."""
    if not has_filters(dataset.queries):
        return
    kinds = metadata_kinds(dataset.corpus)
    where = dataset.source
    for q in dataset.queries:
        try:
            flt = parse_filter(q.metadata.get(FILTER_KEY))
        except ValueError as e:
            raise InputError(f"query {q.id!r}: filter {e}", path=where, field=FILTER_KEY) from None
        if flt is None:
            continue
        for c in flt.conditions:
            problem = _condition_problem(c, kinds)
            if problem:
                raise InputError(f"query {q.id!r}: filter {problem}", path=where, field=FILTER_KEY)


def _condition_problem(c: Condition, kinds: Mapping[str, str]) -> str | None:
    kind = kinds.get(c.field)
    if kind is None:
        known = ", ".join(sorted(kinds)[:12]) or "none: no document has metadata"
        return f"names field {c.field!r}, which no document has (document fields: {known})"
    if kind == "mixed":
        return f"field {c.field!r} has values of several types (or lists/objects) across documents: not filterable"
    values = c.value if c.op == "in" else (c.value,)
    hint = " (a CSV corpus holds text: give numbers in JSONL or Parquet)" if kind == "str" else ""
    if c.op in RANGE_OPS and kind not in ("int", "float"):
        return f"{c.field}.{c.op}: a range needs a numeric field; {c.field!r} holds {kind} values{hint}"
    for v in values:
        vk = value_kind(v)
        ok = vk == kind or (vk in ("int", "float") and kind in ("int", "float"))
        if not ok:
            return f"{c.field}: value {v!r} ({vk}) cannot equal the field's {kind} values{hint}"
    return None
