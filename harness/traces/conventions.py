"""A raw span's attributes, read by either retrieval convention, as one :class:`RetrievalSpan`.

- **GenAI** (OpenTelemetry semantic conventions): ``gen_ai.operation.name`` = ``retrieval``; the
  query in ``gen_ai.retrieval.query.text``; the ranking in ``gen_ai.retrieval.documents``, a list of
  ``{"id", "score"}`` (``content`` or ``text`` where content capture is on), recorded either as an
  array of maps or as one JSON string; ``gen_ai.retrieval.top_k``, ``gen_ai.data_source.id``,
  ``gen_ai.conversation.id``.
- **OpenInference** (Phoenix, Arize): ``openinference.span.kind`` = ``RETRIEVER``; the query in
  ``input.value``; the ranking in ``retrieval.documents.{i}.document.id`` / ``.score`` /
  ``.content`` (or a ``retrieval.documents`` list of such maps); ``session.id`` is the conversation.

Every other span is skipped as ``not_retrieval``. A retrieval span is skipped, counted, when its
query text is missing, not a string, or nothing but whitespace and control characters
(``no_query``); when a text that would be written (query, document id or content, service, data
source, conversation) holds a lone surrogate (valid JSON, ``"\\ud800"``, that no UTF-8 file can
hold: ``lone_surrogate``); when its documents value cannot be read (``bad_documents``) or is longer
than :data:`MAX_DOCUMENTS_CHARS` (``documents_too_large``). A document is a map, flat
(``document.id``) or nested as Phoenix writes it (``{"document": {"id": ...}}``); one without a
usable id (a list, a bool, a float that is not whole, an id with whitespace a TREC file cannot hold
or a control character) is dropped from its ranking and counted; a NaN, infinite or non-numeric
score counts as missing. Ids that are numbers become their decimal text. Nothing of a span's text
is evaluated: JSON strings are parsed with :func:`json.loads` and nothing else.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.traces.attributes import BAD, finite, flatten
from harness.traces.read import RawSpan

#: a documents JSON string longer than this is skipped unparsed (a runaway attribute, not a ranking)
MAX_DOCUMENTS_CHARS = 8 * 1024 * 1024
#: documents kept per ranking (a span listing more is cut, counted)
MAX_DOCUMENTS = 10_000
GENAI, OPENINFERENCE = "gen_ai", "openinference"

@dataclass(slots=True)
class Document:
    """One document of a retrieval as the span lists it (any of the three may be missing)."""

    id: str
    score: float | None
    content: str | None


@dataclass(slots=True)
class RetrievalSpan:
    """One retrieval, whichever convention recorded it."""

    raw: RawSpan
    convention: str
    query: str
    documents: list[Document]
    top_k: int | None
    data_source: str | None
    conversation: str | None


_OI_DOC = re.compile(r"retrieval\.documents\.(\d{1,6})\.document\.(id|score|content)")
_SPACE = re.compile(r"\s")
#: what a query of only these holds no text: whitespace and the C0/C1 controls (written as spaces)
_BLANK = re.compile(r"[\s\x00-\x1f\x7f-\x9f]*")


def read_retrieval(span: RawSpan, dropped: Counter[str]) -> RetrievalSpan | str:
    """The retrieval ``span`` records, or the reason it is skipped; dropped documents go in ``dropped``."""
    a = span.attributes
    if a.get("gen_ai.operation.name") == "retrieval":
        convention = GENAI
        query = a.get("gen_ai.retrieval.query.text")
        docs: Any = a.get("gen_ai.retrieval.documents")
        top_k = a.get("gen_ai.retrieval.top_k")
        source, conversation = a.get("gen_ai.data_source.id"), a.get("gen_ai.conversation.id")
    elif isinstance(kind := a.get("openinference.span.kind"), str) and kind.upper() == "RETRIEVER":
        convention = OPENINFERENCE
        query = a.get("input.value")
        docs = a.get("retrieval.documents")
        if docs is None:
            docs = _indexed_documents(a)
        top_k = a.get("retrieval.top_k")
        source, conversation = a.get("metadata.data_source.id"), a.get("session.id")
    else:
        return "not_retrieval"
    if not isinstance(query, str) or _BLANK.fullmatch(query):
        return "no_query"
    docs, problem = _json_text(docs, "documents_too_large", "bad_documents")
    if problem is not None:
        return problem
    if docs is None:
        docs = []
    if not isinstance(docs, list):
        return "bad_documents"
    if len(docs) > MAX_DOCUMENTS:
        dropped["over_max_documents"] += len(docs) - MAX_DOCUMENTS
        docs = docs[:MAX_DOCUMENTS]
    documents = []
    for d in docs:
        doc = _document(d)
        if isinstance(doc, str):
            dropped[doc] += 1
        else:
            documents.append(doc)
    out = RetrievalSpan(
        raw=span,
        convention=convention,
        query=query,
        documents=documents,
        top_k=top_k if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k >= 0 else None,
        data_source=_label(source),
        conversation=_label(conversation),
    )
    return "lone_surrogate" if _surrogate(out) else out


def _encodable(text: str | None) -> bool:
    if text is None or text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(s: RetrievalSpan) -> bool:
    """Whether any text of ``s`` that would be written holds a lone surrogate (no UTF-8 file can)."""
    texts = [s.query, s.raw.service, s.data_source, s.conversation]
    texts += [t for d in s.documents for t in (d.id, d.content)]
    return not all(_encodable(t) for t in texts)


def _indexed_documents(a: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``retrieval.documents.{i}.document.*`` keys as a list of maps, in the order of ``i``."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        if key.startswith("retrieval.documents.") and (m := _OI_DOC.fullmatch(key)):
            by_index.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [by_index[i] for i in sorted(by_index)]


def _json_text(value: Any, too_large: str, not_json: str) -> tuple[Any, str | None]:
    """``value`` parsed where it is JSON text (the documents as one JSON string, or one string per
    document), else as it is; and the reason it cannot be read (``too_large``, ``not_json``), or None."""
    if not isinstance(value, str):
        return value, None
    if len(value) > MAX_DOCUMENTS_CHARS:
        return None, too_large
    try:
        return json.loads(value), None
    except (ValueError, RecursionError):
        return None, not_json


def _document(d: Any) -> Document | str:
    d, problem = _json_text(d, "document_too_large", "document_not_json")  # an array of JSON strings
    if problem is not None:
        return problem
    if not isinstance(d, dict):
        return "document_not_a_map"
    d = flatten(d)  # Phoenix's nested form: {"document": {"id": ...}} as "document.id", as attributes are
    raw_id = d.get("id", d.get("document.id", d.get("doc_id")))
    doc_id = _doc_id(raw_id)
    if doc_id is None:
        return "document_bad_id"
    score = finite(d.get("score", d.get("document.score")))
    content = d.get("content", d.get("document.content", d.get("text")))
    return Document(doc_id, score, content if isinstance(content, str) else None)


def _doc_id(raw: Any) -> str | None:
    if raw is BAD or isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int):
        text = str(raw)
    elif isinstance(raw, float):
        if not raw.is_integer():
            return None
        text = str(int(raw))
    elif isinstance(raw, str):
        text = raw
    else:
        return None
    if not text or len(text) > 512 or not text.isprintable() or _SPACE.search(text):
        return None
    return text


def _label(raw: Any) -> str | None:
    if isinstance(raw, bool) or raw is BAD:
        return None
    if isinstance(raw, int):
        return str(raw)
    return raw[:512] if isinstance(raw, str) and raw else None
