"""The stream's results folder: written whole or marked incomplete, every file's sha256 recorded.

Layout of ``DIR``: ``runbook.jsonl`` (the operations, always written), ``runs/<retriever>-cp<N>.trec``
(every query's ranking at checkpoint N, so anyone can re-score it), ``report.html`` (engine against
exact over the checkpoints, time to retrievable) and ``stream.json`` (the figures, in the common
envelope: ``files``, each file's sha256; ``complete``). The folder is staged and published by
:class:`harness.io.staged.Staged` (a hidden folder of this process beside ``DIR``, renamed into place
when the stream ends, finished or interrupted, then ``complete: false``; a second command given the
same ``DIR`` is refused while this one writes): ``DIR`` is never half-written. ``DIR`` must be new or
empty, so nothing a user wrote is overwritten.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from harness.io import staged
from harness.results.folder import run_stem

STREAM = "stream.json"
RUNBOOK = "runbook.jsonl"
RUNS = "runs"
PAGE = "report.html"
KIND = "stream"
#: 2: the common envelope (``schema: retrieval-harness/stream``); 1 was ``schema: retrieval-harness/stream/1``
VERSION = 2
SCHEMA = staged.schema(KIND)


def check_out(out: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, a ``--out`` that exists and is not an empty folder."""
    return staged.check_out(out, "new_or_empty")


def run_name(retriever: str, checkpoint: int) -> str:
    """``runs/<retriever>-cp<N>.trec``; a name that is not file-safe is made so (with its hash)."""
    safe = retriever if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}", retriever) else run_stem(retriever)
    return f"{RUNS}/{safe}-cp{checkpoint}.trec"


class StreamFolder(staged.Staged):
    """The staging folder of one stream (:class:`~harness.io.staged.Staged`), closed by ``stream.json``."""

    def __init__(self, out: Path) -> None:
        super().__init__(out, KIND, VERSION, mode="new_or_empty")

    def finish(self, doc: dict[str, Any], *, complete: bool) -> Path:  # type: ignore[override]
        """The page, then ``stream.json`` last, then the folder moved into place."""
        from harness.stream.page import to_html

        self.write(PAGE, to_html({**doc, "complete": complete}).encode("utf-8"))
        return super().finish(STREAM, doc, complete=complete)


def is_stream_folder(folder: str | os.PathLike[str]) -> bool:
    return (Path(folder) / STREAM).is_file()


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A stream.json written before the common envelope (``retrieval-harness/stream/1``) as version 1."""
    if doc.get("schema") == "retrieval-harness/stream/1":
        rest = {k: v for k, v in doc.items() if k != "schema"}
        return {"schema": SCHEMA, "schema_version": 1, **rest}
    return doc


def read_stream(folder: str | os.PathLike[str], *, allow_incomplete: bool = False) -> dict[str, Any]:
    """``stream.json``, refused (exit 2, naming the file) when the stream was interrupted or a file it
    lists is missing or changed since, unless ``allow_incomplete`` (then each is a warning)."""
    from pydantic import BaseModel, ConfigDict

    class _Any(BaseModel):
        model_config = ConfigDict(extra="allow")

    p = Path(folder) / STREAM
    staged.open_envelope(p, KIND, _Any, version=VERSION, upgrade=upgrade, allow_incomplete=allow_incomplete,
                         incomplete="incomplete: the stream was interrupted; the checkpoints shown are the ones it "
                         "completed", by="the stream")  # fmt: skip
    return upgrade(staged.read_json(p))
