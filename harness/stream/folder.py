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
from harness.stream.results import KIND, STREAM, VERSION, StreamResults

RUNBOOK = "runbook.jsonl"
RUNS = "runs"
PAGE = "report.html"


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

        self.write(PAGE, to_html(StreamResults.model_validate(self.envelope(doc, complete=complete))).encode("utf-8"))
        return super().finish(STREAM, doc, complete=complete)


def is_stream_folder(folder: str | os.PathLike[str]) -> bool:
    return (Path(folder) / STREAM).is_file()


def read_stream(folder: str | os.PathLike[str], *, allow_incomplete: bool = False) -> StreamResults:
    """``stream.json`` typed (:meth:`StreamResults.read`)."""
    return StreamResults.read(folder, allow_incomplete=allow_incomplete)
