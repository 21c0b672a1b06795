"""``--redact email,phone,card,key``: personal data and secrets out of every text before it is written.

Each kind is one regular expression (:data:`PATTERNS`, documented in docs/traces.md) and a
placeholder (``[EMAIL]``, ``[PHONE]``, ``[CARD]``, ``[KEY]``); ``card`` runs before ``phone`` (a card
number would otherwise look like two phone numbers). Every string taken from a span that reaches a
file (query texts, document ids and contents, service, data source and conversation ids, span ids
in the problems list) goes through :meth:`Redactor.text`, which repeats the substitutions until
nothing matches, so no replacement can join its neighbours into a new match. C0 control characters
(other than tab and newline) become spaces first: a JSON file escapes them as ``\\u00XX``, whose
digits could otherwise complete a number next to them.
"""

from __future__ import annotations

import re
from collections import Counter

#: kind -> pattern; the order is the order they apply in
PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    # 13 to 19 digits, single spaces or dashes between them; not inside a word or a decimal number
    "card": re.compile(r"(?<![\w.])(?:\d[ -]?){12,18}\d(?!\w|\.\d)"),
    # a 10-digit number grouped 3-3-4 (optional parentheses, separators, +country code), or + and 8-15 digits
    "phone": re.compile(
        r"(?<![\w.+])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}(?!\w|\.\d)"
        r"|(?<![\w.])\+\d(?:[\s.-]?\d){7,14}(?!\w|\.\d)"
    ),
    # API keys and tokens: OpenAI-style sk-, AWS access keys, GitHub and Slack tokens, bearer tokens
    "key": re.compile(
        r"sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/-]{16,}=*"
    ),
}
KINDS = tuple(PATTERNS)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_PASSES = 8


class Redactor:
    """Replaces the chosen kinds in every text it is given, counting each replacement."""

    def __init__(self, kinds: list[str] | tuple[str, ...] = ()) -> None:
        unknown = [k for k in kinds if k not in PATTERNS]
        if unknown:
            raise ValueError(f"unknown redaction {unknown[0]!r} (choose from {', '.join(KINDS)})")
        self.patterns = [(k, PATTERNS[k], f"[{k.upper()}]") for k in KINDS if k in kinds]
        self.counts: Counter[str] = Counter({k: 0 for k, _, _ in self.patterns})

    def text(self, s: str) -> str:
        """``s`` with control characters made spaces and every chosen pattern replaced (to a fixpoint)."""
        if not s.isprintable():  # the common case skips the regex (C speed)
            s = _CONTROL.sub(" ", s)
        if not self.patterns:
            return s
        for _ in range(_MAX_PASSES):
            changed = False
            for kind, pattern, placeholder in self.patterns:
                s, n = pattern.subn(placeholder, s)
                if n:
                    self.counts[kind] += n
                    changed = True
            if not changed:
                return s
        return s
