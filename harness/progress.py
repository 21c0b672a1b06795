"""Progress reporting (minimal stub: the UX work owns the real module, with the same API).

Deep code (an encoder, a BM25 indexer) reports through :func:`current` without knowing who
listens, and passes ``show_progress=False`` to third-party libraries.
"""

from __future__ import annotations


class Progress:
    """The no-op reporter."""

    active = False

    def phase(self, name: str, total: int | None = None) -> None:
        """A stage starts; ``total`` units of work, if known."""

    def advance(self, n: int = 1) -> None:
        """``n`` more units of the current stage are done."""

    def note(self, msg: str) -> None:
        """A message for the reader."""


_NULL = Progress()


def current() -> Progress:
    """The active reporter (a no-op here)."""
    return _NULL
