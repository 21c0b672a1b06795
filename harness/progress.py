"""Placeholder progress API (the real display lands with the UX work): ``current()`` returns the
active reporter, a no-op by default."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class NullProgress:
    def start(self, total_nodes: int) -> None: ...
    def node(self, index: int, total: int, name: str) -> None: ...
    def phase(self, name: str, total: int | None = None) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def note(self, msg: str) -> None: ...
    def node_done(self, name: str, ok: bool, seconds: float) -> None: ...
    def close(self) -> None: ...


_STACK: list[object] = [NullProgress()]


def current() -> NullProgress:
    return _STACK[-1]  # type: ignore[return-value]


@contextmanager
def use(reporter: object) -> Iterator[object]:
    _STACK.append(reporter)
    try:
        yield reporter
    finally:
        _STACK.remove(reporter)
