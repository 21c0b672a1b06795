"""Leakage: questions written out of their own answer.

A query copied from the document that answers it is found by any retriever that matches words,
so it measures string matching rather than retrieval (the query's source document ranking first
for half the queries is the common symptom). Two checks, on normalised text:

- *leaking*: the query (at least :data:`MIN_WORDS` words) stands verbatim inside one of its
  relevant documents, on word boundaries;
- *near leaking*: the query's word set has Jaccard >= :data:`NEAR_JACCARD` with the word set of a
  sentence of a relevant document (cut at ``.``, ``?``, ``!``): a copied sentence with a word or two
  changed. Listed apart, and only for queries that do not leak verbatim.
"""

from __future__ import annotations

import re

from harness.inspect.text import normalize, sentences, words
from harness.model import GoldenDataset

MIN_WORDS = 5
NEAR_JACCARD = 0.8

_WORD_CHAR = re.compile(r"\w")


def _is_word_char(c: str) -> bool:
    """A character :func:`~harness.inspect.text.words` counts as part of a word."""
    return _WORD_CHAR.fullmatch(c) is not None


def contains_on_word_boundaries(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` and does not start or end inside a word there."""
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before_ok = start == 0 or not (_is_word_char(needle[0]) and _is_word_char(haystack[start - 1]))
        after_ok = end == len(haystack) or not (_is_word_char(needle[-1]) and _is_word_char(haystack[end]))
        if before_ok and after_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


def _word_jaccard(a: set[str], b: set[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def leakage(dataset: GoldenDataset) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(leaking, near_leaking)``: query id -> the relevant documents it leaks from (sorted)."""
    index = dataset.doc_index
    normalized: dict[str, str] = {}

    def text_of(doc: str) -> str:
        t = normalized.get(doc)
        if t is None:
            t = normalized[doc] = normalize(dataset.corpus.content(index[doc]))
        return t

    leaking: dict[str, list[str]] = {}
    near: dict[str, list[str]] = {}
    for q in dataset.queries:
        qn = normalize(q.text)
        qwords = words(qn)
        if len(qwords) < MIN_WORDS:
            continue
        relevant = sorted(d for d, g in dataset.qrels.get(q.id, {}).items() if g >= 1 and d in index)
        exact = [d for d in relevant if contains_on_word_boundaries(text_of(d), qn)]
        if exact:
            leaking[q.id] = exact
            continue
        qset = set(qwords)
        close = [
            d
            for d in relevant
            if any(_word_jaccard(qset, set(words(s))) >= NEAR_JACCARD for s in sentences(text_of(d)))
        ]
        if close:
            near[q.id] = close
    return leaking, near
