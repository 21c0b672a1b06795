"""Where ``harness check`` may write: never over an input, never over a file it did not write.

``--summary``, ``--junit`` and ``--history`` name files a CI job chooses, often next to the results
they describe. A slip (``--summary results/baseline.json``) must not destroy the baseline or the
current results, so every output is checked before anything is written:

- it must not be an input: the baseline or current results file, the tolerances file, or anything
  inside a results folder's ``results.json`` or ``runs/`` (compared by resolved path and, where the
  file exists, by inode with :func:`os.path.samefile`, so links and ``..`` do not get around it);
- two outputs must not name the same file;
- an existing target must be a file ``harness check`` wrote: a summary, JUnit or comment file ends
  with its marker comment, a history file's lines are its nights; or an empty file (nothing to lose:
  the ``$GITHUB_STEP_SUMMARY`` a runner creates empty for each step). Anything else is a user's
  file: refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.errors import InputError
from harness.gate import junit, render
from harness.gate.history import SCHEMA, SCHEMA_V1

#: what a file of each kind must hold to be ours
_MARKERS = {"summary": render.MARKER, "junit": junit.MARKER, "comment": render.MARKER}


def protected(inputs: Iterable[str | os.PathLike[str] | None]) -> tuple[list[Path], list[Path]]:
    """(files, folders) that no output may touch, for the given input paths (files or results folders)."""
    files: list[Path] = []
    folders: list[Path] = []
    for raw in inputs:
        if raw is None or str(raw) == "":
            continue
        p = Path(raw).expanduser()
        if p.is_dir():
            files.append(p / "results.json")
            folders.append(p / "runs")
        else:
            files.append(p)
            if p.name == "results.json":
                folders.append(p.parent / "runs")
    return files, folders


def _same(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
    except OSError:
        pass
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def guard(outputs: Mapping[str, str | None], inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """Refuse (:class:`InputError`, exit 2) before anything is written; see the module doc.

    ``outputs`` maps a flag (``--summary``, ``--junit``, ``--history``) to its path (or None).
    """
    files, folders = protected(inputs)
    chosen: list[tuple[str, Path]] = []
    for flag, raw in outputs.items():
        if not raw:
            continue
        target = Path(raw).expanduser()
        for f in files:
            if _same(target, f):
                raise InputError(f"{flag} names an input ({f}); choose another file (nothing was written)", path=raw)
        for d in folders:
            if _inside(target, d):
                raise InputError(
                    f"{flag} is inside the results folder's {d.name}/ ({d}); choose another file (nothing was written)",
                    path=raw,
                )
        for other_flag, other in chosen:
            if _same(target, other):
                raise InputError(f"{flag} and {other_flag} name the same file", path=raw)
        chosen.append((flag, target))
        _check_ours(flag, target)


def _check_ours(flag: str, target: Path) -> None:
    if not target.exists() and not target.is_symlink():
        return
    if target.is_dir():
        raise InputError(f"{flag} names a folder; give a file name", path=target)
    if not target.is_file():
        raise InputError(f"{flag} exists and is not a regular file; choose another name", path=target)
    if target.stat().st_size == 0 and not target.is_symlink():
        return  # an empty file holds nothing to lose: the $GITHUB_STEP_SUMMARY a runner creates for a step
    kind = flag.lstrip("-")
    if kind == "history":
        if not is_history(target):
            raise InputError(
                f"{flag}: exists and is not a history file written by harness check (no line with "
                f'"schema": "{SCHEMA}"); it is left as is: choose another file',
                path=target,
            )
        return
    if not _ends_with_marker(target, _MARKERS[kind]):
        raise InputError(
            f"{flag}: exists and was not written by harness check (no marker line); it is left as is: "
            "choose another file or remove it",
            path=target,
        )


def _ends_with_marker(path: Path, marker: str) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 4096))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return bool(lines) and lines[-1] == marker


def is_history(path: Path) -> bool:
    """An empty file, or one whose first parseable line is a night written by harness check."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):
                    continue  # a line cut short: look further
                return isinstance(obj, dict) and obj.get("schema") in (SCHEMA, SCHEMA_V1)  # a night of before, too
    except OSError:
        return False
    return True


def write(path: str | None, text: str, flag: str) -> None:
    """Atomically write an output that :func:`guard` has cleared."""
    if not path:
        return
    from harness.io.atomic import write_text

    try:
        write_text(Path(path).expanduser(), text)
    except OSError as e:
        raise InputError(f"{flag}: cannot write ({e.strerror or e})", path=path) from None


def write_all(files: Mapping[str, tuple[str | None, str]]) -> None:
    """:func:`write` every ``flag: (path, text)`` in order (the paths not given skipped)."""
    for flag, (path, text) in files.items():
        write(path, text, flag)
