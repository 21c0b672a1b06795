"""``harness check --comment`` and ``--annotations``: golden outputs (a regression, a blind check, a
suite over GitHub's cap), the escaping of workflow commands, and the command's files.

The golden files are in ``tests/data/gate_comment``; ``HARNESS_REGEN_GOLDEN=1`` rewrites them (say why
in the commit).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.gate import CheckReport, CheckRow, DatasetCheck, check
from harness.gate.annotations import annotations, escape_data, escape_property
from harness.gate.comment import LIMIT, MARKER, Part, to_comment
from harness.io import atomic
from tests.test_check import base_scores, make_results

pytestmark = pytest.mark.core

GOLDEN = Path(__file__).parent / "data" / "gate_comment"
LINK = "https://github.com/acme/search/actions/runs/42"


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("HARNESS_REGEN_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs (HARNESS_REGEN_GOLDEN=1 rewrites it)"


def regression_report() -> CheckReport:
    """bm25's ndcg@10 drops 0.05 on every query (a regression); its recall@100 moves by noise that a
    tolerance of 0.01 cannot see on 100 queries (blind); dense is unchanged."""
    b = base_scores(100)
    noise = np.random.default_rng(3).normal(0, 0.05, 100)
    cur = {"ndcg@10": b["ndcg@10"] - 0.05, "recall@100": b["recall@100"] + noise}
    dense = {m: v + 0.01 for m, v in b.items()}
    return check(
        make_results({"bm25": b, "dense": dense}), make_results({"bm25": cur, "dense": dense}), tolerances=0.01
    )


def blind_report() -> CheckReport:
    """No regression, but 20 queries cannot see a tolerance of 0.01: the gate passes blind."""
    b = base_scores(20)
    cur = {m: v + np.random.default_rng(5).normal(0, 0.03, 20) for m, v in b.items()}
    return check(make_results({"bm25": b}), make_results({"bm25": cur}), tolerances=0.01)


def test_regression_comment_and_annotations_golden():
    report = regression_report()
    assert [r.verdict for r in report.rows if r.failing] == ["regression"]
    assert [r.metric for r in report.rows if r.blind] == ["recall@100"]
    golden("regression.md", to_comment([Part(None, report)], link=LINK))
    golden("regression.annotations", annotations([(None, report)]))


def test_blind_comment_and_annotations_golden():
    report = blind_report()
    assert not report.failed and all(r.blind for r in report.rows)
    text = to_comment([Part(None, report)], link=LINK)
    assert "<details>" in text and "regressions=0" in text and "verdict=blind" in text
    golden("blind.md", text)
    notes = annotations([(None, report)])
    assert notes.count("::warning ") == 2 and "::error" not in notes
    golden("blind.annotations", notes)


def test_nothing_to_say_prints_nothing():
    b = base_scores(400)
    same = make_results({"bm25": b})
    report = check(same, make_results({"bm25": b}), tolerances=0.2)
    assert not report.failed and not any(r.blind for r in report.rows)
    assert annotations([(None, report)]) == ""
    text = to_comment([Part(None, report)])
    assert "✅ **The gate passed**: no regression in 2 checks" in text and "<details>" not in text


def _suite_part(i: int) -> Part:
    """One dataset of a big suite: 12 regressions, 6 blind checks, every name long."""
    names = [f"retriever-{j:02d}-" + "x" * 40 for j in range(12)]
    fell = {"verdict": "regression", "baseline": 0.5, "current": 0.4, "delta": -0.1, "p_value": 1e-4}
    blind = {"verdict": "ok", "baseline": 0.7, "current": 0.699, "delta": -0.001, "p_value": 0.8, "mde": 0.02}
    blind |= {"blind": True, "queries_needed": 1200}
    rows = [CheckRow(retriever=n, metric="ndcg@10", tolerance=0.01, queries=300, **fell) for n in names]
    rows += [CheckRow(retriever=n, metric="recall@100", tolerance=0.01, queries=300, **blind) for n in names[:6]]
    dataset = DatasetCheck(name=f"dataset-{i:03d}", split="test", common_queries=300)
    return Part(f"dataset-{i:03d}", CheckReport(rows=rows, dataset=dataset))


def test_suite_over_the_cap_is_cut_with_a_line_golden():
    parts = [_suite_part(i) for i in range(120)]
    full = to_comment(parts, link=LINK, limit=10**9)
    assert len(full.encode()) > LIMIT  # the suite would not fit
    text = to_comment(parts, link=LINK)
    assert len(text.encode()) <= LIMIT
    assert text.startswith(MARKER + "\n") and "regressions=1440" in text
    left = re.search(r"\*\*([\d,]+) rows of ([\d,]+) datasets left out\*\* \(([\d,]+) of them failing\)", text)
    assert left, text[-800:]
    shown = text.count("<code>retriever-")  # one per row kept
    assert int(left.group(1).replace(",", "")) + shown == 120 * 18
    failing_left = 120 * 12 - text.count("| **REGRESSION** |")
    assert left.group(3).replace(",", "") == str(failing_left)
    assert text.count("<details>") == text.count("</details>")  # no block cut in half
    golden("suite_cap.md", text)


def test_a_suite_that_fits_is_whole():
    parts = [_suite_part(i) for i in range(3)]
    text = to_comment(parts, ["dataset-999: dataset missing from the current suite"])
    assert "left out" not in text and text.count("#### <code>dataset-") == 3
    assert "❌ **The gate failed on 4 of 4 datasets**" in text and "dataset-999" in text


def test_workflow_command_escaping():
    assert escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"
    assert escape_data("\x1b[31m") == "\\x1b[31m"  # other controls from data are shown, never obeyed


@settings(max_examples=60, deadline=None)
@given(name=st.text(min_size=1, max_size=40), metric=st.sampled_from(["ndcg@10", "recall@100"]))
def test_hostile_names_cannot_forge_a_command_or_break_the_comment(name, metric):
    rows = [
        CheckRow(
            retriever=name,
            metric=metric,
            verdict="regression",
            baseline=0.5,
            current=0.4,
            delta=-0.1,
            p_value=0.001,
            tolerance=0.01,
            queries=50,
            note=name,
        )
    ]
    rows.append(rows[0].model_copy(update={"verdict": "ok", "delta": -0.001, "blind": True, "mde": 0.03}))
    report = CheckReport(rows=rows, dataset=DatasetCheck(name=name, common_queries=50))
    out = annotations([(name, report)])
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("::error title=") and lines[1].startswith("::warning title=")
    for line in lines:
        head, _, _ = line[2:].partition("::")
        assert "\r" not in line and ":" not in head.removeprefix("error").removeprefix("warning")
    text = to_comment([Part(name, report)])
    assert text.startswith(MARKER + "\n") and len(text.encode()) <= LIMIT
    table = [ln for ln in text.splitlines() if ln.startswith("| **REGRESSION**")]
    assert len(table) == 1 and table[0].count(" | ") == 8  # no name adds a cell
    if any(c in name for c in "<>&|\n"):  # a name that could be markup is shown escaped, never as is
        assert f"<code>{name}</code>" not in text


def test_rows_too_long_for_any_comment_leave_the_verdict_and_the_link():
    rows = [CheckRow(retriever="r" * 70_000, metric="ndcg@10", verdict="regression", delta=-0.1, queries=5)]
    text = to_comment([Part(None, CheckReport(rows=rows))], link=LINK)
    assert len(text.encode()) <= LIMIT and text.startswith(MARKER + "\n")
    assert "❌ **The gate failed**: 1 regression in 1 check." in text and "**1 row left out**" in text
    assert LINK in text and "verdict=regression regressions=1" in text


# ---------------------------------------------------------------------- the command
@pytest.fixture
def folders(tmp_path):
    b = base_scores()
    base = tmp_path / "base.json"
    atomic.write_json(base, make_results({"bm25": b}).to_json())
    worse = {"ndcg@10": b["ndcg@10"] - 0.05, "recall@100": b["recall@100"]}
    cur = tmp_path / "cur.json"
    atomic.write_json(cur, make_results({"bm25": worse}).to_json())
    return tmp_path, base, cur


def test_check_writes_the_comment_and_prints_annotations(folders, capsys, monkeypatch):
    tmp, base, cur = folders
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/search")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    monkeypatch.delenv("GITHUB_RUN_ATTEMPT", raising=False)
    out = tmp / "comment.md"
    args = ["check", "--baseline", str(base), "--current", str(cur), "--comment", str(out), "--annotations"]
    assert main(args) == 1
    stdout = capsys.readouterr().out
    assert stdout.count("::error title=regression%3A bm25 ndcg@10::") == 1
    text = out.read_text()
    assert text.startswith(MARKER + "\n") and f"[the run's summary]({LINK})" in text
    assert "verdict=regression regressions=1" in text
    assert main(args) == 1  # its own file is replaced
    capsys.readouterr()
    same = ["check", "--baseline", str(base), "--current", str(base), "--comment", str(out), "--annotations"]
    assert main([*same, "--tolerance", "0.2"]) == 0  # nothing to say: no line
    assert "::" not in capsys.readouterr().out
    assert "verdict=ok regressions=0" in out.read_text()
    assert main(same) == 0  # the same results, but 100 queries cannot see 0.01: one warning per blind check
    assert capsys.readouterr().out.count("::warning title=blind check%3A bm25 ") == 2
    assert "verdict=blind regressions=0" in out.read_text()


def test_comment_never_replaces_a_users_file_and_says_why_on_bad_input(folders, capsys):
    tmp, base, cur = folders
    mine = tmp / "notes.md"
    mine.write_text("my notes\n")
    assert main(["check", "--baseline", str(base), "--current", str(cur), "--comment", str(mine)]) == 2
    assert mine.read_text() == "my notes\n"
    out = tmp / "comment.md"
    assert main(["check", "--baseline", str(tmp / "nope.json"), "--current", str(cur), "--comment", str(out)]) == 2
    text = out.read_text()
    assert text.startswith(MARKER + "\n") and "verdict=error" in text and "could not run" in text
    err = capsys.readouterr().err
    assert main(["check", "--baseline", str(base), "--current", str(cur), "--annotations", "--format", "json"]) == 2
    assert "--annotations" in capsys.readouterr().err and err


def test_a_real_suite_check_writes_one_comment_and_dataset_named_annotations(tmp_path, capsys):
    """Two suite folders (the golden-output inputs): every dataset's section, its blind checks, one verdict."""
    import shutil

    suite = Path(__file__).parent / "data" / "golden_outputs" / "inputs" / "suite"
    for side in ("a", "b"):
        shutil.copytree(suite, tmp_path / side)
    out = tmp_path / "comment.md"
    argv = ["check", "--baseline", str(tmp_path / "a"), "--current", str(tmp_path / "b")]
    assert main([*argv, "--comment", str(out), "--annotations"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("::warning title=[support] blind check%3A ") == 4
    assert printed.count("::warning title=[small] blind check%3A ") == 4
    text = out.read_text()
    assert text.splitlines()[1].startswith("⚠️ **The gate passed on all 2 datasets, but it is blind on 8 of 8 checks**")
    assert "#### <code>support</code>" in text and "#### <code>small</code>" in text
    assert "verdict=blind regressions=0" in text


def test_summary_may_be_the_empty_step_summary_file_a_runner_creates(folders):
    """``--summary "$GITHUB_STEP_SUMMARY"`` as the runner creates it (an empty file) is written; a file
    with anything in it that harness check did not write is still refused."""
    tmp, base, cur = folders
    step = tmp / "step_summary"
    step.write_bytes(b"")
    assert main(["check", "--baseline", str(base), "--current", str(cur), "--summary", str(step)]) == 1
    assert "harness check" in step.read_text()
    step.write_text("## an earlier step's summary\n")
    assert main(["check", "--baseline", str(base), "--current", str(cur), "--summary", str(step)]) == 2
    assert step.read_text() == "## an earlier step's summary\n"
