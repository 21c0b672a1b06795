"""The one grade parser (harness/io/grades.py) under hostile text, and the readers that share it:
a qrels file, a CSV pool and a JSON Lines pool say the same of the same token."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.io.grades import INT64_MAX, INT64_MIN, GradeError, parse_grade
from harness.io.trec import read_qrels
from harness.judging.pool import read_pool

PLAIN = re.compile(r"[+-]?[0-9]+(\.0*)?")

# hostile text: other scripts' digits, separators, exponents, lone surrogates, huge numbers
DIGITISH = "0123456789+-._eE \t\u0663\u06f3\u0969\uff11\U0001d7d9\u00b2\u00bdnaif"
HOSTILE = st.one_of(
    st.text(alphabet=st.sampled_from(DIGITISH), max_size=12),
    st.text(max_size=8),
    st.builds(lambda a, b: a + b, st.text(max_size=3), st.sampled_from(["\ud800", "\udfff", "\udc80"])),
    st.integers().map(str),
    st.integers(min_value=2**63 - 5, max_value=2**80).map(str),
)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
@example("1_0")
@example("\u0663")
@example("1e1")
@example("99999999999999999999999")
@example("-9223372036854775809")
@example("9223372036854775807")
@example("\ud800")
@example("2.000")
def test_a_grade_is_plain_ascii_digits_within_int64_or_refused(text):
    try:
        value = parse_grade(text)
    except GradeError as e:
        message = str(e)
        assert message and "\n" not in message and len(message) < 120  # one short line, whatever the text
        token = text.strip(" \t")
        assert not (PLAIN.fullmatch(token) and INT64_MIN <= int(token.partition(".")[0]) <= INT64_MAX)
        return
    token = text.strip(" \t")
    assert PLAIN.fullmatch(token), text  # ASCII digits only: never '٣', '1_0', '1e1'
    assert token.isascii()
    assert value == int(token.partition(".")[0]) and INT64_MIN <= value <= INT64_MAX


@given(st.one_of(st.integers(), st.booleans(), st.floats(), st.none(), st.lists(st.integers(), max_size=2)))
def test_values_other_than_int_and_text_are_refused(value):
    if isinstance(value, int) and not isinstance(value, bool):
        if INT64_MIN <= value <= INT64_MAX:
            assert parse_grade(value) == value
        else:
            with pytest.raises(GradeError, match="out of range"):
                parse_grade(value)
    else:  # a float has lost the text that decides (1e1, 99999999999999999999999); a bool is not a grade
        with pytest.raises(GradeError):
            parse_grade(value)


def test_a_huge_integer_is_described_not_printed():
    with pytest.raises(GradeError, match=r"an integer of \d+ bits is out of range"):
        parse_grade(10**5000)  # past Python's 4,300-digit str() limit


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789+-._e\u0663\uff11"), min_size=1, max_size=8))
def test_qrels_csv_pool_and_jsonl_pool_agree(tmp_path_factory, token):
    """The same grade text in a qrels file, a CSV pool cell and a JSON Lines pool (as a string, and as
    a number where JSON's grammar allows one): accepted alike with the same value, or refused alike."""
    tmp = tmp_path_factory.mktemp("agree")
    outcomes = []
    (tmp / "q.txt").write_text(f"q1 0 d1 {token}\n", encoding="utf-8")
    (tmp / "p.csv").write_text(f"query_id,doc_id,grade\nq1,d1,{token}\n", encoding="utf-8")
    (tmp / "p.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "grade": token}) + "\n")
    readers = [
        lambda: read_qrels(tmp / "q.txt")["q1"]["d1"],
        lambda: read_pool(tmp / "p.csv")[0].grade,
        lambda: read_pool(tmp / "p.jsonl")[0].grade,
    ]
    if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", token):  # a JSON number literal
        (tmp / "n.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "grade": ' + token + "}\n")
        readers.append(lambda: read_pool(tmp / "n.jsonl")[0].grade)
    for read in readers:
        try:
            outcomes.append(read())
        except InputError:
            outcomes.append("refused")
    assert len(set(outcomes)) == 1, (token, outcomes)


@pytest.mark.parametrize("text", ["1_0", "1e1", "\u0663", " 2x"])
def test_golden_set_text_grades_use_the_same_parser(tmp_path, text):
    from harness.io.golden import read_golden

    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"question": "a?", "relevant_ids": {"d1": text}}) + "\n")
    with pytest.raises(InputError, match=r"g.jsonl:1: relevant_ids: grade of 'd1' must be an integer"):
        read_golden(path)
    path.write_text(json.dumps({"question": "a?", "relevant_ids": {"d1": " 2 "}}) + "\n")
    assert read_golden(path)
