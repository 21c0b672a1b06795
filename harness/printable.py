"""Text from data made safe to print on a terminal: the one escaping every terminal renderer uses.

A query, a document, a doc id or an error quoting one can hold ESC (``\\x1b``), NUL and the other
control characters; printed raw they are not text but commands to whoever reads the output (a
colour, a clear-screen, a window title, a hyperlink: C0 and C1 controls, DEL) or they reorder what
is shown around them (the bidirectional overrides). :func:`printable` shows each of them as its
Python escape (``\\x1b``, ``\\u202e``), so the reader sees that the data holds one and the terminal
obeys none. Everything else, accented letters and CJK included, is left as it is. Rich's own
markup and styles are applied after this, to text that no longer holds any control character.
"""

from __future__ import annotations

#: bidirectional embeddings, overrides and isolates (Unicode's "Trojan Source" characters)
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)

_TABLE: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_TABLE |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
_TABLE |= {c: f"\\u{c:04x}" for c in _BIDI}
# lone surrogates (bytes a reader decoded with surrogateescape) cannot be encoded for the terminal
_TABLE |= {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
_LINES = {**_TABLE, ord("\n"): "\n"}


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` with every control character shown as its escape; with ``lines`` a newline stays a
    newline (a message of several lines), otherwise it is shown as ``\\n`` (a table cell, one line)."""
    return str(text).translate(_LINES if lines else _TABLE)
