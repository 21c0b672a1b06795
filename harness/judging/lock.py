"""One judging server per pool file: an ``flock`` on ``POOL.lock`` beside it.

Two servers on one pool each hold the whole file in memory and rewrite it on every grade, so each
erases the other's grades. ``flock`` is held by the open file, not by the lock file's existence: a
server killed by SIGKILL releases it with its process, so there is never a stale lock to clear by
hand. The lock file holds the owner's pid and URL, for the second server's message. A clean exit
removes it; the file a killed server leaves is harmless (the next start takes its lock).

The lock file, not the pool, is locked: the pool is replaced by a rename on every save (a new
inode each time), which would drop a lock held on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from harness.errors import InputError

#: what a lock file written by a server starts with; any other content is a user's file, left alone
MARK = "harness judge serve:"


def lock_path(pool: str | os.PathLike[str]) -> Path:
    """``POOL.lock`` beside the pool, by the pool's real path (a symlink or a relative path to the
    same pool finds the same lock)."""
    real = Path(pool).resolve()
    return real.with_name(real.name + ".lock")


class PoolLock:
    """The exclusive lock on a pool, taken at construction (:class:`InputError` naming the owner when
    another process holds it); :meth:`release` (or the process's end) gives it back."""

    def __init__(self, pool: str | os.PathLike[str]) -> None:
        self.pool = Path(pool)
        self.path = lock_path(pool)
        self._fd: int | None = None
        while self._fd is None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            except OSError as e:  # a link, a folder, no permission: never followed or replaced
                raise InputError(f"cannot open the judging lock file ({e.strerror or e})", path=self.path) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read(fd).removeprefix(MARK).strip()
                os.close(fd)
                raise InputError(
                    f"another `harness judge serve` is grading this pool ({owner or 'pid unknown'}); use its page, "
                    "or stop it first (one server per pool: two would erase each other's grades)",
                    path=self.pool,
                ) from None
            except OSError:
                os.close(fd)
                raise
            # a clean exit unlinks the file while holding the lock: if that happened between our
            # open and our flock, we hold a lock on a file nobody else will open; take it again
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            content = _read(fd)
            if content and not content.startswith(MARK):  # a file of the user's, by chance of its name
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                raise InputError(
                    "this file is in the way of the judging server's lock and is not one: move it away",
                    path=self.path,
                )
            self._fd = fd

    def describe(self, what: str) -> None:
        """Record ``what`` (the owner's pid and URL) in the lock file, for a second server's message."""
        if self._fd is None:
            return
        data = f"{MARK} {what}".encode("utf-8", "replace")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Remove the lock file and give the lock back (unlink first, while it is still held)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> PoolLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> str:
    with contextlib.suppress(OSError):
        return os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
    return ""
