"""A synthetic set's two files, typed, in one place: ``synth.json`` (its provenance, the envelope of the
folder ``harness synth generate`` writes) and ``bias.json`` (the figures ``synth bias`` writes, which
the page and the terminal line of a run over the set show).

Both were dicts checked key by key in two places (``synth/`` and the page, each with its own idea of
``bias.json``); here each is a pydantic model whose reader is the only one: a hand-edited file is one
located line (file and key) and exit 2. It sits in ``results/`` because the page reads ``bias.json``
and nothing below may import ``synth/``; ``synth/`` writes through it. Files written before the common
envelope (``format: harness-synth``; a ``bias.json`` with no marker) are upgraded on load.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from harness.errors import InputError
from harness.io import staged

SYNTH_FILE = "synth.json"
BIAS_FILE = "bias.json"
SYNTH_KIND, BIAS_KIND = "synth", "bias"
#: synth.json 2: the common envelope (``files``, ``complete``); 1 was ``format: harness-synth``, ``version: 1``
SYNTH_VERSION = 2
#: bias.json 2: ``schema: retrieval-harness/bias``; 1 had no marker
BIAS_VERSION = 2


class SynthQuery(staged.Ordered):
    """One question drawn: kept (with its id) or dropped (with its text and the filter)."""

    id: str | None = None
    kept: bool = Field(strict=True)
    stratum: int | None = Field(None, ge=0, strict=True)

    @model_validator(mode="after")
    def _kept_has_an_id(self) -> SynthQuery:
        if self.kept and self.id is None:
            raise ValueError("a kept question has an id (a string)")
        return self


class SynthDraw(staged.Ordered):
    strata: int = Field(ge=1, strict=True)


class SynthFile(staged.Ordered):
    """``synth.json``: what was asked, drawn, filtered and kept (docs/synth.md)."""

    schema_: str = Field(staged.schema(SYNTH_KIND), alias="schema")
    schema_version: int = SYNTH_VERSION
    generator: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    draw: SynthDraw
    requests: dict[str, Any] = Field(default_factory=dict)
    filtered: dict[str, int] = Field(default_factory=dict)
    queries: list[SynthQuery]
    complete: bool = True
    files: dict[str, str] = Field(default_factory=dict)

    @field_validator("filtered")
    @classmethod
    def _counts(cls, v: dict[str, int]) -> dict[str, int]:
        for k, n in v.items():
            if n < 0:
                raise ValueError(f"filtered.{k} must be a count (a whole number >= 0)")
        return v

    @model_validator(mode="after")
    def _strata(self) -> SynthFile:
        for i, q in enumerate(self.queries):
            if q.stratum is not None and q.stratum >= self.draw.strata:
                raise ValueError(f"queries[{i}].stratum: a stratum 0..{self.draw.strata - 1} (draw.strata)")
        return self

    @classmethod
    def read(cls, folder: str | os.PathLike[str]) -> SynthFile:
        """``DIR/synth.json``; a located error when it is missing, not ours, or not the shape written."""
        p = Path(folder).expanduser() / SYNTH_FILE
        if not p.is_file():
            raise InputError(f"no {SYNTH_FILE}: not a folder `harness synth generate` wrote", path=p.parent)
        return staged.open_envelope(p, SYNTH_KIND, cls, version=SYNTH_VERSION, upgrade=upgrade_synth,
                                    by="synth generate")  # fmt: skip


def upgrade_synth(doc: dict[str, Any]) -> dict[str, Any]:
    """A synth.json written before the common envelope (``format: harness-synth``, ``version: 1``)."""
    if doc.get("format") == "harness-synth" and doc.get("version") == 1:
        rest = {k: v for k, v in doc.items() if k not in ("format", "version")}
        return {"schema": staged.schema(SYNTH_KIND), "schema_version": 1, **rest}
    return doc


def _share(x: Any) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1)


def _check_part(part: dict[str, Any], prefix: str) -> None:
    ranks = part.get("source_rank")
    if not isinstance(ranks, dict):
        raise ValueError(f"{prefix}source_rank must be an object")
    overlap = part.get("overlap", {})
    if not isinstance(overlap, dict):
        raise ValueError(f"{prefix}overlap must be an object")
    for key, x in ((f"source_rank.{k}", ranks.get(k)) for k in ("at1", "at10")):
        if not _share(x):
            raise ValueError(f"{prefix}{key} must be a share in 0..1 or null")
    if not _share(overlap.get("mean")):
        raise ValueError(f"{prefix}overlap.mean must be a share in 0..1 or null")


class BiasFigures(staged.Ordered):
    """``bias.json``: the share BM25 solves at rank 1 and in its top 10, the word overlap with the
    source, the verbatim copies (and the human set's, beside): the parts a page reads checked."""

    schema_: str = Field(staged.schema(BIAS_KIND), alias="schema")
    schema_version: int = BIAS_VERSION
    source_rank: dict[str, Any]
    overlap: dict[str, Any] = Field(default_factory=dict)
    leaked: list[Any] | int | None = None
    human: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _shares(self) -> BiasFigures:
        _check_part({"source_rank": self.source_rank, "overlap": self.overlap}, "")
        if self.human is not None:
            _check_part(self.human, "human.")
        return self

    def figures(self) -> dict[str, Any]:
        """The figures without the envelope (what ``synth bias --format json`` prints)."""
        return {k: v for k, v in self.to_json().items() if k not in ("schema", "schema_version")}

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> BiasFigures:
        return staged.open_envelope(Path(path), BIAS_KIND, cls, version=BIAS_VERSION, upgrade=upgrade_bias)


def upgrade_bias(doc: dict[str, Any]) -> dict[str, Any]:
    """A bias.json written before it had a marker (version 1)."""
    if "schema" not in doc:
        return {"schema": staged.schema(BIAS_KIND), "schema_version": 1, **doc}
    return doc


def write_bias(folder: str | os.PathLike[str], figures: dict[str, Any]) -> Path:
    """``DIR/bias.json``: ``figures`` in the envelope (``schema: retrieval-harness/bias``)."""
    doc = {"schema": staged.schema(BIAS_KIND), "schema_version": BIAS_VERSION, **figures}
    return staged.write_json(Path(folder) / BIAS_FILE, doc)


def read_bias(source: str | os.PathLike[str] | None) -> BiasFigures | None:
    """``bias.json`` of the synthetic set in folder ``source`` (None: not a synthetic set, or no
    figures yet), checked: a hand-edited file is a located :class:`~harness.errors.InputError`
    naming the field, never a crash of the page or a silently missing header."""
    if not source:
        return None
    path = Path(source) / BIAS_FILE
    if not (Path(source) / SYNTH_FILE).is_file() or not path.is_file():
        return None
    return BiasFigures.read(path)
