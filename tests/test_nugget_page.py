"""``report.html`` of a run scored on nuggets, in headless Chromium: opening a query shows, per
retriever, the query's nuggets marked by what its top 10 covers (as the page's data says, and as
nugget_vital@10 scores it); hostile nugget text renders literally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.page_browser import HAVE_CHROMIUM, Browser, settle

pytestmark = pytest.mark.skipif(not HAVE_CHROMIUM, reason="no /usr/bin/chromium")

DEMO = Path(__file__).resolve().parents[1] / "datasets" / "demo"
HOSTILE = "<img src=x onerror=alert('n')> </script><script>alert(1)</script>"


def test_a_query_shows_the_nuggets_its_top_10_covers(tmp_path: Path) -> None:
    from tests.test_nugget_loop import demo_nuggets

    n, a = demo_nuggets(tmp_path)
    lines = n.read_text().splitlines()
    first = json.loads(lines[0])
    first["nuggets"].append({"text": HOSTILE, "importance": "okay"})
    n.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    (tmp_path / "c.yaml").write_text(
        f"dataset: {{path: demo, nuggets: {n.name}, assignments: {a.name}}}\nlatency_queries: 0\nwarmup_queries: 0\n"
        "metrics: [nugget_vital@10, ndcg@10]\nretrievers:\n  bm25: {type: bm25}\n"
    )
    assert main(["run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    qid = first["qid"]
    with Browser() as b:
        b.open((tmp_path / "r" / "report.html").resolve().as_uri() + "#q=" + qid)
        opened = f"document.getElementById('detail').dataset.qid === {json.dumps(qid)}"
        b.page.wait_for(f"document.body.dataset.ready === '1' && {opened}")
        settle(0.1)
        shown = b.eval(
            "Array.from(document.querySelectorAll('#detail section.col[data-retriever=bm25] li.nug'))"
            ".map(li => [li.textContent, li.className, li.title])"
        )
        assert b.console_errors() == [] and b.failed() == []
        assert b.eval("document.querySelectorAll('#detail img').length") == 0
    assert [t for t, _, _ in shown] == [x["text"] for x in first["nuggets"]]  # the hostile one as text
    level = {"n0": 0, "n1": 1, "n2": 2}
    vital = [level[next(c for c in cls.split() if c in level)] for _, cls, title in shown if title.startswith("vital")]
    i = res["query_ids"].index(qid)
    assert sum(vital) / 2 / len(vital) == res["per_query"]["bm25"]["nugget_vital@10"][i]
