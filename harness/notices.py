"""Warnings a command logged, repeated at the end of its output, and ``--strict``, which makes data
warnings errors.

A warning on line 1 of 122 (``3 judged documents are not in corpus.jsonl``) scrolls away above the
table it changes, and the run exits 0. So every warning of the harness logger is collected while a
command runs and listed again after its results (:meth:`Notices.summary`). With ``strict`` a warning
about the input data (a record logged with ``extra=DATA_WARNING``, see :mod:`harness.errors`) is an
error instead: raised where it is logged, while the dataset is read, so it stops the run before any
retriever works, with exit 2.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from harness.errors import InputError, is_data_warning


class Notices(logging.Handler):
    """Collects the warnings of the ``harness`` logger (each distinct message once, in order)."""

    def __init__(self, strict: bool = False) -> None:
        super().__init__(level=logging.WARNING)
        self.strict = strict
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.strict and is_data_warning(record):
            raise InputError(f"{message} (an error under --strict)")
        if message not in self.messages:
            self.messages.append(message)

    def summary(self, stream: IO[str] | None = None) -> None:
        """Repeat the collected warnings, one line each, after the command's output."""
        if not self.messages:
            return
        out = stream if stream is not None else sys.stderr
        n = len(self.messages)
        print(f"{n} warning{'s' if n != 1 else ''} (see above; --strict makes data warnings errors):", file=out)
        for m in self.messages:
            print(f"  warning: {m}", file=out)


@contextmanager
def collect(strict: bool = False) -> Iterator[Notices]:
    """Collect the harness logger's warnings while the block runs."""
    handler = Notices(strict)
    log = logging.getLogger("harness")
    log.handlers.insert(0, handler)  # before the stderr handler: under --strict the error is the one line shown
    try:
        yield handler
    finally:
        log.removeHandler(handler)
