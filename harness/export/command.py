"""``harness export`` as one call: :class:`ExportOptions` in, the files written, the report out.

Nothing a user wrote is overwritten. ``--out`` of a folder format (mteb, ir-metadata, ranx) must be
a new or empty folder, or one an earlier export wrote: :data:`OWNED` inside it lists the files it
wrote, and only those are replaced (a file the new export does not write is removed with the list).
``github-benchmark`` writes one file, replaced only when it already holds a benchmark list.
Every file is written atomically; the report names each one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.errors import InputError
from harness.export import github_benchmark, ir_metadata, mteb, ranx
from harness.export.source import Source, open_sources
from harness.io import atomic, jsontext

Format = Literal["github-benchmark", "mteb", "ir-metadata", "ranx"]
FORMATS: tuple[str, ...] = Format.__args__  # type: ignore[attr-defined]
#: inside an export folder: what the export wrote (the files a later export may replace)
OWNED = ".harness-export"
_SCHEMA = "retrieval-harness/export"


class ExportOptions(BaseModel):
    """Every flag of ``harness export``."""

    model_config = ConfigDict(frozen=True)

    folder: str
    to: Format
    out: str
    allow_incomplete: bool = False
    #: ir-metadata: the source repository (default: the GitHub repository the job runs in, if any)
    repository: str | None = None
    #: ir-metadata: the team behind the runs
    actor: str | None = None


def export(o: ExportOptions) -> str:
    """Read the folder whole, build every file in memory, check the target, write; the report."""
    sources = open_sources(o.folder, allow_incomplete=o.allow_incomplete)
    if not any(s.results.summary for s in sources):
        raise InputError("holds no scores (every retriever failed, or nothing was run): nothing to export",
                         path=o.folder)  # fmt: skip
    out = Path(o.out).expanduser()
    _not_inside(out, sources)
    if o.to == "github-benchmark":
        entries = github_benchmark.entries(sources)
        _check_file(out)
        atomic.write_json(out, entries, indent=1)
        return f"github-benchmark: wrote {out} ({len(entries):,} entries, customBiggerIsBetter)\n"
    notes: list[str] = []
    if o.to == "mteb":
        payload: Mapping[str, bytes] = {k: _json(v) for k, v in mteb.files(sources).items()}
    elif o.to == "ranx":
        made, notes = ranx.files(sources)
        payload = {k: _json(v) for k, v in made.items()}
    else:
        payload, notes = ir_metadata.files(sources, repository=o.repository, actor=o.actor)
    written = _write_folder(out, o.to, payload)
    lines = [f"{o.to}: wrote {len(written):,} files to {out} (listed in its {OWNED})"] + [
        f"  {out / f}" for f in written
    ]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _not_inside(out: Path, sources: list[Source]) -> None:
    """An export never lands in a results folder it reads (its runs, its results.json)."""
    target = out.resolve()
    for s in sources:
        root = s.folder.resolve()
        if target == root or root in target.parents or target in root.parents:
            raise InputError("--out must lie outside the results folder it exports (and not hold it)", path=out)


def _check_file(out: Path) -> None:
    if out.is_dir():
        raise InputError("--out names a folder; github-benchmark writes one JSON file", path=out)
    if out.exists():
        try:
            data = jsontext.loads(out.read_text(encoding="utf-8"), path=out)
        except (OSError, ValueError, InputError):
            data = None
        if not github_benchmark.looks_like_ours(data):
            raise InputError("exists and is not a benchmark list an export wrote; it is left as is: choose another "
                             "file", path=out)  # fmt: skip


def _owned(out: Path) -> list[str] | None:
    """The files an earlier export listed in ``out``, or None when ``out`` is not an export folder."""
    try:
        data = json.loads((out / OWNED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != _SCHEMA or not isinstance(data.get("files"), list):
        return None
    return [f for f in data["files"] if isinstance(f, str)]


def _write_folder(out: Path, fmt: str, payload: Mapping[str, bytes]) -> list[str]:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out names a file; {fmt} writes a folder", path=out)
    before: list[str] = []
    if out.is_dir() and any(out.iterdir()):
        owned = _owned(out)
        if owned is None:
            raise InputError(f"is not empty and was not written by harness export (no {OWNED}); it is left as is: "
                             "choose a new folder", path=out)  # fmt: skip
        before = owned
    root = out.resolve() if out.exists() else None
    for rel in payload:
        target = out / rel
        if root is not None and root not in target.resolve().parents:  # pragma: no cover - names are made safe
            raise InputError(f"{rel!r} would land outside --out", path=out)
    for rel, data in payload.items():
        atomic.write_bytes(out / rel, data)
    for rel in before:
        if rel not in payload and ".." not in Path(rel).parts:
            (out / rel).unlink(missing_ok=True)
    atomic.write_json(out / OWNED, {"schema": _SCHEMA, "format": fmt, "files": list(payload)})
    return list(payload)


def default_repository(env: Mapping[str, str] | None = None) -> str | None:
    """The repository a GitHub runner says the job runs in, for ir_metadata's ``implementation``."""
    env = os.environ if env is None else env
    server, repo = env.get("GITHUB_SERVER_URL", "").strip(), env.get("GITHUB_REPOSITORY", "").strip()
    return f"{server.rstrip('/')}/{repo}" if server and repo else None
