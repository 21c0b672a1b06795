"""The golden-dataset data model: documents, queries, graded judgments.

Pydantic at the edges so bad records fail with a named field; everything downstream works on
plain lists and numpy arrays. The corpus is the one part that can hold millions of records, so it
is columnar (:class:`Corpus`): one pydantic object per document cost 12x ``json.loads``'s time and
1.4x its memory at 1M documents.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from json.encoder import encode_basestring as _json_str  # type: ignore[attr-defined]
from typing import Any, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness import defaults

#: Graded judgments: ``{query_id: {doc_id: grade}}``. Grade >= 1 is relevant; grades <= 0 are
#: judged non-relevant (negative grades are kept and count as gain 0).
Qrels = dict[str, dict[str, int]]


class Document(BaseModel):
    """One retrievable unit (a passage, chunk or whole document)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def content(self) -> str:
        """Title and text joined, the string retrievers index (BEIR's convention)."""
        return f"{self.title} {self.text}" if self.title else self.text


class Query(BaseModel):
    """A query; ``keywords`` makes it judged by content instead of by document id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    text: str
    keywords: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("keywords")
    @classmethod
    def _keywords_not_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not k.strip() for k in value):
            raise ValueError("keywords must be non-empty strings")
        return value


def _object_array(values: Iterable[Any], n: int | None = None) -> np.ndarray:
    """A 1-d object array (``np.asarray`` would make a 2-d array of a list of tuples, or a fixed-width
    unicode array that copies every string)."""
    values = values if isinstance(values, (list, tuple)) else list(values)
    out = np.empty(len(values) if n is None else n, dtype=object)
    out[:] = values
    return out


class Corpus(Sequence[Document]):
    """The documents as columns (``ids``, ``titles``, ``texts``: object arrays of ``str``), with a
    :class:`Document` built on access.

    Adapters that can work on columns (BM25, dense) read ``ids`` and :meth:`contents` and never
    build a ``Document``; code written against ``Sequence[Document]`` keeps working. Values are
    validated once, where they enter (the BEIR reader, or :meth:`from_documents`); the constructor
    trusts its columns.
    """

    __slots__ = ("_metadata", "ids", "texts", "titles")

    def __init__(
        self,
        ids: Sequence[str] | np.ndarray,
        texts: Sequence[str] | np.ndarray,
        titles: Sequence[str] | np.ndarray | None = None,
        metadata: Mapping[int, dict[str, Any]] | None = None,
    ) -> None:
        self.ids = ids if isinstance(ids, np.ndarray) and ids.dtype == object else _object_array(ids)
        n = len(self.ids)
        self.texts = texts if isinstance(texts, np.ndarray) and texts.dtype == object else _object_array(texts)
        if titles is None:
            titles = _object_array([""] * n)
        self.titles = titles if isinstance(titles, np.ndarray) and titles.dtype == object else _object_array(titles)
        if len(self.texts) != n or len(self.titles) != n:
            raise ValueError(
                f"corpus columns differ in length: {n} ids, {len(self.texts)} texts, {len(self.titles)} titles"
            )
        #: sparse: only documents that have metadata are keys (most corpora have none)
        self._metadata: dict[int, dict[str, Any]] = {int(i): m for i, m in (metadata or {}).items() if m}

    @classmethod
    def from_documents(cls, docs: Iterable[Document]) -> Corpus:
        """Columns from validated documents."""
        docs = list(docs)
        return cls(
            [d.id for d in docs],
            [d.text for d in docs],
            [d.title for d in docs],
            {i: d.metadata for i, d in enumerate(docs) if d.metadata},
        )

    @classmethod
    def of(cls, corpus: Corpus | Iterable[Document]) -> Corpus:
        """``corpus`` itself, or a list of documents wrapped (what adapters call on their input)."""
        return corpus if isinstance(corpus, Corpus) else cls.from_documents(corpus)

    # ------------------------------------------------------------------ columns
    def content(self, i: int) -> str:
        """Title and text joined (:attr:`Document.content`) for position ``i``."""
        title, text = self.titles[i], self.texts[i]
        return f"{title} {text}" if title else text

    def contents(self, prefix: str = "") -> Iterator[str]:
        """Each document's content, in order, made one at a time (no list of a million strings)."""
        for title, text in zip(self.titles, self.texts):
            yield prefix + (f"{title} {text}" if title else text)

    def metadata(self, i: int) -> dict[str, Any]:
        return dict(self._metadata.get(int(i), {}))

    def metadata_items(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(position, metadata)`` of the documents that have metadata, in order (read-only views:
        filters scan these without copying a dict per document)."""
        for i in sorted(self._metadata):
            yield i, self._metadata[i]

    # ------------------------------------------------------------------ Sequence[Document]
    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Document: ...
    @overload
    def __getitem__(self, i: slice) -> Corpus: ...
    def __getitem__(self, i: int | slice) -> Document | Corpus:
        if isinstance(i, slice):
            positions = range(len(self))[i]
            meta = {j: self._metadata[p] for j, p in enumerate(positions) if p in self._metadata}
            return Corpus(self.ids[i], self.texts[i], self.titles[i], meta)
        n = len(self)
        pos = int(i)
        if pos < 0:
            pos += n
        if not 0 <= pos < n:
            raise IndexError(f"corpus index {i} out of range ({n} documents)")
        # the values were validated where they entered: construct without validating again
        return Document.model_construct(
            id=self.ids[pos], text=self.texts[pos], title=self.titles[pos], metadata=self.metadata(pos)
        )

    def __iter__(self) -> Iterator[Document]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Corpus):
            return (
                len(self) == len(other)
                and self._metadata == other._metadata
                and all(
                    np.array_equal(a, b)
                    for a, b in ((self.ids, other.ids), (self.titles, other.titles), (self.texts, other.texts))
                )
            )
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(x) for x in self.ids[:3])
        return f"Corpus({len(self)} documents: {head}{', ...' if len(self) > 3 else ''})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Corpus, (self.ids, self.texts, self.titles, self._metadata))

    def fingerprint_lines(self, chunk: int = 2048) -> Iterator[bytes]:
        """The corpus's part of :attr:`GoldenDataset.fingerprint`, in id order, a chunk at a time:
        byte for byte what ``json.dumps(["d", id, title, text], ensure_ascii=False) + "\n"`` gives
        per document (the same C string encoder, without building a list and an encoder per row)."""
        ids = self.ids
        order = sorted(range(len(ids)), key=ids.__getitem__)
        for start in range(0, len(order), chunk):
            parts: list[str] = []
            for i in order[start : start + chunk]:
                parts += (
                    '["d", ',
                    _json_str(ids[i]),
                    ", ",
                    _json_str(self.titles[i]),
                    ", ",
                    _json_str(self.texts[i]),
                    "]\n",
                )
            yield "".join(parts).encode()


def keyword_judgments(queries: Sequence[Query], corpus: Sequence[Document]) -> Qrels:
    """Judge keyword queries by content: a document containing any keyword (case-insensitive,
    in title or text) is relevant with grade 1.

    Content-based judgments survive re-chunking: ids change, the text that answers does not.
    """
    keyword_queries = [q for q in queries if q.keywords]
    if not keyword_queries:
        return {}
    cols = Corpus.of(corpus)
    haystacks = [(i, f"{t}\n{x}".casefold()) for i, t, x in zip(cols.ids, cols.titles, cols.texts)]
    qrels: Qrels = {}
    for q in keyword_queries:
        needles = [k.casefold() for k in q.keywords]
        qrels[q.id] = {doc_id: 1 for doc_id, hay in haystacks if any(n in hay for n in needles)}
    return qrels


class GoldenDataset(BaseModel):
    """Corpus, the queries to evaluate, and their graded judgments.

    ``qrels`` holds every query that is evaluated (a keyword query's judgments are resolved
    against the corpus when the dataset is built), so one query set drives both retrieval and
    scoring.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str
    corpus: Corpus
    queries: list[Query]
    qrels: Qrels
    split: str = defaults.SPLIT
    source: str | None = None

    @field_validator("corpus", mode="before")
    @classmethod
    def _columnar(cls, value: Any) -> Corpus:
        """A list of documents (or dicts) is wrapped; a :class:`Corpus` is kept as is."""
        if isinstance(value, Corpus):
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise ValueError("corpus must be a sequence of documents")
        return Corpus.from_documents(d if isinstance(d, Document) else Document.model_validate(d) for d in value)

    @classmethod
    def build(
        cls,
        name: str,
        corpus: Sequence[Document],
        queries: Sequence[Query],
        qrels: Mapping[str, Mapping[str, int]],
        *,
        split: str = defaults.SPLIT,
        source: str | None = None,
    ) -> GoldenDataset:
        """Assemble a dataset: resolve keyword queries, keep only queries that are judged."""
        judged: Qrels = {q: dict(d) for q, d in qrels.items()}
        judged.update(keyword_judgments(queries, corpus))
        kept = [q for q in queries if q.id in judged]
        return cls(name=name, corpus=Corpus.of(corpus), queries=kept, qrels=judged, split=split, source=source)

    @cached_property
    def doc_ids(self) -> list[str]:
        return self.corpus.ids.tolist()

    @cached_property
    def doc_index(self) -> dict[str, int]:
        """Doc id -> position in ``corpus``."""
        return dict(zip(self.corpus.ids.tolist(), range(len(self.corpus))))

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over canonical content (order-independent), recorded in every result so a
        changed dataset can never be silently compared with an old baseline."""
        h = hashlib.sha256()
        for block in self.corpus.fingerprint_lines():
            h.update(block)
        for q in sorted(self.queries, key=lambda q: q.id):
            h.update(json.dumps(["q", q.id, q.text, list(q.keywords)], ensure_ascii=False).encode())
            h.update(b"\n")
        for qid in sorted(self.qrels):
            q = _json_str(qid)
            lines = [f'["r", {q}, {_json_str(d)}, {json.dumps(g)}]\n' for d, g in sorted(self.qrels[qid].items())]
            h.update("".join(lines).encode())
        return "sha256:" + h.hexdigest()

    def summary(self) -> dict[str, Any]:
        """Counts for manifests and logs."""
        n_judgments = sum(len(v) for v in self.qrels.values())
        return {
            "name": self.name,
            "split": self.split,
            "source": self.source,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "judgments": n_judgments,
            "keyword_queries": sum(1 for q in self.queries if q.keywords),
            "fingerprint": self.fingerprint,
        }
