"""A chunker's specification, as written in a config: ``{method: tokens, size: 128, overlap: 32}``.

Methods (sizes are in tokens of the tokenizer of the model that embeds the chunks; by default the
packaged all-MiniLM-L6-v2's WordPiece):

- ``none``: one chunk per document, id and text unchanged (a ``none`` run equals an unchunked one);
- ``tokens``: windows of ``size`` tokens, each starting ``size - overlap`` tokens after the last,
  never cutting a word in two;
- ``sentences``: whole sentences packed while they fit in ``size`` tokens (``overlap``: tokens of
  trailing sentences repeated at the start of the next chunk);
- ``recursive``: the largest units that fit (paragraphs, then sentences, then words);
- ``markdown``: as ``recursive`` but along Markdown structure (headings, blocks, list items).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import InputError
from harness.registry import strict_scalar_problem

Method = Literal["none", "tokens", "sentences", "recursive", "markdown"]
METHODS: tuple[str, ...] = ("none", "tokens", "sentences", "recursive", "markdown")


class ChunkSpec(BaseModel):
    """One chunker. ``tokenizer``: a local model folder or tokenizer.json whose tokenizer counts
    tokens (default: the packaged all-MiniLM-L6-v2, the dense retriever's model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Method
    size: int | None = Field(None, ge=8, le=100_000, description="tokens per chunk at most")
    overlap: int = Field(0, ge=0, description="tokens shared by consecutive chunks")
    tokenizer: str | None = None

    @model_validator(mode="after")
    def _sizes(self) -> ChunkSpec:
        if self.method == "none":
            if self.size is not None or self.overlap:
                raise ValueError("method none takes no size or overlap")
            return self
        if self.size is None:
            raise ValueError(f"method {self.method} needs a size (tokens per chunk)")
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        if self.method in ("recursive", "markdown") and self.overlap:
            raise ValueError(f"method {self.method} keeps structure whole and takes no overlap")
        return self

    def params(self) -> dict[str, Any]:
        """The parameters that change the chunks (part of every cache key)."""
        return self.model_dump(exclude_none=True)


#: Longest chunking name: it is part of every row name (``bm25[t128]``) and of file names.
MAX_CHUNKING_NAME = 64


def chunking_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a chunking (it names rows and files), or None."""
    if not isinstance(name, str) or not name:
        return f"chunking name {name!r} must be a non-empty word"
    if len(name) > MAX_CHUNKING_NAME:
        return f"chunking name {name[:40]!r}... has {len(name)} characters; at most {MAX_CHUNKING_NAME}"
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c.isspace()), None)
    if bad is not None:
        return f"chunking name {name!r} must not contain control characters, whitespace or lone surrogates ({bad!r})"
    if any(c in name for c in "[]/\\") or name in (".", ".."):
        return f"chunking name {name!r} must be a plain word (it names rows and files; no [ ] / \\)"
    return None


def parse_chunking(section: Mapping[str, Any]) -> dict[str, ChunkSpec]:
    """A config's ``chunking:`` mapping (``{name: {method: ..., ...}}``) as validated specs; errors
    name the chunking and the key (``chunking.t128.overlap: ...``; the error's ``loc`` holds the same
    path as a tuple, for the config's line number). Numbers are strict, as everywhere in a config:
    ``size: "16"``, ``overlap: true`` and ``overlap: 4.0`` are refused, not coerced."""
    if not isinstance(section, Mapping) or not section:
        raise _error("must be a mapping of name -> {method: ..., size: ...}", "chunking")
    out: dict[str, ChunkSpec] = {}
    for name, raw in section.items():
        problem = chunking_name_problem(name)
        if problem:
            raise _error(problem, "chunking", name, field="chunking")
        if not isinstance(raw, Mapping):
            raise _error("must be a mapping like {method: tokens, size: 128}", "chunking", name)
        scalar = strict_scalar_problem(ChunkSpec, raw)
        if scalar is not None:
            raise _error(scalar[1], "chunking", name, *scalar[0])
        try:
            out[name] = ChunkSpec.model_validate(dict(raw))
        except ValidationError as e:
            err = e.errors()[0]
            raise _error(err["msg"].removeprefix("Value error, "), "chunking", name, *err["loc"]) from None
    return out


def _error(message: str, *loc: Any, field: str | None = None) -> InputError:
    """An error whose field names the path (``chunking.t128.size``) and whose ``loc`` holds it."""
    err = InputError(message, field=field or ".".join(str(x) for x in loc if x != "__root__"))
    err.loc = tuple(loc)  # type: ignore[attr-defined]
    return err
