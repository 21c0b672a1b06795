"""The one reading of a relevance grade, shared by every file that carries one: qrels files
(:mod:`harness.io.trec`), pool files (``harness pool``, ``judge serve``, ``judge merge``) and the
judging page's requests.

A grade is a plain ASCII integer within int64, optionally written with a zero fraction (``2``,
``-1``, ``+3``, ``2.0``: some exports write grades as floats). Everything else is refused with the
reason, because each looser reading has silently changed a golden set somewhere:

- ``float()`` / ``int()`` take ``1_0`` (10), ``٣`` (3, an Arabic-Indic digit) and, for ``float``,
  ``1e1`` (10), `` nan`` and ``infinity``;
- a float loses integers past 2**53 (``99999999999999999999999`` becomes ``...1611392``);
- a grade outside int64 cannot be stored in the arrays the metrics run on.

A judge's reply (:func:`final_score`) is read by the same rule: its one ``##final score: N`` line
must carry a grade this module reads, within the judge's 0-3 scale; anything else is no grade.

Text is read as written (no float round trip): the digits decide, so a huge integer is refused as
out of range rather than rounded. JSON numbers must reach :func:`parse_grade` as their literal text
(``json.loads(..., parse_float=str)``), so ``1e1`` in a JSON file is refused as it is in a CSV cell.
"""

from __future__ import annotations

import re

#: A plain ASCII integer, optionally with a zero fraction (``2.0``, as some exports write it).
#: ``[0-9]``, not ``\d``: ``\d`` matches every script's digits.
GRADE_TEXT = re.compile(r"[+-]?[0-9]+(?:\.0*)?\Z")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: what a cell may carry around its grade (a spreadsheet's padding); other whitespace is refused
_PAD = " \t"


class GradeError(ValueError):
    """Not a grade; the message says why (without the file, which the caller names)."""


def is_grade_text(token: str) -> bool:
    """``token`` has a grade's shape (range not checked): used to tell data lines from headers."""
    return bool(GRADE_TEXT.match(token))


def parse_grade(value: object) -> int:
    """``value`` (an ``int``, or text as a file holds it) as an int64 grade; :class:`GradeError`
    otherwise. ``bool`` is refused (JSON ``true`` is not a grade), and so is any ``float``: a float
    has already lost the text that decides (``1e1``, ``99999999999999999999999``)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise GradeError(f"{_show(value)} is not an integer")
    if isinstance(value, int):
        number = value
    else:
        token = value.strip(_PAD)
        if not GRADE_TEXT.match(token):
            raise GradeError(f"{_show(value)} is not an integer{_hint(token)}")
        number = int(token.partition(".")[0])
    if not INT64_MIN <= number <= INT64_MAX:
        raise GradeError(f"{_show(value)} is out of range (a 64-bit integer)")
    return number


def _hint(token: str) -> str:
    if any(c.isdigit() for c in token) and not token.isascii():
        return " (non-ASCII digits are not accepted)"
    if "_" in token:
        return " (no '_' separators)"
    if token[:1] in "0123456789+-" and token[-1:].isdigit() and ("e" in token.lower()):
        return " (no exponent: write the integer)"
    return ""


def _show(value: object) -> str:
    """The value for a message, at most 40 characters; ``repr`` escapes lone surrogates, and an
    integer too long to print (Python refuses past 4,300 digits) is described by its size."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) >= 10**40:
            return f"an integer of {value.bit_length()} bits"
        return str(value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: a line that claims to give a judge's final score (``##final score``, any case and spacing, with or
#: without bold markers): every such line must be well formed, and there must be exactly one
_SCORE_CLAIM = re.compile(r"##\s*final\s*score", re.IGNORECASE)
#: the well-formed line: ``##final score: N``, bold markers (``**``) allowed around the label and the
#: grade, nothing else on the line; N is then read by :func:`parse_grade`
_SCORE_LINE = re.compile(
    r"[ \t]*(?:\*\*)?##[ \t]*final[ \t]+score[ \t]*(?:\*\*)?[ \t]*:"  # the label, bold or not
    r"[ \t]*(?:\*\*)?[ \t]*(?P<n>[^\s*]+?)[ \t]*(?:\*\*)?[ \t]*\Z",  # the grade, bold or not, alone
    re.IGNORECASE,
)


def final_score(reply: str, scale: range = range(0, 4)) -> int | None:
    """The grade of a judge's reply: exactly one well-formed ``##final score: N`` line whose ``N`` is a
    grade (:func:`parse_grade`) within ``scale``; None otherwise.

    Strict on purpose: a reply with two score lines (``2`` then ``2.5``, ``3`` then ``7``, even ``2``
    twice), or one whose ``N`` is ``0-3``, ``1e1``, ``2²``, ``12`` or another script's digit, argues or
    garbles its answer, and reading its first number would invent a grade. No grade is never 0: the
    caller asks again, then leaves the pair ungraded."""
    claims = [line for line in reply.splitlines() if _SCORE_CLAIM.search(line)]
    if len(claims) != 1:
        return None
    m = _SCORE_LINE.match(claims[0])
    if m is None:
        return None
    try:
        grade = parse_grade(m.group("n"))
    except GradeError:
        return None
    return grade if grade in scale else None
