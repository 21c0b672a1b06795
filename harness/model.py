"""The golden-dataset data model: documents, queries, graded judgments.

Pydantic at the edges so bad records fail with a named field; everything downstream works on
plain lists and numpy arrays.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

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


def keyword_judgments(queries: Sequence[Query], corpus: Sequence[Document]) -> Qrels:
    """Judge keyword queries by content: a document containing any keyword (case-insensitive,
    in title or text) is relevant with grade 1.

    Content-based judgments survive re-chunking: ids change, the text that answers does not.
    """
    keyword_queries = [q for q in queries if q.keywords]
    if not keyword_queries:
        return {}
    haystacks = [(d.id, f"{d.title}\n{d.text}".casefold()) for d in corpus]
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
    corpus: list[Document]
    queries: list[Query]
    qrels: Qrels
    split: str = "test"
    source: str | None = None

    @classmethod
    def build(
        cls,
        name: str,
        corpus: Sequence[Document],
        queries: Sequence[Query],
        qrels: Mapping[str, Mapping[str, int]],
        *,
        split: str = "test",
        source: str | None = None,
    ) -> GoldenDataset:
        """Assemble a dataset: resolve keyword queries, keep only queries that are judged."""
        judged: Qrels = {q: dict(d) for q, d in qrels.items()}
        judged.update(keyword_judgments(queries, corpus))
        kept = [q for q in queries if q.id in judged]
        return cls(name=name, corpus=list(corpus), queries=kept, qrels=judged, split=split, source=source)

    @cached_property
    def doc_ids(self) -> list[str]:
        return [d.id for d in self.corpus]

    @cached_property
    def doc_index(self) -> dict[str, int]:
        """Doc id -> position in ``corpus``."""
        return {d.id: i for i, d in enumerate(self.corpus)}

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over canonical content (order-independent), recorded in every result so a
        changed dataset can never be silently compared with an old baseline."""
        h = hashlib.sha256()
        for d in sorted(self.corpus, key=lambda d: d.id):
            h.update(json.dumps(["d", d.id, d.title, d.text], ensure_ascii=False).encode())
            h.update(b"\n")
        for q in sorted(self.queries, key=lambda q: q.id):
            h.update(json.dumps(["q", q.id, q.text, list(q.keywords)], ensure_ascii=False).encode())
            h.update(b"\n")
        for qid in sorted(self.qrels):
            for doc_id, grade in sorted(self.qrels[qid].items()):
                h.update(json.dumps(["r", qid, doc_id, grade], ensure_ascii=False).encode())
                h.update(b"\n")
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
