"""The filters a generated question passes, each applied in this order and counted, never silent.

Before them, the generator counts what never became a question: ``failed`` (documents whose reply
held no usable question after the retries) and ``missing`` (questions asked for with ``--per-doc``
but not in a reply that held fewer; ``synth.json`` lists it after the filters).

0. ``invalid``: not valid Unicode text (a lone surrogate, which a JSON reply may escape): no
   command could read the set back;
1. ``short``: fewer than :data:`MIN_WORDS` words (:func:`harness.synth.words.count`: whitespace-separated
   words, each CJK character and each Thai, Lao, Khmer or Myanmar grapheme cluster a word);
2. ``leaked`` (``--drop-leaked``): its normalised text (:func:`harness.inspect.text.normalize`)
   stands verbatim in its source's normalised content;
3. ``overlap`` (``--max-overlap F``): the share of its distinct analysed tokens (the default BM25
   analyser) found in its source exceeds F;
4. ``duplicate``: its normalised text equals an earlier kept question's (the first is kept);
5. ``near_duplicate``: near an earlier kept question (the near-duplicate groups of ``harness
   inspect``, :func:`harness.inspect.near.near_duplicate_documents`; the first of a group is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.inspect.duplicates import exact_groups
from harness.inspect.near import near_duplicate_documents
from harness.inspect.text import normalize
from harness.model import Corpus
from harness.synth.words import count as word_count

#: a question of fewer words is dropped
MIN_WORDS = 3
#: every filter's name, in the order applied (``synth.json``'s ``filtered`` keys)
NAMES = ("failed", "invalid", "short", "leaked", "overlap", "duplicate", "near_duplicate")


@dataclass
class Candidate:
    """One generated question before filtering."""

    text: str
    source: int  # position of its source document
    style: str
    reply_sha256: str | None
    stratum: int = 0  # its source's length stratum
    overlap: float = 0.0
    leaked: bool = False
    dropped: str | None = None  # the filter that dropped it


def analyser() -> Any:
    """The default BM25 retriever, for its analyser (:meth:`retrievers.bm25.BM25.analyse`)."""
    from retrievers.bm25 import BM25

    return BM25(show_progress=False)


def is_leaked(question: str, source: str) -> bool:
    """The question's normalised text stands verbatim in the source's (an empty one does not)."""
    q = normalize(question)
    return bool(q) and q in normalize(source)


def overlap(question_tokens: Sequence[str], source_tokens: set[str]) -> float:
    """Share of the question's distinct tokens found in ``source_tokens`` (0 for no tokens):
    ``|T(q) & T(d)| / |T(q)|``."""
    distinct = set(question_tokens)
    return len(distinct & source_tokens) / len(distinct) if distinct else 0.0


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def apply(
    candidates: list[Candidate], *, drop_leaked: bool = False, max_overlap: float | None = None
) -> dict[str, int]:
    """Mark each candidate's ``dropped`` (the first filter it fails); counts per filter. Overlap and
    leaked must be set on the candidates beforehand (they need the sources and the analyser)."""
    counts = dict.fromkeys(NAMES, 0)

    def drop(c: Candidate, why: str) -> None:
        c.dropped = why
        counts[why] += 1

    for c in candidates:
        if not _valid(c.text):
            drop(c, "invalid")
        elif word_count(c.text) < MIN_WORDS:
            drop(c, "short")
        elif drop_leaked and c.leaked:
            drop(c, "leaked")
        elif max_overlap is not None and c.overlap > max_overlap:
            drop(c, "overlap")
    alive = [c for c in candidates if c.dropped is None]
    for group in exact_groups(c.text for c in alive):
        for i in group[1:]:
            drop(alive[i], "duplicate")
    alive = [c for c in alive if c.dropped is None]
    texts = Corpus([str(i) for i in range(len(alive))], [c.text for c in alive])
    for group in near_duplicate_documents(texts):
        for i in group[1:]:
            drop(alive[i], "near_duplicate")
    return counts
