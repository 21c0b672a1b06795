"""Exact duplicates (queries, documents) and duplicate groups judged differently.

Two texts are duplicates when their normalised forms (:func:`harness.inspect.text.normalize`) are
equal. A group of duplicate documents whose members one query judges differently (one copy
relevant, its twin unjudged or graded otherwise) punishes every retriever that returns the other
copy: it loses for a document that is, for the reader, the same one.

Documents are keyed by a 16-byte digest of their normalised content rather than the content itself
(a million normalised texts would double the corpus in memory); each group is then checked on the
texts themselves, so a digest collision cannot make a false group.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from harness.inspect.text import normalize
from harness.model import Corpus


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def exact_groups(texts: Iterable[str]) -> list[list[int]]:
    """Positions of texts whose normalised forms are equal, groups of two or more, in order."""
    by_key: dict[bytes, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        by_key[_digest(normalize(text))].append(i)
    return [g for g in by_key.values() if len(g) > 1]


def _verified(groups: list[list[int]], text_of: Sequence[str] | Corpus) -> list[list[int]]:
    """Each digest group split by the normalised texts themselves (a collision is two groups)."""
    out: list[list[int]] = []
    for g in groups:
        by_text: dict[str, list[int]] = defaultdict(list)
        for i in g:
            by_text[normalize(text_of.content(i) if isinstance(text_of, Corpus) else text_of[i])].append(i)
        out += [sub for sub in by_text.values() if len(sub) > 1]
    return out


def duplicate_documents(corpus: Corpus) -> list[list[int]]:
    """Positions of exactly duplicated documents (title and text, as retrievers index them)."""
    return _verified(exact_groups(corpus.contents()), corpus)


def duplicate_queries(texts: Sequence[str]) -> list[list[int]]:
    """Positions of exactly duplicated query texts."""
    return _verified(exact_groups(texts), texts)


def judged_differently(
    groups: Iterable[Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> list[tuple[str, list[str], dict[str, int]]]:
    """``(query, group, grades)`` for every query that judges a group's members differently (an
    unjudged member counts as different from a judged one); ``grades`` holds the judged members."""
    groups = [sorted(g) for g in groups]
    member_of: dict[str, list[int]] = defaultdict(list)
    for gi, g in enumerate(groups):
        for d in g:
            member_of[d].append(gi)
    out: list[tuple[str, list[str], dict[str, int]]] = []
    for qid, judged in qrels.items():
        touched = sorted({gi for d in judged for gi in member_of.get(d, ())})
        for gi in touched:
            grades = [judged.get(d) for d in groups[gi]]
            if len(set(grades)) > 1:
                out.append((qid, groups[gi], {d: g for d, g in zip(groups[gi], grades) if g is not None}))
    return sorted(out, key=lambda x: (x[0], x[1]))
