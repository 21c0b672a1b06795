"""Connect mode on a store whose client writes to what it opens: work on a copy.

``chromadb.PersistentClient(path)`` has no read-only mode: opening a store takes its write lock and
rewrites HNSW files, and a path that does not exist becomes a new empty store. Qdrant's local client
takes a lock file in the folder. Connect mode promises that the team's store is never written, so
for these engines (``path:`` only; a server over ``url`` is read through its API) the harness copies
the store into the run's work folder and opens the copy, which goes with the work folder.

The copy costs the store's size on disk and the time to read it once (counted in ``build s``). It is
refused, before anything is written, when the work folder's disk has not the room.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.errors import InputError

#: room left on the work folder's disk after the copy, besides the copy itself
HEADROOM_BYTES = 64 * 2**20


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (links are not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def check_room(engine: str, src: Path, dest_parent: Path) -> int:
    """The store's size, or :class:`InputError` when ``dest_parent``'s disk cannot hold a copy of it."""
    need = folder_bytes(src)
    free = shutil.disk_usage(dest_parent).free
    if need + HEADROOM_BYTES > free:
        raise InputError(
            f"{engine} connect: the store at {src} ({need / 2**20:,.1f} MB) is opened as a copy (its client "
            f"writes to what it opens), and the work folder {dest_parent} has {free / 2**20:,.1f} MB free: "
            "set work_dir to a disk with room",
            field="path",
        )
    return need


def copy_store(engine: str, src: Path, dest_parent: Path) -> Path:
    """A copy of the store folder ``src`` under ``dest_parent`` (room checked first); only reads ``src``."""
    check_room(engine, src, dest_parent)
    dest = dest_parent / "store"
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".lock"))
    return dest
