"""What the gate decided is shown with what it rests on, through ``harness
check`` on two real demo results folders.

Row 11: a non-inferiority row shows its bound and its margin in the text table, the markdown summary,
the JUnit file and the page's section (not the regression tolerance, which plays no part in it).
Row 12: a gate that cannot see its tolerance never prints a bare PASS: the first line says it is blind,
on how many checks, and which drops it cannot see.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import run_harness, two_bm25_config


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("gate")
    for name, extra in (("base", ""), ("cur", ", k1: 1.5, b: 0.75")):
        (d / f"{name}.yaml").write_text(two_bm25_config("bm25_okapi: {type: bm25, backend: rank_bm25}", extra))
        proc = run_harness("run", "--config", f"{name}.yaml", "--out", name, "--no-progress", cwd=d)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return d


def _check(d: Path, *extra: str, tag: str):
    proc = run_harness(
        "check", "--baseline", "base", "--current", "cur", "--summary", f"{tag}.md", "--junit", f"{tag}.xml", *extra,
        cwd=d,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    page = (d / "cur" / "report.html").read_text()
    return proc.stdout, (d / f"{tag}.md").read_text(), ET.parse(d / f"{tag}.xml"), page


def test_non_inferiority_rows_show_bound_and_margin_everywhere(folders):
    text, md, junit, page = _check(folders, "--non-inferiority", "0.005", "--ni-alpha", "0.025", tag="ni")
    rows = [ln for ln in text.splitlines() if re.match(r"^\s*(INFERIOR|ok|improved)\s", ln)]
    assert rows, text
    for ln in rows:  # the margin in the tol column, the bound beside it; never the regression tolerance
        assert "margin 0.005" in ln and re.search(r"[+-]\d\.\d{4}\s*$", ln), ln
        assert not re.search(r"\s0\.01\s", ln), ln
    md_rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "bm25" in ln]
    assert md_rows and all("margin 0.005" in ln for ln in md_rows), md
    assert "tolerance / margin" in md and "| bound |" in md
    for case in junit.iter("testcase"):
        if case.get("name") == "dataset":
            continue
        msg = " ".join((e.get("message") or e.text or "") for e in case)
        assert "lower bound" in msg and "margin -0.005" in msg, msg
    section = page[page.index('id="vs-baseline-folder"') :]
    assert "tolerance / margin" in section and section.count("margin 0.005") >= 4, section[:3000]
    assert re.search(r"<td>margin 0\.005</td><td>[+-]\d\.\d{4}</td>", section), section[:3000]


def test_a_blind_gate_says_so_on_its_first_line(folders):
    text, md, _, page = _check(folders, tag="blind")
    first = text.splitlines()[0]
    assert re.search(r"(PASS|FAIL) \(blind on \d+ of \d+ checks: drops under 0\.\d{3}( to 0\.\d{3})? are invisible "
                     r"with 83 queries\)", first), first  # fmt: skip
    assert md.splitlines()[0].startswith("## ") and "(blind on " in md.splitlines()[0], md[:500]
    assert "(blind on " in text.splitlines()[-2] or "(blind on " in text, text[-1000:]
    assert not re.search(r"\bPASS:", text) and not re.search(r"\bPASS:", md)
    section = page[page.index('id="vs-baseline-folder"') :]
    assert "(blind on " in section[:2000]


def test_a_gate_that_sees_its_tolerance_prints_a_plain_verdict(folders):
    text, md, _, _ = _check(folders, "--tolerance", "0.2", tag="sees")
    assert "blind" not in md.splitlines()[0], md[:300]
    assert "blind" not in text.splitlines()[0] and re.search(r"(PASS|FAIL): ", text.splitlines()[0]), text[:300]
