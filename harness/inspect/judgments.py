"""Judgments: what is judged, how, and what the judgments name that the corpus lacks.

A query without a judgment scores 0 for every retriever (or is dropped, depending on the tool), a
query judged only non-relevant can never score, and a judged id missing from the corpus is a
relevant document no retriever can return: each makes every retriever look worse by the same
amount, except the last, which also caps recall below 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

from harness.model import GoldenDataset


def grade_histogram(qrels: Mapping[str, Mapping[str, int]]) -> dict[int, int]:
    """Judgments per grade, by grade."""
    counts = Counter(g for judged in qrels.values() for g in judged.values())
    return dict(sorted(counts.items()))


def relevant_per_query(dataset: GoldenDataset) -> dict[str, float]:
    """Min, median and max of the relevant (grade >= 1) documents per evaluated query."""
    n = np.array([sum(1 for g in dataset.qrels.get(q.id, {}).values() if g >= 1) for q in dataset.queries])
    if not len(n):
        return {"min": 0, "median": 0.0, "max": 0}
    return {"min": int(n.min()), "median": float(np.median(n)), "max": int(n.max())}


def unjudged_queries(dataset: GoldenDataset, never_judged: Iterable[str] = ()) -> list[str]:
    """Queries with no judgment: ``never_judged`` (BEIR: queries of ``queries.jsonl`` that no qrels
    file names) and evaluated queries whose judgments are empty (an answer found in no document)."""
    empty = {q.id for q in dataset.queries if not dataset.qrels.get(q.id)}
    return sorted(empty | set(never_judged))


def only_nonrelevant_queries(dataset: GoldenDataset) -> list[str]:
    """Evaluated queries that carry judgments, all of them grade <= 0: no retriever can score."""
    return sorted(q for q, judged in dataset.qrels.items() if judged and max(judged.values()) <= 0)


def missing_judged_documents(dataset: GoldenDataset) -> list[str]:
    """Judged document ids (any grade) that are not in the corpus."""
    known = dataset.doc_index
    return sorted({d for judged in dataset.qrels.values() for d in judged if d not in known})
