"""Slices: the comparison table per query tag, with tests corrected within each slice.

The headline property: the ``overall`` slice is the unsliced table, bit for bit (means, CIs,
p-values), in memory and after a results folder is saved and loaded again.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness
from harness.errors import InputError
from harness.metrics.evaluate import mean
from harness.model import Query
from harness.results import Results
from harness.results.slices import (
    OVERALL,
    UNTAGGED,
    print_slices,
    query_tags,
    slice_tables,
    tags_of_results,
    to_markdown,
)
from harness.stats import holm

REPO = Path(__file__).resolve().parent.parent
DEMO_TAGS = {"direct", "keyword", "paraphrase", "numeric", "keyword-judged"}


@pytest.fixture(scope="module")
def demo_results() -> Results:
    """BM25 and a second, differently configured BM25 on the demo (BM25 is the baseline)."""
    return harness.benchmark(
        "demo",
        {"bm25": {"type": "bm25"}, "bm25_long": {"type": "bm25", "k1": 1.5, "b": 0.75}},
        baseline="bm25",
        metrics=["ndcg@10", "recall@100", "mrr@10"],
        show_progress=False,
        latency_queries=0,
    )


@pytest.fixture(scope="module")
def demo_tags() -> dict[str, list[str]]:
    return query_tags(harness.load_dataset("demo").queries)


def test_demo_queries_are_tagged(demo_tags: dict[str, list[str]]) -> None:
    """Every demo query has exactly one of direct / keyword / paraphrase, and the 11
    keyword-judged queries say so."""
    ds = harness.load_dataset("demo")
    assert set(demo_tags) == {q.id for q in ds.queries}
    for q in ds.queries:
        tags = demo_tags[q.id]
        assert set(tags) <= DEMO_TAGS
        assert len(set(tags) & {"direct", "keyword", "paraphrase"}) == 1, q.id
        assert ("keyword-judged" in tags) == bool(q.keywords), q.id
    assert sum("keyword-judged" in t for t in demo_tags.values()) == 11
    # the file kept its shape: one object per line, `metadata` added last
    for line in (REPO / "datasets" / "demo" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        assert list(obj)[-1] == "metadata" and list(obj["metadata"]) == ["tags"]


def test_overall_equals_the_unsliced_table_exactly(demo_results: Results, demo_tags, tmp_path: Path) -> None:
    report = slice_tables(demo_results, demo_tags)
    overall = report.slices[0]
    assert overall.name == OVERALL and overall.n == 83
    assert overall.means == demo_results.summary
    assert overall.intervals == demo_results.intervals
    assert overall.significance == {
        r: {m: c.model_dump() for m, c in ms.items()} for r, ms in demo_results.significance.items()
    }
    # and from a saved folder, where `harness report --by tag` reads it
    demo_results.save(tmp_path / "res")
    loaded = Results.load(tmp_path / "res")
    again = slice_tables(loaded, tags_of_results(loaded))
    assert again.slices[0].means == demo_results.summary
    assert again.slices[0].intervals == demo_results.intervals
    assert again.slices[0].significance == overall.significance
    assert [s.name for s in again.slices] == [s.name for s in report.slices]


def test_each_slice_is_its_queries_only(demo_results: Results, demo_tags) -> None:
    report = slice_tables(demo_results, demo_tags)
    names = [s.name for s in report.slices]
    assert names == [OVERALL, *sorted(DEMO_TAGS)]  # every query has a tag: no (untagged) slice
    for s in report.slices[1:]:
        ids = [q for q, tags in demo_tags.items() if s.name in tags]
        assert sorted(s.query_ids) == sorted(ids)
        for r in report.retrievers:
            for m in report.metrics:
                assert s.means[r][m] == mean(np.array([demo_results.query_scores(r)[q][m] for q in ids]))
        # Holm within the slice: the family is this slice's (retriever x metric) comparisons only
        tests = [t for ms in s.significance.values() for t in ms.values()]
        assert len(tests) == len(report.metrics)  # one non-baseline retriever x 3 metrics
        assert [t["p_holm"] for t in tests] == holm([t["p_value"] for t in tests])


def test_small_slices_are_not_tested(demo_results: Results, demo_tags) -> None:
    report = slice_tables(demo_results, demo_tags, min_queries=20)
    small = {s.name for s in report.slices if not s.tested}
    assert small == {"keyword-judged", "numeric"}  # 11 and 13 queries
    for s in report.slices:
        assert bool(s.significance) == s.tested
    md = to_markdown(report)
    assert "Too small to test (< 20 queries), no p-values: keyword-judged (11), numeric (13)." in md
    assert "| keyword-judged | bm25_long |" not in md


def test_untagged_queries_form_their_own_slice(demo_results: Results) -> None:
    tags = {"q01": ["a"], "q02": ["a", "b"]}
    report = slice_tables(demo_results, tags)
    by = {s.name: s for s in report.slices}
    assert by["a"].n == 2 and by["b"].n == 1 and by[UNTAGGED].n == 81
    assert not by["a"].tested and by[UNTAGGED].tested


def test_rendering_fits_80_columns(demo_results: Results, demo_tags) -> None:
    from rich.console import Console

    report = slice_tables(demo_results, demo_tags)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_slices(report, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "ndcg@10 by tag" in text and "paraphrase" in text and "[" in text  # CIs fit
    md = to_markdown(report)
    overall_row = next(line for line in md.splitlines() if line.startswith("| overall |"))
    assert f"{demo_results.summary['bm25']['ndcg@10']:.4f}" in overall_row


def test_query_tags_forms() -> None:
    qs = [
        Query(id="a", text="x", metadata={"tags": ["t1", "t2", " "]}),
        Query(id="b", text="x", metadata={"tags": "t1, t3"}),
        Query(id="c", text="x"),
    ]
    assert query_tags(qs) == {"a": ["t1", "t2"], "b": ["t1", "t3"], "c": []}
    with pytest.raises(InputError, match="tags must be a list of strings"):
        query_tags([Query(id="d", text="x", metadata={"tags": [1]})])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=12, max_size=12),
    st.lists(st.floats(0, 1), min_size=12, max_size=12),
    st.lists(st.sets(st.sampled_from(["α", "٣", "b"]), max_size=2), min_size=12, max_size=12),
)
def test_slices_partition_and_overall_property(a: list[float], b: list[float], tagsets: list[set[str]]) -> None:
    """For any scores and any tags (non-ASCII included): overall equals the table computed over all
    queries by harness.stats.compare, every query is in each of its tags' slices, and the
    (untagged) slice holds exactly the queries with no tag."""
    from harness.stats import compare

    ids = [f"q{i:02d}" for i in range(12)]
    res = Results(
        manifest={"config": {"baseline": "x", "seed": 0, "stats": {"bootstrap": 50, "permutations": 200}}},
        summary={"x": {"m": mean(np.array(a))}, "y": {"m": mean(np.array(b))}},
        per_query={"x": {q: {"m": v} for q, v in zip(ids, a)}, "y": {q: {"m": v} for q, v in zip(ids, b)}},
    )
    tags = {q: sorted(t) for q, t in zip(ids, tagsets)}
    report = slice_tables(res, tags, min_queries=3)
    sig, intervals = compare(
        {"x": {"m": np.array(a)}, "y": {"m": np.array(b)}},
        "x",
        seed=0,
        query_ids=ids,
        bootstrap=50,
        permutations=200,
        alpha=0.05,
    )
    assert report.slices[0].significance == sig and report.slices[0].intervals == intervals
    by = {s.name: set(s.query_ids) for s in report.slices}
    for q, t in tags.items():
        for tag in t:
            assert q in by[tag]
    if any(tags.values()):
        assert by.get(UNTAGGED, set()) == {q for q, t in tags.items() if not t}


def test_print_by_tag(demo_results: Results) -> None:
    from rich.console import Console

    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    from harness.results.slices import print_by_tag

    report = print_by_tag(demo_results, console)
    assert report is not None and report.slices[0].means == demo_results.summary
    assert "recall@100 by tag" in console.export_text()
