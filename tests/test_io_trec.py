"""TREC qrels / run files and BEIR qrels tsv: what is accepted, what is refused (with FILE:LINE)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from harness.errors import InputError
from harness.io.lines import iter_lines
from harness.io.trec import format_run, read_qrels, read_run, write_qrels, write_run
from harness.run import Run

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def raises_at(path: Path, line: int, match: str):
    """pytest.raises for an InputError naming ``path:line`` and matching ``match``."""
    return pytest.raises(InputError, match=rf"^{re.escape(str(path))}:{line}: .*{match}")


# ----------------------------------------------------------------------------- qrels
def test_trec_qrels_four_columns(tmp_path):
    p = write(tmp_path, "q.txt", "1 0 d1 2\n1 0 d2 0\n2 Q0 d1 -1\n\n  \n# a comment\n2 0 d3 1\n")
    assert read_qrels(p) == {"1": {"d1": 2, "d2": 0}, "2": {"d1": -1, "d3": 1}}


def test_beir_tsv_with_header(tmp_path):
    p = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td1\t0\n")
    assert read_qrels(p) == {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 0}}


def test_beir_tsv_without_header(tmp_path):
    assert read_qrels(write(tmp_path, "t.tsv", "q1\td1\t1\n")) == {"q1": {"d1": 1}}


def test_grades_written_as_integral_floats_are_accepted(tmp_path):
    assert read_qrels(write(tmp_path, "q", "1 0 d1 1.0\n1 0 d2 2.00\n1 0 d3 -1\n1 0 d4 +2\n")) == {
        "1": {"d1": 1, "d2": 2, "d3": -1, "d4": 2}
    }


@pytest.mark.parametrize(
    ("grade", "needle"),
    [
        ("1_0", "no '_' separators"),
        ("\u0663", "non-ASCII digits"),
        ("\uff11", "non-ASCII digits"),
        ("2e0", "is not an integer"),
        ("1.5", "is not an integer"),
        ("99999999999999999999999", "out of range"),
        ("-9223372036854775809", "out of range"),
        ("nan", "is not an integer"),
    ],
)
def test_grades_are_plain_ascii_int64(tmp_path, grade, needle):
    with pytest.raises(InputError, match=needle) as e:
        read_qrels(write(tmp_path, "q", f"1 0 d1 1\n1 0 d2 {grade}\n"))
    assert e.value.line == 2 and e.value.field == "grade"


def test_int64_bounds_are_accepted(tmp_path):
    q = read_qrels(write(tmp_path, "q", "1 0 d1 9223372036854775807\n1 0 d2 -9223372036854775808\n"))
    assert q == {"1": {"d1": 2**63 - 1, "d2": -(2**63)}}


@pytest.mark.parametrize("score", ["1_0", "\u0663.5", "0x10", "1e", "infinity", "1.5e3x"])
def test_run_scores_are_plain_ascii_numbers(tmp_path, score):
    with pytest.raises(InputError, match="score") as e:
        read_run(write(tmp_path, "r", f"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 {score} t\n"))
    assert e.value.line == 2


def test_hash_comments_only_at_line_start_and_ids_may_start_with_hash(tmp_path, caplog):
    text = "# a comment\n#q01 0 d1 1\n#\n#just-a-comment\nq2 0 d#2 0\n"
    assert read_qrels(write(tmp_path, "q", text)) == {"#q01": {"d1": 1}, "q2": {"d#2": 0}}
    assert "read as data, for id '#q01'" in caplog.text
    run = read_run(write(tmp_path, "r", "# comment\n#q01 Q0 d1 1 2.5 t\n"))
    assert run.query_ids == ["#q01"]
    with pytest.raises(InputError, match="columns"):  # an indented '#' is not a comment
        read_qrels(write(tmp_path, "i", "q1 0 d1 1\n  # indented\n"))


def test_beir_qrels_with_hash_query_id(tmp_path):
    assert read_qrels(write(tmp_path, "t.tsv", "query-id\tcorpus-id\tscore\n#q01\td1\t1\n")) == {"#q01": {"d1": 1}}


def test_crlf_and_bom(tmp_path):
    p = write(tmp_path, "q", b"\xef\xbb\xbf1 0 d1 1\r\n1 0 d2 0\r\n")
    assert read_qrels(p) == {"1": {"d1": 1, "d2": 0}}


def test_repeated_judgment_with_the_same_grade_is_tolerated(tmp_path):
    assert read_qrels(write(tmp_path, "q", "1 0 d1 1\n1 0 d1 1\n")) == {"1": {"d1": 1}}


@pytest.mark.parametrize(
    "text, line, match",
    [
        ("1 0 d1 1\n1 0 d2 high\n", 2, "grade 'high' is not an integer"),
        ("1 0 d1 1.5\n", 1, "grade '1.5' is not an integer"),
        ("1 0 d1 nan\n", 1, "not an integer"),
        ("1 0 d1 inf\n", 1, "not an integer"),
        ("1 d1\n", 1, "found 2"),
        ("1 0 d1 1 extra\n", 1, "found 5"),
        ("1 0 d1 1\n1 d2 1\n", 2, "expected 4 columns like the first line, found 3"),
        ("# c\n1 0 d1 1\n\n1 0 d1 2\n", 4, "judged twice with different grades \\(1 and 2\\)"),
    ],
)
def test_bad_qrels(tmp_path, text, line, match):
    p = write(tmp_path, "qrels.txt", text)
    with raises_at(p, line, match):
        read_qrels(p)


def test_qrels_not_utf8(tmp_path):
    p = write(tmp_path, "q", b"1 0 d1 1\n1 0 d\xff2 1\n")
    with raises_at(p, 2, "not valid UTF-8"):
        read_qrels(p)


def test_missing_and_directory(tmp_path):
    with pytest.raises(InputError, match=rf"^{re.escape(str(tmp_path / 'nope.txt'))}: qrels file not found"):
        read_qrels(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="found a directory"):
        read_qrels(tmp_path)
    with pytest.raises(InputError, match="run file not found"):
        read_run(tmp_path / "nope.trec")


def test_qrels_round_trip(tmp_path):
    qrels = {"q2": {"b": 1, "a": -1}, "q1": {"z": 3, "é": 0}}
    p = write_qrels(tmp_path / "out" / "qrels.txt", qrels)
    assert read_qrels(p) == qrels
    assert p.read_text().splitlines()[0] == "q1 0 z 3"  # sorted, TREC columns


# ----------------------------------------------------------------------------- runs
RUN = """\
q1 Q0 d1 1 2.5 bm25
q1 Q0 d2 2 3.5 bm25
# a comment line
q2 Q0 d1 1 -1e-3 bm25

q1 Q0 d3 3 2.5 bm25 trailing text is fine
"""


def test_run_file(tmp_path):
    run = read_run(write(tmp_path, "my.run.trec", RUN))
    assert run.name == "my.run"
    assert run.query_ids == ["q1", "q2"]
    assert run.ranking("q1") == [("d2", 3.5), ("d3", 2.5), ("d1", 2.5)]  # tie: doc id descending
    assert run.ranking("q2") == [("d1", -0.001)]
    assert read_run(write(tmp_path, "x", RUN), name="other").name == "other"


def test_run_rank_column_is_ignored(tmp_path):
    run = read_run(write(tmp_path, "r", "q Q0 a 1 1.0 t\nq Q0 b 2 9.0 t\n"))
    assert [d for d, _ in run.ranking("q")] == ["b", "a"]


def test_run_padded_scores_and_tabs(tmp_path):
    run = read_run(write(tmp_path, "r", "301\tQ0\tFR94-1\t104\t  2.129133\tSTANDARD\n"))
    assert run.ranking("301") == [("FR94-1", 2.129133)]


def test_run_duplicates_keep_first_and_count(tmp_path):
    run = read_run(write(tmp_path, "r", "q Q0 a 1 1.0 t\nq Q0 b 2 0.5 t\nq Q0 a 3 9.0 t\n"))
    assert run.ranking("q") == [("a", 1.0), ("b", 0.5)]
    assert run.duplicates_dropped == 1


def test_run_with_corpus_vocabulary(tmp_path):
    p = write(tmp_path, "r", "q Q0 b 1 1.0 t\n")
    run = read_run(p, doc_ids=["a", "b"])
    assert run.doc_ids.tolist() == ["a", "b"] and run.indices[0, 0] == 1
    with raises_at(write(tmp_path, "r2", "q Q0 a 1 1 t\nq Q0 z 1 1.0 t\n"), 2, "doc id 'z' is not in the corpus"):
        read_run(tmp_path / "r2", doc_ids=["a"])


@pytest.mark.parametrize(
    "text, line, match",
    [
        ("q Q0 a 1 1.0 t\nq Q0 b 2 nan t\n", 2, "score is nan"),
        ("q Q0 a 1 NaN t\n", 1, "scores must be finite"),
        ("q Q0 a 1 inf t\n", 1, "score is inf"),
        ("q Q0 a 1 -Infinity t\n", 1, "finite"),
        ("q Q0 a 1 1e999 t\n", 1, "finite"),
        ("q Q0 a 1 high t\n", 1, "score 'high' is not a number"),
        ("q Q0 a 1 1.0\n", 1, "expected 6 columns .* found 5"),
        ("q a 1.0\n", 1, "found 3"),
    ],
)
def test_bad_run(tmp_path, text, line, match):
    p = write(tmp_path, "run.trec", text)
    with raises_at(p, line, match):
        read_run(p)


def test_run_not_utf8(tmp_path):
    p = write(tmp_path, "run.trec", b"q Q0 a 1 1.0 t\n\n\xc3\x28 Q0 a 1 1.0 t\n")
    with raises_at(p, 3, "not valid UTF-8"):
        read_run(p)


def test_empty_run_file(tmp_path):
    run = read_run(write(tmp_path, "r", "# only a comment\n\n"))
    assert len(run) == 0 and run.depth == 0


def test_run_round_trip_is_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    rankings = {f"q{i}": [(f"d{j}", float(rng.normal())) for j in range(20)] for i in range(5)}
    rankings["q0"] += [("tie_a", 0.1 + 0.2), ("tie_b", 0.1 + 0.2)]
    run = Run.from_lists(rankings, name="exact run")
    p = write_run(tmp_path / "runs" / "exact.trec", run)
    again = read_run(p)
    assert [again.ranking(q) for q in run.query_ids] == [run.ranking(q) for q in run.query_ids]
    first = p.read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "exact_run"


def test_format_run_ranks_are_canonical():
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 2.0}})
    lines = format_run(run, tag="t").splitlines()
    assert lines == ["q Q0 c 1 2.0 t", "q Q0 b 2 1.0 t", "q Q0 a 3 1.0 t"]
    assert format_run(Run.from_dict({})) == ""


def test_iter_lines_skips_comments_only_when_asked(tmp_path):
    p = write(tmp_path, "f", "a\n  # c\n\n#d\nb\n")
    # a comment starts at the first character of a line: an indented '#' is data
    assert list(iter_lines(p, "file")) == [(1, "a"), (2, "  # c"), (5, "b")]
    assert list(iter_lines(p, "file", skip_comments=False)) == [(1, "a"), (2, "  # c"), (4, "#d"), (5, "b")]


def test_scores_keep_float64_precision(tmp_path):
    run = read_run(write(tmp_path, "r", "q Q0 a 1 0.30000000000000004 t\n"))
    assert run.ranking("q")[0][1] == 0.1 + 0.2 and not math.isclose(0.1 + 0.2, 0.3, rel_tol=0, abs_tol=0)
