"""How many words a text has, for scripts written with and without spaces.

Whitespace-separated words undercount a question written in Chinese, Japanese or Thai (one
"word" for a whole sentence: every such question would be "short"). So a word is counted as:

- a whitespace-separated token, except that inside one
- each Han ideograph, Hiragana and Katakana character counts as a word of its own (a Chinese or
  Japanese word is one to three characters; a question of three characters is already a phrase);
- each grapheme cluster of Thai, Lao, Khmer and Myanmar (a base character with its combining
  vowel and tone marks) counts as a word of its own (these scripts put no space between words);
- the rest of the token (Latin, Cyrillic, Arabic, digits... between such characters) counts
  as one word per run.

So ``"how does caffeine work"`` is 4 words, ``"咖啡因对睡眠"`` 6 and ``"คาเฟอีน"`` 6. The same count
is the ``short`` filter's, the length strata's and the "words per question" figure's
(docs/synth.md, "Filters").
"""

from __future__ import annotations

import unicodedata

#: code point ranges whose characters each count as a word (Han, kana, CJK extensions)
_EACH = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9D),  # halfwidth Katakana
    (0x20000, 0x3134F),  # CJK extensions B..G
)
#: scripts without spaces whose grapheme clusters each count as a word (Thai, Lao, Myanmar, Khmer)
_CLUSTERS = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))


def _in(c: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= c <= hi for lo, hi in ranges)


def _token(token: str) -> int:
    n = 0
    run = False  # inside a run of other characters (counted once)
    for ch in token:
        c = ord(ch)
        if _in(c, _EACH):
            n, run = n + 1, False
        elif _in(c, _CLUSTERS):
            if not unicodedata.category(ch).startswith("M"):  # a combining mark joins its base
                n += 1
            run = False
        elif not run:
            n, run = n + 1, True
    return n


def count(text: str) -> int:
    """Words in ``text`` by the rule of the module docstring."""
    return sum(_token(t) for t in text.split())
