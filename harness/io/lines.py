"""Line reading shared by every text loader: UTF-8 checked per line, bounded line length,
trec_eval-style comment lines, and errors that carry ``FILE:LINE``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io import jsontext

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


def read_utf8(path: Path, missing: str) -> str:
    """A whole small file (a config, results.json) as text; ``missing`` is the error when it is not a
    file, and bytes that are not UTF-8 are an error naming the offset, not a crash in a parser."""
    if not path.is_file():
        raise InputError(missing, path=path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte {e.start})", path=path) from None


def json_object(path: Path, lineno: int, line: str) -> dict[str, Any]:
    """One JSONL line, which must hold a JSON object; errors name ``FILE:LINE``."""
    obj = jsontext.loads(line, path=path, line=lineno)  # nesting depth bounded, errors located
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=lineno)
    return obj


def is_comment(line: str, is_data: Callable[[str], bool] | None = None) -> bool:
    """A comment is a line whose *first* character is ``#`` (an indented ``#`` is data, and so is a
    ``#`` inside a line). ``#`` followed by a space, or alone, is always a comment (trec_eval's
    ``# comment here``); ``#q01 0 d1 1`` is a comment only if it does not have the file's data shape
    (``is_data``), so an id may start with ``#``."""
    if not line.startswith("#"):
        return False
    if len(line) == 1 or line[1].isspace() or is_data is None:
        return True
    return not is_data(line)


def iter_lines(
    path: str | os.PathLike[str],
    what: str,
    *,
    skip_comments: bool = True,
    is_data: Callable[[str], bool] | None = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, without the trailing newline.

    With ``skip_comments``, lines that :func:`is_comment` says are comments are skipped.
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
            if not stripped or (skip_comments and is_comment(line, is_data)):
                continue
            yield lineno, line


def _bounded_lines(fh, path: Path) -> Iterator[bytes]:
    yield from bounded_lines(fh, path)  # type: ignore[misc]


def bounded_lines(fh, path: Path, *, limit: int = MAX_LINE_BYTES, skip_long: bool = False) -> Iterator[bytes | None]:
    """Each line of binary ``fh``, never more than ``limit`` bytes read into memory for one: a longer
    line is an error, or with ``skip_long`` read past in chunks and yielded as None (so a stream of
    records can count it and go on; line numbers stay right)."""
    lineno = 0
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            if skip_long:
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(limit)
                yield None
                continue
            raise InputError(
                f"line longer than {limit // (1024 * 1024)} MiB; is this the right file?",
                path=path,
                line=lineno,
            )
        yield raw
