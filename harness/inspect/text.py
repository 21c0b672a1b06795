"""The one text normalisation every finding compares with, and the units cut from it.

Two texts are "the same" when they differ only in what a reader would not count as a difference:
Unicode compatibility forms (NFKC: a ligature, a full-width digit), case (casefolding, which also
folds ``ß`` to ``ss``), and runs of whitespace (folded to one space, trimmed). Everything else
(punctuation, word order) is kept, so an exact duplicate is a copy, not a paraphrase.

Words are ``\\w+`` runs of the normalised text (letters and digits of any script); sentences are the
normalised text cut at ``.``, ``?`` and ``!``. Lone surrogates (a Latin-1 file decoded with
``surrogateescape``) pass through: they are code points like any other, hashed with
``surrogatepass``.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Hashable
from collections.abc import Set as AbstractSet

import numpy as np

#: words per shingle (near-duplicate documents are compared on their word 5-shingles)
SHINGLE = 5

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.?!]+")

#: distinct odd 64-bit multipliers, one per position of a shingle: a shingle's hash depends on its
#: words and their order (numpy's uint64 arithmetic wraps, as a hash should); also one per row of
#: a near-duplicate band (harness.inspect.near)
MIX = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD],
    dtype=np.uint64,
)


def normalize(text: str) -> str:
    """NFKC, casefolded, whitespace runs folded to one space and trimmed. Idempotent."""
    # casefold can produce text NFKC would change again (and the reverse): repeat until stable, so
    # normalize(normalize(x)) == normalize(x) holds for every string (hypothesis finds the cases)
    out = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    if out.isascii():  # ASCII is its own NFKC and casefold: stable after one round
        return out
    for _ in range(8):  # one more round settles every string seen; the bound only guards a cycle
        again = " ".join(unicodedata.normalize("NFKC", out).casefold().split())
        if again == out:
            break
        out = again
    return out


def words(normalized: str) -> list[str]:
    """The words of a normalised text, in order."""
    return _WORD.findall(normalized)


def sentences(normalized: str) -> list[str]:
    """A normalised text cut at ``.``, ``?`` and ``!`` (empty pieces dropped)."""
    return [s.strip() for s in _SENTENCE_END.split(normalized) if s.strip()]


def shingles(tokens: list[str], k: int = SHINGLE) -> set[tuple[str, ...]]:
    """The word ``k``-shingles (every run of ``k`` consecutive words); a text of fewer than ``k``
    words is one shingle of all its words, and a text of none has none."""
    if len(tokens) < k:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}


def jaccard(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """|a & b| / |a | b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


class ShingleHasher:
    """32-bit hashes of a text's word shingles, for MinHash: a word is hashed once (crc32 of its
    UTF-8, kept in a table), a shingle is a mix of its words' hashes computed for the whole text at
    once with numpy. Deterministic across processes (no ``hash()``, which Python salts per run)."""

    def __init__(self, k: int = SHINGLE) -> None:
        self.k = k
        self._ids: dict[str, int] = {}

    def __call__(self, tokens: list[str]) -> np.ndarray:
        """The distinct shingle hashes (uint32) of ``tokens``; empty for no words."""
        if not tokens:
            return np.zeros(0, dtype=np.uint32)
        table = self._ids
        for word in set(tokens).difference(table):  # new words only; the lookups below run in C
            table[word] = zlib.crc32(word.encode("utf-8", "surrogatepass"))
        w = np.fromiter(map(table.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
        k = min(self.k, len(w))
        n = len(w) - k + 1
        h = np.full(n, np.uint64(k), dtype=np.uint64)  # the length tells a short text from a shingle
        for j in range(k):
            h = (h ^ w[j : j + n]) * MIX[j]
        h ^= h >> np.uint64(29)
        return np.unique((h ^ (h >> np.uint64(32))).astype(np.uint32))
