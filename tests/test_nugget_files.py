"""nuggetizer's nuggets and assignments files: read and written byte for byte as nuggetizer does;
bad files stop with the file, line and field."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.nuggets import NuggetJudgments, read_assignments, read_nuggets
from harness.nuggets.files import Nugget, NuggetRecord, assignment_record, dumps, write_jsonl

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

DATA = Path(__file__).parent / "data" / "nuggets"


def test_read_and_write_again_is_the_same_bytes() -> None:
    ns = read_nuggets(DATA / "nuggets.jsonl")
    ass = read_assignments(DATA / "assignments.jsonl", ns)
    assert list(ns) == ["q1", "1024"]  # an integer qid is matched as its string
    assert [n.importance for n in ns["q1"].nuggets] == ["vital", "vital", "okay"]
    assert ass[("1024", "c7")].labels == {
        "coffee with hot milk": "support",
        'French origin \u2014 "au lait"': "partial_support",
    }
    for path, records in ((DATA / "nuggets.jsonl", ns.values()), (DATA / "assignments.jsonl", ass.values())):
        out = io.StringIO()
        write_jsonl(records, out)
        assert out.getvalue().encode() == path.read_bytes()


def test_a_record_is_written_as_nuggetizer_assign_writes_it() -> None:
    """assign --input-kind retrieval's key order and escapes, the qid as the nuggets file gave it."""
    ns = read_nuggets(DATA / "nuggets.jsonl")
    lines = (DATA / "assignments.jsonl").read_text().splitlines(keepends=True)
    rec = assignment_record(
        ns["1024"], "c7", "Caf\u00e9 au lait is coffee with hot milk.", ["support", "partial_support"]
    )
    assert dumps(rec.to_json()) == lines[2]
    rec = assignment_record(
        ns["q1"],
        "d2",
        "Night flights and food: birds move as insects appear.",
        ["not_support", "support", "partial_support"],
    )
    assert dumps(rec.to_json()) == lines[1]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=5, unique=True),
    passage=st.text(max_size=80),
    query=st.text(max_size=40),
    docid=st.text(min_size=1, max_size=12).filter(str.strip),
    labels=st.data(),
)
def test_hostile_text_round_trips(tmp_path_factory, texts, passage, query, docid, labels) -> None:
    tmp = tmp_path_factory.mktemp("n")
    rec = NuggetRecord("q", query, [Nugget(t, "vital") for t in texts])
    chosen = labels.draw(
        st.lists(
            st.sampled_from(["support", "partial_support", "not_support"]), min_size=len(texts), max_size=len(texts)
        )
    )
    (tmp / "n.jsonl").write_text(dumps(rec.to_json()), encoding="utf-8")
    line = dumps(assignment_record(rec, docid, passage, chosen).to_json())
    (tmp / "a.jsonl").write_text(line, encoding="utf-8")
    nj = NuggetJudgments.load(tmp / "n.jsonl", tmp / "a.jsonl")
    assert nj.assignments[("q", docid)].labels == dict(zip(texts, chosen))
    out = io.StringIO()
    write_jsonl(nj.assignments.values(), out)
    assert out.getvalue() == line


def _bad(tmp_path: Path, nuggets: list[dict], assignments: list[dict]) -> InputError:
    (tmp_path / "n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nuggets))
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in assignments))
    with pytest.raises(InputError) as e:
        NuggetJudgments.load(tmp_path / "n.jsonl", tmp_path / "a.jsonl")
    return e.value


N = {"query": "q?", "qid": "q1", "nuggets": [{"text": "a", "importance": "vital"}, {"text": "b", "importance": "okay"}]}


def _a(docid: str, *labels: str, texts=("a", "b"), importance=("vital", "okay")) -> dict:
    return {
        "text": "q?",
        "qid": "q1",
        "candidate_text": "p",
        "docid": docid,
        "nuggets": [{"text": t, "importance": i, "assignment": x} for t, i, x in zip(texts, importance, labels)],
    }


def test_unknown_importance(tmp_path: Path) -> None:
    bad = {**N, "nuggets": [{"text": "a", "importance": "Vital!"}]}
    e = _bad(tmp_path, [N | {"qid": "q0"}, bad], [])
    assert (e.path, e.line, e.field) == (str(tmp_path / "n.jsonl"), 2, "nuggets[0].importance")
    assert "unknown importance 'Vital!'" in str(e)


def test_unknown_assignment(tmp_path: Path) -> None:
    e = _bad(tmp_path, [N], [_a("d1", "support", "supported")])
    assert (e.path, e.line, e.field) == (str(tmp_path / "a.jsonl"), 1, "nuggets[1].assignment")
    assert "unknown assignment 'supported'" in str(e)


def test_a_nugget_text_not_in_the_nuggets_file(tmp_path: Path) -> None:
    e = _bad(tmp_path, [N], [_a("d1", "support", "support"), _a("d2", "support", texts=("a ",))])
    assert (e.line, e.field) == (2, "nuggets[0].text") and "is not one of query 'q1'" in str(e)
    e = _bad(tmp_path, [N], [_a("d1", "support") | {"qid": "q9"}])
    assert (e.line, e.field) == (1, "qid") and "no nuggets" in str(e)


def test_duplicates_that_disagree(tmp_path: Path) -> None:
    e = _bad(
        tmp_path, [N], [_a("d1", "support", "not_support"), _a("d2", "support"), _a("d1", "support", "partial_support")]
    )
    assert (e.line, e.field) == (3, "nuggets") and "line 1" in str(e) and "'b'" in str(e)
    e = _bad(tmp_path, [N, N | {"nuggets": N["nuggets"][:1]}], [])
    assert (e.path, e.line, e.field) == (str(tmp_path / "n.jsonl"), 2, "qid")
    # the same record twice (a resumed run's overlap) is read once
    (tmp_path / "n.jsonl").write_text(json.dumps(N) + "\n")
    (tmp_path / "a.jsonl").write_text(2 * (json.dumps(_a("d1", "support", "support")) + "\n"))
    assert len(NuggetJudgments.load(tmp_path / "n.jsonl", tmp_path / "a.jsonl").assignments) == 1


def test_importance_that_disagrees_with_the_nuggets_file(tmp_path: Path) -> None:
    e = _bad(tmp_path, [N], [_a("d1", "support", "support", importance=("okay", "okay"))])
    assert (e.line, e.field) == (1, "nuggets[0].importance")
