"""Query tags (the labels slices are made of), checked where they are read.

A tag becomes a slice name in tables, a key in ``results.json`` and a row of the slice report, so
it is checked as any other text that is written: the documented forms are a list of strings
(``["keyword", "numeric"]``) or one comma-separated string (``"keyword, numeric"``); anything else
(``5``, ``true``, ``{}``, ``[1, 2]``) is refused rather than silently leaving the query untagged, and
so is a tag that cannot be written (a lone surrogate, a control character) or is absurdly long.
"""

from __future__ import annotations

import unicodedata
from typing import Any

#: Longest tag (characters): a tag is a slice's name in a table row.
MAX_TAG_CHARS = 200
#: Most tags on one query.
MAX_TAGS = 100


def parse_tags(raw: Any) -> list[str]:
    """The tags of ``raw`` (None, a list of strings, or one comma-separated string), stripped, blank
    ones dropped, duplicates kept once; :class:`ValueError` with what is wrong for anything else."""
    if raw is None:
        return []
    if isinstance(raw, str):
        items: list[Any] = raw.split(",")
    elif isinstance(raw, (list, tuple)):
        items = list(raw)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise ValueError(f'item {i} is {_kind(t)}: tags must be a list of strings, e.g. ["keyword", "numeric"]')
    else:
        raise ValueError(
            f'must be a list of strings or one comma-separated string ("keyword, numeric"), got {_kind(raw)}'
        )
    out: dict[str, None] = {}
    for t in items:
        tag = t.strip()
        if not tag:
            continue
        problem = tag_problem(tag)
        if problem:
            raise ValueError(problem)
        out[tag] = None
    if len(out) > MAX_TAGS:
        raise ValueError(f"{len(out)} tags; at most {MAX_TAGS} per query")
    return list(out)


def tag_problem(tag: str) -> str | None:
    """What makes ``tag`` unwritable, or None."""
    if len(tag) > MAX_TAG_CHARS:
        return f"tag {tag[:40]!r}... is {len(tag)} characters; at most {MAX_TAG_CHARS}"
    for i, ch in enumerate(tag):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"tag {tag[:60]!r}: character {i} is a lone surrogate ({ch!r}), not valid Unicode text"
        if unicodedata.category(ch) == "Cc":
            return f"tag {tag[:60]!r}: character {i} is a control character ({ch!r})"
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    return f"{value!r:.40} ({type(value).__name__})"
