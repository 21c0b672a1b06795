"""Errors a user can act on.

Every problem with user input surfaces as an :class:`InputError` that names the file, line and
field, so the CLI can print one line and exit 2 instead of a traceback from deep inside numpy.
"""

from __future__ import annotations

from os import PathLike


class HarnessError(Exception):
    """An error the user can fix; the CLI prints ``error: <message>`` and exits with ``exit_code``."""

    exit_code = 2


class InputError(HarnessError, ValueError):
    """Bad input, located as precisely as we can: ``FILE:LINE: field: what is wrong``."""

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class RetrieverError(HarnessError):
    """A retriever (ours or a team's) failed or returned something unusable."""

    exit_code = 1
