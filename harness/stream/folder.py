"""The stream's results folder: written whole or marked incomplete, every file's sha256 recorded.

Layout of ``DIR``: ``runbook.jsonl`` (the operations, always written), ``runs/<retriever>-cp<N>.trec``
(every query's ranking at checkpoint N, so anyone can re-score it), ``report.html`` (engine against
exact over the checkpoints, time to retrievable) and ``stream.json`` (the figures,
``files``: each file's sha256, ``complete``). Everything is written into a staging folder beside
``DIR`` (``.DIR.harness-next``) and moved into place in one rename when the stream ends, finished or
interrupted (then ``complete: false``): ``DIR`` is never half-written. ``DIR`` must be new or empty,
so nothing a user wrote is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io import atomic
from harness.results.folder import run_stem
from harness.results.integrity import sha256_file

STREAM = "stream.json"
RUNBOOK = "runbook.jsonl"
RUNS = "runs"
PAGE = "report.html"
SCHEMA = "retrieval-harness/stream/1"


def check_out(out: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, a ``--out`` that exists and is not an empty folder."""
    p = Path(out).expanduser()
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise InputError("must be a new or empty folder (nothing there is touched)", path=p, field="--out")
    return p


def run_name(retriever: str, checkpoint: int) -> str:
    """``runs/<retriever>-cp<N>.trec``; a name that is not file-safe is made so (with its hash)."""
    safe = retriever if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}", retriever) else run_stem(retriever)
    return f"{RUNS}/{safe}-cp{checkpoint}.trec"


class StreamFolder:
    """The staging folder of one stream and the sha256 of each file written into it."""

    def __init__(self, out: Path) -> None:
        self.out = out.resolve()
        self.dir = self.out.parent / f".{self.out.name}.harness-next"
        self.files: dict[str, str] = {}

    def open(self) -> StreamFolder:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)  # a killed stream's staging: ours, never published
        (self.dir / RUNS).mkdir(parents=True)
        return self

    def write(self, rel: str, data: bytes) -> Path:
        path = atomic.write_bytes(self.dir / rel, data)
        self.files[rel] = hashlib.sha256(data).hexdigest()
        return path

    def finish(self, doc: dict[str, Any], *, complete: bool) -> Path:
        """Write ``stream.json`` last, then move the folder into place."""
        from harness.stream.page import to_html

        self.write(PAGE, to_html({**doc, "complete": complete}).encode("utf-8"))
        doc = {**doc, "complete": complete, "files": dict(sorted(self.files.items()))}
        atomic.write_json(self.dir / STREAM, doc)
        if self.out.is_dir():
            self.out.rmdir()  # empty (checked before any work)
        os.rename(self.dir, self.out)
        return self.out


def is_stream_folder(folder: str | os.PathLike[str]) -> bool:
    return (Path(folder) / STREAM).is_file()


def read_stream(folder: str | os.PathLike[str], *, allow_incomplete: bool = False) -> dict[str, Any]:
    """``stream.json``, refused (exit 2, naming the file) when the stream was interrupted or a file it
    lists is missing or changed since, unless ``allow_incomplete`` (then each is a warning)."""
    import logging

    p = Path(folder)
    try:
        doc = json.loads((p / STREAM).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read ({e})", path=p / STREAM) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"not a stream results file (schema {SCHEMA})", path=p / STREAM)
    problems: list[InputError] = []
    if doc.get("complete") is not True:
        problems.append(InputError("incomplete: the stream was interrupted; the checkpoints shown are the ones it "
                                   "completed", path=p / STREAM))  # fmt: skip
    for rel, sha in (doc.get("files") or {}).items():
        f = p / rel
        if not f.is_file():
            problems.append(InputError("listed in stream.json but missing", path=f))
        elif sha256_file(f) != sha:
            problems.append(InputError("changed since the stream wrote it (sha256 differs)", path=f))
    if problems and not allow_incomplete:
        raise problems[0]
    for e in problems:
        logging.getLogger("harness").warning("%s", e)
    return doc
