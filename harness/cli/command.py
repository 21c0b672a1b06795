"""How a subcommand module adds its parser: ``add_command(sub, "name", ABOUT)``."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_command(sub: argparse._SubParsersAction, name: str, about: str) -> argparse.ArgumentParser:
    """A subcommand parser. ``about`` is the line ``harness --help`` shows for it, a blank line, then
    its description (line breaks in it are only for the source: argparse re-wraps the text)."""
    summary, _, details = about.partition("\n\n")
    return sub.add_parser(name, help=summary, description=" ".join(details.split()) or None)


def usage(parser: argparse.ArgumentParser) -> int:
    """A command of actions run without one: its help on stderr, exit 2 (what argparse does for a bad flag)."""
    parser.print_help(sys.stderr)
    return 2


def require_extras(*needs: Any) -> None:
    """Exit 2 before any work when a command's extras are missing (``harness.extras.Need`` each): one
    line per missing extra, with the pip command."""
    from harness import extras
    from harness.errors import InputError

    missing = extras.unmet(needs)
    if missing:
        raise InputError(extras.message(missing))


#: ``--allow-incomplete``, the same words on every command that reads a results folder
ALLOW_INCOMPLETE = (
    "read a results folder that is incomplete (interrupted run) or whose run files changed after the run "
    "(a warning each instead of exit 2)"
)


def add_allow_incomplete(p: argparse.ArgumentParser) -> None:
    """``--allow-incomplete`` (:data:`ALLOW_INCOMPLETE`) on a command that reads a results folder."""
    p.add_argument("--allow-incomplete", action="store_true", help=ALLOW_INCOMPLETE)
