"""``--redact email,phone,card,key``: personal data and secrets out of every text before it is written.

Each kind is one regular expression (:data:`PATTERNS`, documented in docs/traces.md) and a
placeholder (``[EMAIL]``, ``[PHONE]``, ``[CARD]``, ``[KEY]``); ``card`` runs before ``phone`` (a card
number would otherwise look like two phone numbers). Every string taken from a span that reaches a
file (query texts, document ids and contents, service, data source and conversation ids, span ids
in the problems list) goes through :meth:`Redactor.text` (document ids through
:meth:`Redactor.doc_id`).

**Matched in one canonical form.** A pattern sees what a reader sees, not the code points a writer
chose, so the text is first put in the form :func:`canonical` gives: Unicode NFKC (full-width
``ａｌｉｃｅ＠…`` is ``alice@…``, a no-break or thin space is a space), zero-width and other format
characters removed (a zero-width space inside a key or before an ``@``), and ``%40`` / ``&#64;``
read as ``@`` (with the other escapes of the characters the patterns use as structure). The
patterns take any Unicode space, and runs of up to five spaces and dashes (`` - ``), between digit
groups; the email pattern takes non-ASCII letters (``jürgen@bücher.de``); every pattern ignores
case. A text the patterns find nothing in is written as it came; one they find something in is
written in the canonical form, with each match replaced, repeated until nothing matches (no
replacement can join its neighbours into a new match). C0 control characters (other than tab and
newline) become spaces first: a JSON file escapes them as ``\\u00XX``, whose digits could otherwise
complete a number next to them.

**Ids stay distinct.** A document id with a match keeps the rest of its text and gains ``#`` and 16
hex digits of an HMAC-SHA256 of the whole id under a key drawn at random for this import and never
written (``user:[EMAIL]#3f9a…``): two ids that differ only in an email stay two documents, the same
id maps to the same text everywhere in one import (the run, the corpus), and the digits say nothing
of the email (no dictionary of phone numbers can be hashed against them).

**Queries stay one.** Two spans ask one query when their normal forms are equal
(:func:`harness.traces.aggregate.normalise`); redaction runs on that normal form too
(:meth:`Redactor.key`), so spelling a phone number with two spaces instead of one never makes it
a second query.

Every pattern's repetitions are bounded (an email's local part at 64 characters, its labels at 63),
and emails are looked for from each ``@`` (the local part read backwards from it), so a megabyte of
text without a space is read in linear time, at one step per character, not 64.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import re
import secrets
import unicodedata
from collections import Counter

#: between digit groups, in runs of up to 10: any Unicode space, the underscore, dashes (the hyphen,
#: the minus and the Unicode dashes) and middle dots
_SEPARATORS = r"\s_\-\u2010-\u2015\u2212\u2043\ufe58\ufe63\uff0d\u00b7\u2022\u2027\u2219\u22c5"
_CARD_SEP = rf"[{_SEPARATORS}]{{0,10}}"
#: a phone's groups also take dots, slashes and parentheses
_PHONE_SEP = rf"[{_SEPARATORS}.()/]{{0,10}}"
#: a number starts and ends at no letter or digit (an underscore is a boundary: ``user_5551234567``),
#: and not inside a decimal number
_NUM_START = r"(?<![^\W_])(?<!\.)"
_NUM_END = r"(?![^\W_]|\.\d)"
#: characters that end an email's parts (what the address sits between in text)
_NOT_EMAIL = r"\s@<>()\[\]\\,;:\"'`"

#: kind -> pattern; the order is the order they apply in
PATTERNS: dict[str, re.Pattern[str]] = {
    # a local part of up to 64 characters (non-ASCII letters included), @ (spaces around it allowed),
    # labels of up to 63, and a top-level domain that starts with a letter (Unicode letters included)
    "email": re.compile(
        rf"[^{_NOT_EMAIL}]{{1,64}}[ \t]{{0,2}}@[ \t]{{0,2}}(?:[^{_NOT_EMAIL}.]{{1,63}}\.){{1,8}}"
        rf"[^\W\d_][^{_NOT_EMAIL}.]{{1,62}}",
        re.IGNORECASE,
    ),
    # 13 to 19 digits, separators between them; or four groups of four with dots or slashes between
    # them; not inside a word or a decimal number
    "card": re.compile(rf"{_NUM_START}(?:(?:\d{_CARD_SEP}){{12,18}}\d|\d{{4}}(?:[./]\d{{4}}){{3}}){_NUM_END}"),
    # a 10-digit number grouped 3-3-4 (optional parentheses, separators, +country code), or + and 8-15 digits
    "phone": re.compile(
        rf"{_NUM_START}(?<!\+)(?:\+\d{{1,3}}{_PHONE_SEP})?\(?\d{{3}}{_PHONE_SEP}\d{{3}}{_PHONE_SEP}\d{{4}}{_NUM_END}"
        rf"|{_NUM_START}\+\d(?:{_PHONE_SEP}\d){{7,14}}{_NUM_END}"
    ),
    # API keys and tokens: OpenAI-style sk-, AWS access keys, GitHub and Slack tokens, bearer tokens
    "key": re.compile(
        r"sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
        r"|bearer\s+[A-Za-z0-9._~+/-]{16,}=*",
        re.IGNORECASE,
    ),
}
KINDS = tuple(PATTERNS)
#: the email pattern from its ``@`` on, and its local part as the end of the text before the ``@``:
#: together what ``PATTERNS["email"]`` matches, found from each ``@`` instead of from every position
_EMAIL_FROM_AT = re.compile(
    rf"[ \t]{{0,2}}@[ \t]{{0,2}}(?:[^{_NOT_EMAIL}.]{{1,63}}\.){{1,8}}[^\W\d_][^{_NOT_EMAIL}.]{{1,62}}", re.IGNORECASE
)
_EMAIL_LOCAL = re.compile(rf"[^{_NOT_EMAIL}]{{1,64}}\Z")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_PASSES = 8

#: removed before matching besides the format characters: variation selectors, the combining
#: grapheme joiner and the invisible fillers (Hangul, Khmer, Mongolian, braille blank)
_INVISIBLE_MORE = "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef"


@functools.cache
def _invisible() -> re.Pattern[str]:
    """Every format character (Unicode category Cf: zero-width spaces and joiners, bidi controls,
    the soft hyphen, tags) of the running Python's Unicode tables, and :data:`_INVISIBLE_MORE`. Cf
    characters live in planes 0, 1 and 14 only; reading them takes some 0.1 s, once, when redacting."""
    ranges: list[list[int]] = []
    for c in itertools.chain(range(0x20000), range(0xE0000, 0xE1000)):
        if unicodedata.category(chr(c)) == "Cf":
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    cls = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{cls}{_INVISIBLE_MORE}]")


#: escapes of the characters the patterns use as structure, read as those characters
_ESCAPES = re.compile(r"%(?:40|2[bde0]|28|29|5f)|&#0*64;|&#x0*40;|&commat;|\\u0040|\\x40", re.IGNORECASE)
_UNESCAPED = {"%40": "@", "%2b": "+", "%2d": "-", "%2e": ".", "%20": " ", "%28": "(", "%29": ")", "%5f": "_"}


#: combining marks on a digit (a stroke, an enclosing keycap ``5\u20e3``): the digit is what is read
_MARKED_DIGIT = re.compile(r"(\d)[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def _unescape(m: re.Match[str]) -> str:
    return _UNESCAPED.get(m.group(0).lower(), "@")


def _emails(placeholder: str, s: str) -> tuple[str, int]:
    """``PATTERNS["email"].subn(placeholder, s)``, found from each ``@``: the same matches, left to
    right, in time linear in ``s`` (the pattern itself would try 64 characters at every position)."""
    if "@" not in s:
        return s, 0
    parts: list[str] = []
    done = n = 0
    pos = 0
    while (m := _EMAIL_FROM_AT.search(s, pos)) is not None:
        at = m.start()
        local = _EMAIL_LOCAL.search(s, max(done, at - 64), at)
        if local is None or local.start() == at:
            pos = at + 1 + len(m.group(0)) - len(m.group(0).lstrip(" \t"))  # past this @: no address ends here
            continue
        parts += [s[done : local.start()], placeholder]
        done = pos = m.end()
        n += 1
    return ("".join(parts) + s[done:], n) if n else (s, 0)


def canonical(text: str) -> str:
    """``text`` as the patterns read it: format characters removed, NFKC, structural escapes read."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _invisible().sub("", text))
        text = _MARKED_DIGIT.sub(r"\1", text)
    return _ESCAPES.sub(_unescape, text) if ("%" in text or "&" in text or "\\" in text) else text


class Redactor:
    """Replaces the chosen kinds in every text it is given, counting each replacement."""

    def __init__(self, kinds: list[str] | tuple[str, ...] = ()) -> None:
        unknown = [k for k in kinds if k not in PATTERNS]
        if unknown:
            raise ValueError(f"unknown redaction {unknown[0]!r} (choose from {', '.join(KINDS)})")
        self.patterns = [(k, PATTERNS[k], f"[{k.upper()}]") for k in KINDS if k in kinds]
        self.counts: Counter[str] = Counter({k: 0 for k, _, _ in self.patterns})
        self._key = secrets.token_bytes(32)  # this import's id key: in memory only, never written

    def _redact(self, s: str, count: bool) -> tuple[str, bool]:
        """``s`` in canonical form with every chosen pattern replaced, to a fixpoint; and whether any was."""
        s = canonical(s)
        found = False
        for _ in range(_MAX_PASSES):
            changed = False
            for kind, pattern, placeholder in self.patterns:
                s, n = _emails(placeholder, s) if kind == "email" else pattern.subn(placeholder, s)
                if n:
                    if count:
                        self.counts[kind] += n
                    changed = found = True
            if not changed:
                break
        return s, found

    @staticmethod
    def spaced(s: str) -> str:
        """``s`` with its C0 control characters (but tab and newline) made spaces."""
        return s if s.isprintable() else _CONTROL.sub(" ", s)  # the common case skips the regex (C speed)

    def text(self, s: str) -> str:
        """``s`` with control characters made spaces and, where a chosen pattern matches its canonical
        form, that form with every match replaced; otherwise ``s`` as it came."""
        s = self.spaced(s)
        if not self.patterns:
            return s
        out, found = self._redact(s, count=True)
        return out if found else s

    def doc_id(self, s: str) -> str:
        """A document id: as it came where nothing matches; else redacted, its whitespace made ``_``
        (a TREC run's columns), and ``#`` + a keyed hash of the whole id, so distinct ids stay distinct."""
        if not self.patterns:
            return s
        out, found = self._redact(s, count=True)
        if not found:
            return s
        tag = hmac.new(self._key, s.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]
        return f"{'_'.join(out.split())}#{tag}"

    def key(self, normal: str) -> str:
        """``normal`` (a query's normal form) with every chosen pattern replaced, uncounted: what two
        spans are compared in, a function of the normal form alone, so spans that are one query
        unredacted stay one query redacted."""
        if not self.patterns:
            return normal
        out, found = self._redact(normal, count=False)
        return out if found else normal
