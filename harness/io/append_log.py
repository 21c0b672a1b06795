"""A key -> value log on disk, one JSON line per record, appended as records arrive: the reply caches
of ``judge auto`` and ``synth generate``. A killed run keeps every line it wrote (each is one
``write`` of an ``O_APPEND`` file, so lines never interleave); a torn last line, or any line the
reader does not accept, is skipped on reading. The file is created owner-only (0600): keys are
hashes, but what a team's endpoint answered is theirs."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

V = TypeVar("V")


def sha256_text(text: str) -> str:
    """sha256 of ``text`` as UTF-8, lone surrogates kept (``surrogatepass``): every str has a key."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AppendLog(Generic[V]):
    """``get(key)`` from what earlier runs appended; ``append(key, value, record)`` adds one line.

    ``read`` turns a stored record (a dict with ``key``) into its value, or None to skip it; it may
    raise ``KeyError``/``TypeError``/``ValueError`` on a malformed record, which is skipped too."""

    def __init__(self, path: Path, read: Callable[[dict[str, Any]], V | None]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known: dict[str, V] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                    value = read(rec)
                    if value is not None:
                        self._known[str(rec["key"])] = value
                except (ValueError, KeyError, TypeError):
                    continue
        path.parent.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> V | None:
        return self._known.get(key)

    def append(self, key: str, value: V, record: dict[str, Any]) -> None:
        """Remember ``value`` under ``key`` and append ``{"key": key, **record}`` as one line."""
        line = json.dumps({"key": key, **record}) + "\n"
        with self._lock:
            self._known[key] = value
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
