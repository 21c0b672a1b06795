"""Chunk a corpus: every chunk keeps its parent's id, its character span in the parent's text, and
an id ``{parent_id}#{n}`` (n from 0); the parent's title and metadata travel with it (a retriever
indexes ``title + text``, as for whole documents).

``none`` yields exactly one chunk per document with the document's id, text and title, so a
chunking-``none`` run is the unchunked run. Spans are computed once per (chunker, parameters, corpus
text) and cached on disk (:mod:`harness.chunking.store`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from harness.chunking.chunkers import Chunker
from harness.chunking.store import load_spans, save_spans
from harness.errors import InputError
from harness.model import Document

SEPARATOR = "#"


def chunk_id(parent_id: str, n: int) -> str:
    return f"{parent_id}{SEPARATOR}{n}"


def corpus_hash(corpus: Sequence[Document]) -> str:
    """sha256 over the ids, titles and texts in corpus order (what chunk spans depend on)."""
    h = hashlib.sha256()
    for d in corpus:
        h.update(json.dumps([d.id, d.title, d.text], ensure_ascii=False).encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass
class ChunkedCorpus:
    """The chunks, and for each its parent id and ``(start, end)`` span in the parent's text.

    Unpacks as ``corpus, parent_ids, spans = chunk_corpus(...)``.
    """

    corpus: list[Document]
    parent_ids: list[str]
    spans: np.ndarray  # (n_chunks, 2) int64: start, end (end exclusive) in the parent's text
    chunker: str = ""
    cached: bool = field(default=False, compare=False)

    def __iter__(self) -> Iterator[object]:
        return iter((self.corpus, self.parent_ids, self.spans))

    def __len__(self) -> int:
        return len(self.corpus)

    @cached_property
    def parent_of(self) -> dict[str, str]:
        """Chunk id -> parent id."""
        return {d.id: p for d, p in zip(self.corpus, self.parent_ids)}


def _clean(text: str) -> str:
    """The text the chunker sees: lone surrogates (which no tokenizer or Rust library accepts)
    replaced by U+FFFD, one code point for one, so every span still indexes the original text."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _check_spans(spans: list[tuple[int, int]], n: int, doc_id: str, chunker: str) -> list[tuple[int, int]]:
    for a, b in spans:
        if not (0 <= a < b <= n):
            raise InputError(f"chunker {chunker} gave span ({a}, {b}) outside document {doc_id!r} of {n} characters")
    return spans


def chunk_corpus(
    corpus: Sequence[Document], chunker: Chunker, *, cache_dir: str | os.PathLike[str] | None = None
) -> ChunkedCorpus:
    """Chunk every document's text with ``chunker``; with ``cache_dir`` the spans are read from, or
    written to, the on-disk cache keyed by (chunker name, params, corpus text hash).

    Every document yields at least one chunk (an empty or blank text gives one empty chunk, which
    still carries the title), so no document becomes unretrievable by chunking.
    """
    if chunker.method == "none":
        spans = np.array([[0, len(d.text)] for d in corpus], dtype=np.int64).reshape(-1, 2)
        return ChunkedCorpus(list(corpus), [d.id for d in corpus], spans, chunker=chunker.name)

    key = None
    per_doc: list[list[tuple[int, int]]] | None = None
    cached = False
    if cache_dir is not None:
        key = cache_key(chunker, corpus)
        per_doc = load_spans(Path(cache_dir), key, len(corpus), [len(d.text) for d in corpus])
        cached = per_doc is not None
    if per_doc is None:
        per_doc = []
        for d in corpus:
            spans = _check_spans(chunker.spans(_clean(d.text)), len(d.text), d.id, chunker.name)
            per_doc.append(spans or [(0, 0)])
        if cache_dir is not None and key is not None:
            save_spans(Path(cache_dir), key, per_doc, {"chunker": chunker.name, "params": chunker.params()})

    ids_in_corpus = {d.id for d in corpus}
    chunks: list[Document] = []
    parents: list[str] = []
    flat: list[tuple[int, int]] = []
    for d, spans in zip(corpus, per_doc):
        for n, (a, b) in enumerate(spans):
            cid = chunk_id(d.id, n)
            if cid in ids_in_corpus:
                raise InputError(
                    f"chunk id {cid!r} of document {d.id!r} is also a document id; chunk ids would collide",
                    field="_id",
                )
            chunks.append(
                # the parent was validated; its slices need no second validation (17k chunks of
                # SciFact: model_construct keeps a cache hit cheap)
                Document.model_construct(
                    id=cid,
                    text=d.text[a:b],
                    title=d.title,
                    metadata={**d.metadata, "parent_id": d.id, "start": a, "end": b},
                )
            )
            parents.append(d.id)
            flat.append((a, b))
    arr = np.array(flat, dtype=np.int64).reshape(-1, 2)
    return ChunkedCorpus(chunks, parents, arr, chunker=chunker.name, cached=cached)


def cache_key(chunker: Chunker, corpus: Sequence[Document]) -> str:
    """(chunker name, params, corpus text hash) as one hex digest."""
    desc = json.dumps(
        {
            "chunker": chunker.name,
            "params": chunker.params(),
            "tokenizer": chunker.tokenizer_id,
            "corpus": corpus_hash(corpus),
        },
        sort_keys=True,
    )
    return hashlib.sha256(desc.encode()).hexdigest()[:32]


def token_counts(documents: Sequence[Document], tokenizer: str | None = None) -> np.ndarray:
    """Tokens of each document's (chunk's) text, without special tokens, with the tokenizer of
    ``tokenizer`` (a model folder or tokenizer.json; default: the packaged model). The title is not
    counted: it is what a retriever indexes, not what a context holds."""
    from harness.chunking.chunkers import load_tokenizer

    tok, _ = load_tokenizer(tokenizer)
    texts = [_clean(d.text) for d in documents]
    out = np.zeros(len(texts), dtype=np.int64)
    batch = 1024
    for s in range(0, len(texts), batch):
        encs = tok.encode_batch(texts[s : s + batch], add_special_tokens=False)
        out[s : s + len(encs)] = [len(e.ids) for e in encs]
    return out
