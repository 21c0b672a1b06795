"""Atomic writes: a temp file in the target folder, fsync, then ``os.replace``.

A killed process leaves either the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process umask (read by setting it and setting it back, under a lock)."""
    with _UMASK_LOCK:
        old = os.umask(0o022)
        os.umask(old)
    return old


def _atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp creates 0600; the file we publish keeps the mode of the file it replaces, or gets
        # what open() would give it (0666 - umask), so teammates and CI users can read it
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


def move(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """A finished file renamed over ``dst`` in one step (``os.replace``): the one way a file is moved
    into place (folders: :mod:`harness.io.staged`)."""
    os.replace(src, dst)


def set_aside(path: Path, suffix: str = ".corrupt") -> None:
    """``path`` renamed out of the way (``NAME.corrupt``) so nothing reads it again; gone already: nothing."""
    with contextlib.suppress(OSError):
        os.replace(path, path.with_name(path.name + suffix))


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return _atomic(path, lambda fh: fh.write(data))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 1) -> Path:
    """JSON with NaN refused (it is not JSON) and non-ASCII kept readable."""
    return write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False) + "\n")


def write_npy(path: str | os.PathLike[str], array: np.ndarray) -> Path:
    """``.npy`` without pickle: loading uses ``allow_pickle=False``."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return write_bytes(path, buf.getvalue())
