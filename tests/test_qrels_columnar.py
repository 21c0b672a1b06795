"""The columnar qrels reader (large files, for ``harness evaluate``) gives the same judgments as the
line reader on every file it accepts, and hands every other file to the line reader."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.io import trec_columnar
from harness.io.qrels_columnar import read_qrels_columnar
from harness.io.trec import read_qrels
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.metrics.names import parse_metrics
from harness.run import Run

ids = st.text(alphabet="abcXY019_-.é", min_size=1, max_size=5)
grades = st.sampled_from(["0", "1", "2", "3", "-1", "01"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(ids, ids, grades), min_size=1, max_size=40), sep=st.sampled_from([" ", "\t", "  "]))
def test_columnar_qrels_equal_the_line_readers(tmp_path, monkeypatch, rows, sep) -> None:
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    path = tmp_path / "q.txt"
    path.write_text("".join(f"{q}{sep}0{sep}{d}{sep}{g}\n" for q, d, g in rows), encoding="utf-8")
    got = read_qrels_columnar(path)
    if len({(q, d) for q, d, _ in rows}) < len(rows):
        assert got is None  # a repeated pair: the line reader's (kept once, or a located error)
        return
    assert got is not None
    fast, slow = CompiledQrels.from_arrays(*got), CompiledQrels(read_qrels(path))
    assert fast.query_ids == slow.query_ids
    assert [dict(fast.judged(i)) for i in range(len(fast))] == [dict(slow.judged(i)) for i in range(len(slow))]
    assert np.array_equal(fast.num_rel, slow.num_rel) and np.array_equal(fast.num_nonrel, slow.num_nonrel)
    assert np.array_equal(fast.ideal(5), slow.ideal(5))
    assert {q: dict(j) for q, j in fast.as_mapping().items()} == read_qrels(path)  # what results keep
    docs = sorted({d for _, d, _ in rows})
    run = Run.from_lists({q: [(d, float(len(docs) - i)) for i, d in enumerate(docs)] for q in slow.query_ids})
    ms = parse_metrics(["ndcg@10", "map@100", "bpref", "recall@5"])
    a, b = evaluate_run(fast, run, ms), evaluate_run(slow, run, ms)
    assert all(np.array_equal(a.values[m], b.values[m]) for m in a.values)


@pytest.mark.parametrize(
    "text",
    [
        "q1\td1\t1\n",  # BEIR, three columns
        "query-id corpus-id score\nq1 d1 1\n",
        "# comment\nq1 0 d1 1\n",
        "q1 0 d1 1_0\n",
        "q1 0 d1 2.0\n",
        "q1 0 d1 99999999999999999999999\n",
        "q1 0 d1 1\nq1 0 d1 2\n",
        "q1 0 d1 1 extra\n",
    ],
)
def test_anything_but_the_plain_shape_goes_to_the_line_reader(tmp_path, monkeypatch, text: str) -> None:
    monkeypatch.setattr(trec_columnar, "MIN_BYTES", 0)
    path = tmp_path / "q.txt"
    path.write_text(text, encoding="utf-8")
    assert read_qrels_columnar(path) is None


def test_small_files_stay_with_the_line_reader(tmp_path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("q1 0 d1 1\n", encoding="utf-8")
    assert read_qrels_columnar(path) is None
