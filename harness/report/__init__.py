"""Rendering results: comparison tables (markdown, terminal) and the files of a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.io import atomic
from harness.report.table import comparison_frame, to_markdown

if TYPE_CHECKING:
    from harness.results import Results

__all__ = ["comparison_frame", "to_markdown", "write_reports"]


def write_reports(results: Results, folder: Path) -> None:
    """Every rendering of ``results`` that belongs in a results folder."""
    atomic.write_text(folder / "table.md", to_markdown(results))
