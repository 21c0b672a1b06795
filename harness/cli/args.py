"""Command-line arguments checked before any command runs.

Every command that writes results records its command line (``manifest.command``) and the paths it
was given. An argument that is not valid UTF-8 (a file or folder name in Latin-1, which Python
carries as lone surrogates) cannot be written to JSON: found when ``results.json`` is written, it
fails after all the work. Refused here instead, naming the argument and the byte.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import InputError


def check_argv(argv: Sequence[str]) -> None:
    """Raise :class:`InputError` for the first argument that is not valid UTF-8 text."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as e:
            ch = arg[e.start]
            byte = f"byte {ord(ch) - 0xDC00:#x}" if 0xDC80 <= ord(ch) <= 0xDCFF else f"character {ch!r}"
            raise InputError(
                f"argument {arg!r} is not valid UTF-8 text ({byte} at character {e.start}); results record "
                "their command line and paths as text: rename the file or folder"
            ) from None
