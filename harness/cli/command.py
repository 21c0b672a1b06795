"""How a subcommand module adds its parser: ``add_command(sub, "name", ABOUT)``."""

from __future__ import annotations

import argparse


def add_command(sub: argparse._SubParsersAction, name: str, about: str) -> argparse.ArgumentParser:
    """A subcommand parser. ``about`` is the line ``harness --help`` shows for it, a blank line, then
    its description (line breaks in it are only for the source: argparse re-wraps the text)."""
    summary, _, details = about.partition("\n\n")
    return sub.add_parser(name, help=summary, description=" ".join(details.split()) or None)
