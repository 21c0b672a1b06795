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

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import InputError

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


def parse_chunking(section: Mapping[str, Any]) -> dict[str, ChunkSpec]:
    """A config's ``chunking:`` mapping (``{name: {method: ..., ...}}``) as validated specs; errors
    name the chunking and the key (``chunking.t128.overlap: ...``)."""
    if not isinstance(section, Mapping) or not section:
        raise InputError("must be a mapping of name -> {method: ..., size: ...}", field="chunking")
    out: dict[str, ChunkSpec] = {}
    for name, raw in section.items():
        if not isinstance(name, str) or not name or any(c in name for c in "[]/\\ \t\n"):
            raise InputError(f"chunking name {name!r} must be a plain word (it names rows and files)", field="chunking")
        if not isinstance(raw, Mapping):
            raise InputError("must be a mapping like {method: tokens, size: 128}", field=f"chunking.{name}")
        try:
            out[name] = ChunkSpec.model_validate(dict(raw))
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise InputError(
                err["msg"].removeprefix("Value error, "), field=f"chunking.{name}" + (f".{loc}" if loc else "")
            ) from None
    return out
