"""CSV cells a spreadsheet will not evaluate ("CSV injection"), stored so they read back as written.

A spreadsheet opening a CSV file evaluates a cell that starts with ``=``, ``+``, ``-`` or ``@`` as
a formula (and some treat a leading tab or carriage return the same way): a document whose title is
``=HYPERLINK("http://...")`` or ``=cmd|...`` would run in the grader's spreadsheet. The harness
writes such a cell with one apostrophe in front, the mark spreadsheets use for "this is text": the
grader sees the text, nothing is evaluated.

The scheme is reversible, so a file read back gives the text that was written: every cell starting
with one of :data:`TRIGGERS` *or with an apostrophe* gets one more apostrophe, and reading removes
exactly one leading apostrophe. ``'=1+1`` therefore means the text ``=1+1``, and ``''quoted`` the
text ``'quoted``. Only text cells are neutralised; numbers the harness writes (ranks, grades) are
numbers to a spreadsheet, and ``-1`` evaluates to itself.
"""

from __future__ import annotations

#: first characters that make a spreadsheet evaluate a cell (OWASP's list)
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: the spreadsheet's text mark, added in front of a neutralised cell
MARK = "'"


def neutralise(cell: str) -> str:
    """``cell`` as written to a CSV file: with one :data:`MARK` in front when a spreadsheet would
    evaluate it, or when it starts with the mark itself (so :func:`restore` is exact)."""
    return MARK + cell if cell.startswith((*TRIGGERS, MARK)) else cell


def restore(cell: str) -> str:
    """The text :func:`neutralise` was given (one leading :data:`MARK` removed)."""
    return cell[1:] if cell.startswith(MARK) else cell
