"""Judged-only evaluation: trec_eval ``-J``'s condensed lists.

Judgments are usually made from one system's results (a BM25 pool). A retriever that ranks other
documents gets them counted as non-relevant simply because nobody looked at them. Judged-only
evaluation (Sakai's "condensed lists") removes every unjudged document from each ranking before
any metric is computed: the judged documents keep their relative order and move up to ranks
1..n. A ranking is then scored on what the judgments can say about it, which makes retrievers
judged to different depths comparable, at the price of rewarding a ranking for documents it did
not put first.

"Judged" follows trec_eval: a document with a grade >= 0 for that query. A negative grade is
trec_eval's marker for "not in the pool" and is dropped like a missing judgment. ``judged@k`` is the
exception: it measures the holes, so it is always computed on the full ranking.

The array path condenses inside :func:`harness.metrics.evaluate.evaluate_run` (the judged
documents are exactly the triples it looks up); this module holds the split of the metric list
and the dict path's condensing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.metrics.registry import Metric

#: metrics that measure the holes themselves: computed on the full ranking even when judged-only
FULL_RANKING_KINDS = frozenset({"judged"})


def split(metrics: Sequence[Metric]) -> tuple[list[Metric], list[Metric]]:
    """``(computed on the condensed rankings, computed on the full ones)``."""
    condensed = [m for m in metrics if m.kind not in FULL_RANKING_KINDS]
    full = [m for m in metrics if m.kind in FULL_RANKING_KINDS]
    return condensed, full


def condense_dicts(qrels: Any, run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``{qid: {doc_id: score}}`` with only the documents judged (grade >= 0) for that query kept
    (``qrels``: a :class:`~harness.metrics.evaluate.CompiledQrels`).

    Dropping documents never changes the relative order of the others (ranks come from score,
    then doc id), so filtering before ranking is the same as condensing after.
    """
    row = {q: i for i, q in enumerate(qrels.query_ids)}
    out: dict[str, dict[str, float]] = {}
    for q, ranking in run.items():
        i = row.get(str(q))
        if i is None:
            out[q] = dict(ranking or {})  # not judged: ignored by the evaluation anyway
            continue
        judged = qrels.judged(i)
        out[q] = {d: s for d, s in (ranking or {}).items() if judged.get(d, -1) >= 0}
    return out
