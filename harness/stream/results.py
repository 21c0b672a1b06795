"""``stream.json`` typed: what ``harness stream`` writes and ``harness report DIR`` reads back.

The file was a dict read key by key, so a hand-edited one (a checkpoint's ``metrics`` removed) ended in
``internal error (KeyError: 'metrics')``. Read through :class:`StreamResults` it is one line naming the
file and the key (``stream.json: retrievers.bm25.checkpoints[1].metrics: missing ...``), exit 2, and the
text and the page read attributes, never keys. A file written before the common envelope
(``retrieval-harness/stream/1``) is upgraded on load; :meth:`StreamResults.write` gives back the bytes
it was read from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from harness.io import staged

STREAM = "stream.json"
KIND = "stream"
#: 2: the common envelope (``schema: retrieval-harness/stream``); 1 was ``schema: retrieval-harness/stream/1``
VERSION = 2
SCHEMA = staged.schema(KIND)


class Probed(staged.Ordered):
    probes: int = Field(ge=0)
    hits: int = Field(ge=0)


class Retrievable(staged.Ordered):
    """Seconds from a write's acknowledgement to the first search that found it (None: no probe)."""

    p50: float | None
    p95: float | None
    p99: float | None
    never: float | None


class Latency(staged.Ordered):
    p50: float | None
    p99: float | None


class Checkpoint(staged.Ordered):
    """One checkpoint of one retriever (docs/streaming.md, "The figures")."""

    checkpoint: int = Field(ge=0)
    visible: int = Field(ge=0)
    queries_scored: int = Field(ge=0)
    metrics: dict[str, float | None]
    exact: dict[str, float | None]
    ghost_hits: Probed
    stale_hits: Probed
    short_results: int = Field(ge=0)
    blinks: int = Field(ge=0)
    retrievable_s: Retrievable
    write_rate: float | None
    latency_ms: Latency
    queries_left_out: int = Field(ge=0)
    #: seconds of the segment's writes the encoder took, and whether its embeddings were computed (``cold``) or
    #: read from the cache (``warm``): :mod:`harness.stream.encoding`. None: nothing encoded, or a file written
    #: before they were recorded
    encode_s: float | None = Field(default=None, ge=0)
    cache: Literal["cold", "warm"] | None = None


class RetrieverStream(staged.Ordered):
    type: str
    #: the row's whole config, secrets scrubbed (None in a file written before it was recorded)
    config: dict[str, Any] | None = None
    checkpoints: list[Checkpoint]
    #: why the row stopped (the call, the runbook line and checkpoint, the cause: a team retriever's call that
    #: raised, exited, hung past ``timeout_s`` or answered what ``harness run`` refuses); None: it streamed to
    #: the end, or a file written before failed rows were recorded
    error: str | None = None
    #: what the row streamed when not a store of its own: a connected vector database streams a harness-owned
    #: copy of the team's collection (the team's store is only read); None: its own store
    team_copy: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As read: a row that did not fail is written without ``error`` (as the stream wrote it), and one
        streaming its own store without ``team_copy``, so a file gives back its bytes whether it was written
        before these were recorded or after."""
        d = super().to_json()
        for key in ("error", "team_copy"):
            if getattr(self, key) is None and key not in self._order:
                d.pop(key, None)
        return d


class StreamResults(staged.Ordered):
    """The whole of ``stream.json``."""

    schema_: str = Field(SCHEMA, alias="schema")
    schema_version: int = VERSION
    version: str
    #: when the stream began (:func:`harness.clock.stamp`); None in a file written before it was recorded
    created: str | None = None
    dataset: dict[str, Any]
    queries: int = Field(ge=0)
    metrics: list[str]
    depth: int
    stream: dict[str, Any]
    runbook: str | None
    retrievers: dict[str, RetrieverStream]
    complete: bool
    files: dict[str, str]

    @property
    def metric(self) -> str:
        """The metric the tables and the page show (the config's first)."""
        return self.metrics[0] if self.metrics else "ndcg@10"

    @classmethod
    def read(cls, folder: str | os.PathLike[str], *, allow_incomplete: bool = False) -> StreamResults:
        """``DIR/stream.json``, refused (exit 2, naming the file and the key) when it is not the shape
        ``harness stream`` writes, when the stream was interrupted, or when a file it lists is missing or
        changed since, unless ``allow_incomplete`` (then the last two are warnings)."""
        return staged.open_envelope(
            Path(folder) / STREAM, KIND, cls, version=VERSION, upgrade=upgrade, allow_incomplete=allow_incomplete,
            incomplete="incomplete: the stream was interrupted; the checkpoints shown are the ones it completed",
            by="the stream",
        )  # fmt: skip


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A stream.json written before the common envelope (``retrieval-harness/stream/1``) as version 1."""
    if doc.get("schema") == "retrieval-harness/stream/1":
        rest = {k: v for k, v in doc.items() if k != "schema"}
        return {"schema": SCHEMA, "schema_version": 1, **rest}
    return doc
