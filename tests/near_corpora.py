"""Templated corpora for the near-duplicate search, and the grouping rule computed by brute force.

Shared by ``tests/test_inspect_near.py`` and ``benchmarks/inspect_scale.py`` (which compares
``harness inspect`` with :func:`brute_force_groups` on 2,000 documents of its corpus).

Kinds of template (a 150-word page; Jaccard of word 5-shingles):

- ``slot``: a record number at one place. Every pair is at 141/151 = 0.93: one group.
- ``edit``: one word replaced at a random place. Pairs are at 0.87 (edits far apart) to 0.93 (at
  one place): the transitive closure chains every document into one group, the representative
  rule makes a few dozen.
- ``two-slots``: two fields per document. Every pair is at 136/156 = 0.87: no group, and every
  document shares every bucket with every other one (the case that bounds the work).
- ``mixed``: a record number and 0 to 3 edits.
"""

from __future__ import annotations

import random

from harness.inspect.text import jaccard, normalize, shingles, words

KINDS = ("slot", "edit", "two-slots", "mixed")
LENGTH = 150


def templated(n: int, kind: str, seed: int = 0) -> list[str]:
    """``n`` documents from one random 150-word template, varied as ``kind`` says."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rng = random.Random(seed)
    vocab = [f"{rng.choice('bcdfghklmnprst')}{rng.choice('aeiou')}{i}" for i in range(5000)]
    template = [rng.choice(vocab) for _ in range(LENGTH)]
    texts = []
    for i in range(n):
        doc = list(template)
        if kind in ("slot", "two-slots", "mixed"):
            doc[10] = f"record{i}"
        if kind == "two-slots":
            doc[100] = f"owner{i}"
        edits = 1 if kind == "edit" else rng.choice((0, 0, 1, 2, 3)) if kind == "mixed" else 0
        for _ in range(edits):
            doc[rng.randrange(LENGTH)] = rng.choice(vocab)
        texts.append(" ".join(doc))
    return texts


def brute_force_groups(texts: list[str], threshold: float = 0.9) -> list[list[int]]:
    """The grouping rule of ``harness.inspect.near``, by brute force: in order, each text joins the
    earliest representative with exact shingle Jaccard >= ``threshold``, else becomes one; groups
    of two or more that are not all one normalised text (those are exact duplicates), sorted.
    Texts without a word take no part. Shingles are numbered (exactly: a
    dict of the shingles) so that 2,000 texts of 2,000 representatives take seconds, not minutes."""
    number: dict[tuple[str, ...], int] = {}
    reps: list[int] = []
    members: dict[int, list[int]] = {}
    sets: list[set[int]] = []
    for i, text in enumerate(texts):
        s = {number.setdefault(sh, len(number)) for sh in shingles(words(normalize(text)))}
        sets.append(s)
        if not s:
            continue
        rep = next((r for r in reps if jaccard(s, sets[r]) >= threshold), None)
        if rep is None:
            reps.append(i)
            members[i] = [i]
        else:
            members[rep].append(i)
    return sorted(g for g in members.values() if len({normalize(texts[i]) for i in g}) > 1)
