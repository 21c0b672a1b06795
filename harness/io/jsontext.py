"""JSON from a user's file, parsed with bounds and located errors.

``json.loads`` raises ``RecursionError`` on ``[[[[...`` nested a few thousand deep, and a plain
``ValueError`` (not ``JSONDecodeError``) on an integer of more than 4,300 digits; neither names a
file. :func:`loads` turns both, and every syntax error, into an :class:`InputError` with the file,
line and column, and refuses nesting deeper than :data:`MAX_JSON_DEPTH` (no input the harness reads
needs more than a handful of levels; a deep one is a wrong file or an attack on the parser).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from harness.errors import InputError

#: The deepest nesting any JSON input may have (objects and arrays inside each other).
MAX_JSON_DEPTH = 100


def loads(
    text: str | bytes,
    *,
    path: str | os.PathLike[str] | None = None,
    line: int | None = None,
    field: str | None = None,
    what: str = "JSON",
    invalid: str | None = None,
    parse_float: Callable[[str], Any] | None = None,
) -> Any:
    """``json.loads(text)``; errors as ``FILE:LINE: field: invalid JSON (... at column N)``.

    ``line`` is the line ``text`` starts on (a JSONL line); for a whole file leave it None and the
    error gives the line inside the file. ``invalid`` replaces the words before a syntax error's
    position (default ``invalid JSON``). ``parse_float``: as :func:`json.loads` (``str`` keeps a
    number's literal text, for a reader that must see ``1e1`` as written)."""
    try:
        obj = json.loads(text, parse_float=parse_float)
    except json.JSONDecodeError as e:
        where = f"at column {e.colno}" if line is not None else f"at line {e.lineno}, column {e.colno}"
        raise InputError(
            f"{invalid or f'invalid {what}'} ({e.msg} {where})",
            path=path,
            line=line if line is not None else e.lineno,
            field=field,
        ) from None
    except RecursionError:
        raise InputError(
            f"invalid {what}: nested more than {MAX_JSON_DEPTH} levels deep", path=path, line=line, field=field
        ) from None
    except ValueError as e:  # an integer past Python's 4,300-digit conversion limit
        raise InputError(f"invalid {what}: {e}", path=path, line=line, field=field) from None
    if isinstance(obj, (dict, list)) and _brackets(text) > MAX_JSON_DEPTH and depth(obj) > MAX_JSON_DEPTH:
        raise InputError(
            f"invalid {what}: nested more than {MAX_JSON_DEPTH} levels deep", path=path, line=line, field=field
        )
    return obj


def _brackets(text: str | bytes) -> int:
    """An upper bound on the nesting depth, in C speed: a flat record skips the walk."""
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")


def depth(obj: Any) -> int:
    """How deep ``obj``'s lists and dicts nest (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, dict):
            values: Any = value.values()
        elif isinstance(value, list):
            values = value
        else:
            continue
        d += 1
        deepest = max(deepest, d)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((v, d) for v in values if isinstance(v, (dict, list)))
    return deepest
