"""One dataset's check-up: every finding with the ids involved, and the verdict.

Findings split in two. Those that *change comparisons* make one retriever win or lose for a reason
that is not its quality, so `--strict` fails on them: leaking queries (string matching wins),
duplicate documents judged differently (the retriever that returns the unjudged copy loses), judged
ids missing from the corpus (recall is capped, and a retriever cannot be credited for them). The
rest are worth a look but move every retriever alike: unjudged queries, queries judged only
non-relevant, duplicate queries (counted twice), duplicate and near-duplicate documents judged the
same, near-leaking queries, and, with results, the queries that cannot tell retrievers apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness.inspect import duplicates, judgments
from harness.inspect.difficulty import difficulty
from harness.inspect.leakage import leakage
from harness.inspect.near import THRESHOLD, near_duplicate_documents
from harness.model import GoldenDataset

if TYPE_CHECKING:
    from harness.results import Results


class JudgedDifferently(BaseModel):
    """One query that judges the members of one duplicate group differently."""

    model_config = ConfigDict(frozen=True)

    query: str
    documents: list[str]
    #: ``exact`` or ``near``: which kind of duplicate group
    kind: str
    #: the grades of the members the query judges (an absent member is unjudged)
    grades: dict[str, int]


#: findings that change comparisons: the JSON key, and how the verdict names one (one, several)
CHANGING = {
    "empty_corpus": ("an empty corpus (no retriever can find anything)",) * 2,
    "leaking_queries": (
        "query leaking verbatim from a relevant document",
        "queries leaking verbatim from a relevant document",
    ),
    "judged_differently": (
        "duplicate group judged differently for a query",
        "(query, duplicate group) cases judged differently",
    ),
    "missing_judged_documents": ("judged id missing from the corpus", "judged ids missing from the corpus"),
}
#: findings worth a look that move every retriever alike
NOTABLE = {
    "judged_queries_not_in_queries": (
        "judged query missing from the queries file (its judgments are skipped)",
        "judged queries missing from the queries file (their judgments are skipped)",
    ),
    "unjudged_queries": ("query without a judgment", "queries without a judgment"),
    "only_nonrelevant_queries": ("query judged only non-relevant", "queries judged only non-relevant"),
    "duplicate_queries": ("group of duplicate queries", "groups of duplicate queries"),
    "duplicate_documents": ("group of duplicate documents", "groups of duplicate documents"),
    "near_duplicate_documents": ("group of near-duplicate documents", "groups of near-duplicate documents"),
    "near_leaking_queries": (
        "query nearly copied from a relevant sentence",
        "queries nearly copied from a relevant sentence",
    ),
}


def _named(n: int, names: tuple[str, str]) -> str:
    if names[0] == names[1]:  # a yes/no finding (an empty corpus): no count
        return names[0]
    return f"{n} {names[0] if n == 1 else names[1]}"


class Inspection(BaseModel):
    """What ``harness inspect`` finds in one dataset (and, given, one results folder of it). Every
    list is sorted: ids, groups (each sorted), and ``judged_differently`` by (query, documents)."""

    model_config = ConfigDict(extra="forbid")

    verdict: str = ""
    changes_comparisons: list[str] = Field(default_factory=list)
    dataset: dict[str, Any]
    grades: dict[str, int]
    relevant_per_query: dict[str, int | float]
    #: the corpus holds no document (every retriever scores 0; the loader only warns)
    empty_corpus: bool = False
    #: judged query ids the queries file lacks: the loader skips their judgments with a warning
    judged_queries_not_in_queries: list[str] = Field(default_factory=list)
    unjudged_queries: list[str]
    only_nonrelevant_queries: list[str]
    missing_judged_documents: list[str]
    duplicate_queries: list[list[str]]
    duplicate_documents: list[list[str]]
    near_duplicate_documents: list[list[str]]
    judged_differently: list[JudgedDifferently]
    leaking_queries: list[str]
    near_leaking_queries: list[str]
    #: query id -> the relevant documents it leaks (or nearly leaks) from
    leaks: dict[str, list[str]]
    #: with results: {retriever: {metric: {ceiling, floor}}} shares, and per metric the query ids
    difficulty: dict[str, dict[str, dict[str, float]]] | None = None
    all_ceiling: dict[str, list[str]] | None = None
    all_floor: dict[str, list[str]] | None = None
    all_tie: dict[str, list[str]] | None = None
    headroom: dict[str, float | None] | None = None
    judged_at_10: dict[str, float | None] | None = None

    def count(self, key: str) -> int:
        value = getattr(self, key)
        return int(value) if isinstance(value, bool) else len(value)

    def to_json(self) -> dict[str, Any]:
        """The ``--format json`` payload: the verdict first, absent results keys left out."""
        return self.model_dump(mode="json", exclude_none=True)


def verdict(found: Inspection) -> tuple[str, list[str]]:
    """The one-line verdict and the keys of the findings that change comparisons."""
    changing = [k for k in CHANGING if found.count(k)]
    parts = [_named(found.count(k), CHANGING[k]) for k in changing]
    notable = [_named(found.count(k), NOTABLE[k]) for k in NOTABLE if found.count(k)]
    if changing:
        head = (
            _named(len(changing), ("finding that changes", "findings that change"))
            + " comparisons: "
            + "; ".join(parts)
        )
    else:
        head = "No finding that changes comparisons"
    if notable:
        head += ". Worth a look: " + "; ".join(notable)
    return head + ".", changing


def inspect_dataset(
    dataset: GoldenDataset,
    *,
    never_judged: list[str] | tuple[str, ...] = (),
    not_in_queries: list[str] | tuple[str, ...] = (),
    results: Results | None = None,
    near_threshold: float = THRESHOLD,
) -> Inspection:
    """Every finding for ``dataset``. ``never_judged``: queries the dataset's files hold that no
    judgment names (the loader drops them, so the caller who read the files passes them);
    ``not_in_queries``: judged query ids the queries file lacks (the loader skips their judgments
    with a warning; the caller who read the files passes them);
    ``results``: a :class:`~harness.results.Results` of this dataset, for the difficulty findings."""
    ids = dataset.doc_ids
    exact_docs = duplicates.duplicate_documents(dataset.corpus)
    near_docs = near_duplicate_documents(dataset.corpus, exact_docs, near_threshold)
    exact_named = sorted(sorted(ids[i] for i in g) for g in exact_docs)
    near_named = sorted(sorted(ids[i] for i in g) for g in near_docs)
    differ = [
        JudgedDifferently(query=q, documents=docs, kind=kind, grades=grades)
        for kind, groups in (("exact", exact_named), ("near", near_named))
        for q, docs, grades in duplicates.judged_differently(groups, dataset.qrels)
    ]
    qtexts = [q.text for q in dataset.queries]
    dup_queries = sorted(sorted(dataset.queries[i].id for i in g) for g in duplicates.duplicate_queries(qtexts))
    leaking, near_leaking = leakage(dataset)
    found = Inspection(
        dataset=dataset.summary(),
        grades={str(g): n for g, n in judgments.grade_histogram(dataset.qrels).items()},
        relevant_per_query=judgments.relevant_per_query(dataset),
        empty_corpus=len(ids) == 0,
        judged_queries_not_in_queries=sorted(not_in_queries),
        unjudged_queries=judgments.unjudged_queries(dataset, never_judged),
        only_nonrelevant_queries=judgments.only_nonrelevant_queries(dataset),
        missing_judged_documents=judgments.missing_judged_documents(dataset),
        duplicate_queries=dup_queries,
        duplicate_documents=exact_named,
        near_duplicate_documents=near_named,
        judged_differently=sorted(differ, key=lambda x: (x.query, x.documents)),
        leaking_queries=sorted(leaking),
        near_leaking_queries=sorted(near_leaking),
        leaks=dict(sorted({**leaking, **near_leaking}.items())),
    )
    if results is not None:
        for key, value in difficulty(results).items():
            setattr(found, key, value)
    found.verdict, found.changes_comparisons = verdict(found)
    return found
