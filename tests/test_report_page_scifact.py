"""``report.html`` of a SciFact folder (bm25, dense, hybrid; 300 queries) in headless Chromium with
the network off: no failed request, sorting by the delta puts the largest loss first, opening that
query shows both rankings with the grades of ``qrels.tsv`` and the unjudged documents marked, the
per-query deltas on the page equal ``results.json``'s, no horizontal overflow of the summary table
at 1280 px and no horizontal document scroll at 390 px (screenshots at both widths are saved in
the test's folder), and the page is under 5 MB.

The folder is built here: BM25, a dense retriever on a tiny BERT built by the test (the packaged
model would take minutes to embed the corpus on a CI machine; the page does not care how good the
embedding is), and their RRF hybrid. ``HARNESS_TEST_SCIFACT_FOLDER`` names a prebuilt folder
(``harness run`` with bm25, dense on all-MiniLM-L6-v2, hybrid) to check instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import build_tiny_bert, shared
from tests.page_browser import HAVE_CHROMIUM, Browser, settle
from tests.test_report_page import check_detail, detail, rows, show_all

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAVE_CHROMIUM, reason="no /usr/bin/chromium")]


@pytest.fixture(scope="module")
def scifact_folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("scifact-page")
    prebuilt = os.environ.get("HARNESS_TEST_SCIFACT_FOLDER")
    if prebuilt:
        out = tmp / "res"
        shutil.copytree(prebuilt, out)
        assert main(["report", str(out), "--write"]) == 0  # its page as this harness writes it
        return out
    data = shared("scifact")
    model = build_tiny_bert(tmp / "tiny-bert", head=False)
    cfg = tmp / "run.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(data))}, split: test}}\nmetrics: [ndcg@10, recall@100, map@100, mrr@10]\n"
        "depth: 100\nlatency_queries: 0\nwarmup_queries: 0\nbaseline: bm25\nretrievers:\n  bm25: {type: bm25}\n"
        f"  dense: {{type: dense, model: {json.dumps(str(model))}, max_length: 64}}\n"
        "  hybrid: {type: hybrid, of: [bm25, dense]}\n"
    )
    out = tmp / "res"
    assert main(["run", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    return out


def test_scifact_page(scifact_folder, tmp_path):
    folder = scifact_folder
    results = json.loads((folder / "results.json").read_text())
    assert len(results["query_ids"]) == 300 and set(results["summary"]) == {"bm25", "dense", "hybrid"}
    page = folder / "report.html"
    assert page.stat().st_size < 5_000_000
    with Browser() as b:
        b.open(page.resolve().as_uri())
        assert b.failed() == [] and b.console_errors() == [] and b.dialogs() == []
        assert [u for u in b.requests() if not u.startswith("data:")] == [page.resolve().as_uri()]
        # sorted by the delta of dense (the first retriever that is not the baseline), largest loss first
        assert b.eval("document.getElementById('retriever').value") == "dense"
        assert b.eval("document.querySelector('#queries th[aria-sort]').getAttribute('aria-sort')") == "ascending"
        show_all(b)
        shown = rows(b)
        per = results["per_query"]
        want = {q: per["dense"]["ndcg@10"][i] - per["bm25"]["ndcg@10"][i] for i, q in enumerate(results["query_ids"])}
        assert len(shown) == 300
        assert all(abs(float(r["d"]) - want[r["q"]]) <= 1e-12 for r in shown)
        assert shown[0]["q"] == min(want, key=lambda q: (want[q], q))
        b.eval("document.querySelector('#queries tbody tr').click()")
        settle(0.2)
        opened = detail(b)
        assert opened["qid"] == shown[0]["q"]
        check_detail(opened, folder, ["bm25", "dense", "hybrid"])
        assert sum(label == "unjudged" for c in opened["cols"].values() for _, _, label in c["top"]) > 0
        b.screenshot(tmp_path / "scifact-1280.png")
        table = "document.getElementById('summary')"
        assert b.eval(f"{table}.scrollWidth <= {table}.parentElement.clientWidth")  # the table fits: no scrollbar
        assert b.eval("document.documentElement.scrollWidth <= window.innerWidth")
        b.resize(390, 844)
        settle(0.3)
        assert b.eval("document.documentElement.scrollWidth <= window.innerWidth")
        b.screenshot(tmp_path / "scifact-390.png")
        assert b.failed() == [] and b.console_errors() == []
    for name in ("scifact-1280.png", "scifact-390.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    out = os.environ.get("HARNESS_TEST_SCREENSHOTS")  # where a reviewer wants the screenshots kept
    if out:
        for name in ("scifact-1280.png", "scifact-390.png"):
            shutil.copy(tmp_path / name, Path(out) / name)
