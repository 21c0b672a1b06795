"""The one clock every written stamp reads (``created``, ``saved``, a history night, a page's date).

One function rather than ``datetime.now(...)`` spelt in each writer: a test freezes it in one place
(tests/test_golden_output.py compares every command's output byte for byte), and every stamp has
the same form, UTC to the second.
"""

from __future__ import annotations

from datetime import datetime, timezone


def now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


def stamp() -> str:
    """:func:`now` as ISO 8601 to the second (``2026-01-02T03:04:05+00:00``), the form results record."""
    return now().isoformat(timespec="seconds")


def local_stamp(fmt: str = "%Y%m%d-%H%M%S") -> str:
    """:func:`now` in the machine's local time, formatted (a default results folder's name)."""
    return now().astimezone().strftime(fmt)
