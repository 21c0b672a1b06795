"""What a blind gate cannot see, said once (harness.gate.blind): one table of the blind checks, the prose
wrapped to the terminal, and no detectable drop larger than the metric can move (before: 24 near-identical
``blind:`` lines on the demo; "drops under 3.147 are invisible" for nDCG on a 3-query set)."""

from __future__ import annotations

import json
import re

import pytest

from harness.gate import check
from harness.gate.blind import detects_nothing, mde_cell, text_block
from harness.gate.render import to_json, to_markdown, to_text
from tests.test_check import base_scores, make_results

pytestmark = pytest.mark.core

NUMBER = re.compile(r"(?<![\w.])\d+\.\d+")


def _report(n: int, retrievers: int = 3, same: bool = True):
    base = make_results({f"r{i}": base_scores(n, seed=i + 1) for i in range(retrievers)})
    cur = base if same else make_results({f"r{i}": base_scores(n, seed=i + 11) for i in range(retrievers)})
    return check(base, cur, tolerances=0.01)


def test_many_blind_checks_are_one_sentence_and_one_table():
    report = _report(20)
    text = to_text(report)
    blind = [line for line in text.splitlines() if "blind:" in line and "blind on" not in line]
    assert len(report.blind) == 6 and len(blind) == 1  # six blind checks: one sentence, not six lines
    assert blind[0].startswith("blind: 6 checks cannot see a drop as large as their tolerance")
    rows = [line for line in text.splitlines() if re.match(r"r\d +(ndcg@10|recall@100) +20 +0\.01 +0\.\d{4} ", line)]
    assert len(rows) == 6
    assert not any(line.startswith("blind: r") for line in text.splitlines())


def test_the_sentence_is_wrapped_to_the_terminal():
    lines = text_block(_report(20), width=60)
    table_at = next(i for i, line in enumerate(lines) if line.startswith("retriever"))
    assert table_at > 1 and all(len(line) <= 60 for line in lines[:table_at])


def test_markdown_has_the_table_not_a_line_per_check():
    md = to_markdown(_report(20))
    assert md.count("blind: ") == 1 and "| retriever | metric | queries | tolerance | detects | sd | needs |" in md
    assert len([x for x in md.splitlines() if re.match(r"\| r\d \| (ndcg@10|recall@100) \| 20 \|", x)]) == 6


def test_no_drop_beyond_a_metrics_range_is_ever_printed():
    report = _report(3, retrievers=2, same=False)
    assert all(r.mde is not None and r.mde > 1 for r in report.rows if r.mde is not None)  # the figures behind it
    text, md = to_text(report), to_markdown(report)
    for shown in (text, md, *report.blind):
        assert not [x for x in NUMBER.findall(shown) if 1 < float(x) < 100], shown  # no "3.147" anywhere
    assert "no drop can be detected with 3 queries" in text.splitlines()[0]
    assert "no drop can be detected" in report.blind[0]
    assert re.search(r"^r0 +ndcg@10 +3 +0\.01 +none ", text, re.M), text
    assert to_json(report)["results"]["r0"]["ndcg@10"]["mde"] > 1  # the JSON keeps the figure (data, not prose)
    json.dumps(to_json(report))


def test_a_headline_with_both_kinds_names_each():
    report = _report(20)
    report.rows[0].mde = 5.0  # as a 3-query metric beside 20-query ones would have it
    head = report.verdict_word()
    assert "drops under 0." in head and "no drop can be detected on 1" in head and "5.0" not in head


@pytest.mark.parametrize(
    ("metric", "mde", "cell"),
    [("ndcg@10", 0.25, "0.2500"), ("ndcg@10", 1.2, "none"), ("recall@100", None, ""), ("mrr@10", 1.0, "1.0000")],
)
def test_mde_cell(metric, mde, cell):
    assert mde_cell(metric, mde) == cell
    assert detects_nothing(metric, mde) == (mde is None or mde > 1)
