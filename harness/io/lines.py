"""Line reading shared by every text loader: UTF-8 checked per line, bounded line length,
trec_eval-style comment lines, and errors that carry ``FILE:LINE``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from harness.errors import InputError

#: Longest line we accept (bytes). A longer one is almost always a wrong file (a binary, a
#: one-line JSON dump) and reading it whole would only waste memory.
MAX_LINE_BYTES = 16 * 1024 * 1024


def open_checked(path: str | os.PathLike[str], what: str) -> Path:
    """The path, if it is a readable regular file; otherwise an error that says what was expected."""
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError(f"{what} not found", path=p)
    if p.is_dir():
        raise InputError(f"{what} expected, found a directory", path=p)
    return p


def iter_lines(path: str | os.PathLike[str], what: str, *, skip_comments: bool = True) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, without the trailing newline.

    Lines whose first non-blank character is ``#`` are comments (as trec_eval treats them).
    """
    p = open_checked(path, what)
    try:
        fh = p.open("rb")
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror}", path=p) from None
    with fh:
        for lineno, raw in enumerate(_bounded_lines(fh, p), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    f"not valid UTF-8 (byte {e.start}: {raw[e.start : e.start + 1]!r})", path=p, line=lineno
                ) from None
            line = line.rstrip("\r\n")
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            stripped = line.strip()
            if not stripped or (skip_comments and stripped.startswith("#")):
                continue
            yield lineno, line


def _bounded_lines(fh, path: Path) -> Iterator[bytes]:
    lineno = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise InputError(
                f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB; is this the right file?",
                path=path,
                line=lineno,
            )
        yield raw
