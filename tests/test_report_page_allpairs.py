"""``report.html`` of a folder of four retrievers in headless Chromium: the letter groups beside each
mean, the all-pairs sentence in the legend, and the swap-rate curve drawn (inline SVG under the page's
Content-Security-Policy: no violation, no request, every point inside the chart)."""

from __future__ import annotations

import pytest

from harness.results import Results
from harness.results.groups import SWAP_DRAWS, swap_curve
from harness.results.table import build_table
from harness.stats import allpairs as ap
from tests.page_browser import HAVE_CHROMIUM, Browser


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.test_report import make_results

    out = tmp_path_factory.mktemp("page-allpairs") / "res"
    make_results(with_failure=False).save(out)
    assert (out / "report.html").is_file()
    return out


def test_page_html_carries_letters_sentence_and_curve(folder):
    results = Results.load(folder)
    table = build_table(results)
    html = (folder / "report.html").read_text(encoding="utf-8")
    f = table.groups[table.metrics[0]]
    sentence = f"All pairs on {table.metrics[0]}: {ap.sentence(f)}."
    assert sentence.replace("'", "&#x27;") in html or sentence in html
    points = swap_curve(results, [r.name for r in table.ok_rows], table.metrics[0])
    assert [p.n for p in points] == ap.default_sizes(len(results.query_ids)) and points[0].draws == SWAP_DRAWS
    assert html.count('<circle class="pt"') == len(points)


@pytest.mark.skipif(not HAVE_CHROMIUM, reason="no /usr/bin/chromium")
def test_page_in_chromium(folder):
    results = Results.load(folder)
    table = build_table(results)
    with Browser() as browser:
        browser.open((folder / "report.html").resolve().as_uri())
        cells = browser.eval(
            "Array.from(document.querySelectorAll('#summary tbody tr')).map(t => [t.querySelector('th').innerText, "
            "Array.from(t.querySelectorAll('td')).map(td => (td.querySelector('.grp') || {}).innerText || '')])"
        )
        shown = {name.replace(" (baseline)", ""): lets for name, lets in cells}
        for row in table.ok_rows:
            want = [row.metrics[m].letters for m in table.metrics if m in table.groups]
            assert shown[row.name][: len(want)] == want and all(want)
        legend = browser.eval("document.querySelector('#summary-section .legend').innerText")
        assert f"All pairs on {table.metrics[0]}: with 30 queries this set separates" in legend
        assert "groups: {" in legend
        box = browser.eval(
            "(() => { const s = document.querySelector('#swap svg').getBoundingClientRect(); "
            "return [s.width, s.height, Array.from(document.querySelectorAll('#swap circle.pt')).map(c => { "
            "const b = c.getBoundingClientRect(); return [b.x - s.x, b.y - s.y, +c.dataset.n]; })]; })()"
        )
        width, height, points = box
        assert width > 200 and height > 100 and len(points) == len(ap.default_sizes(30))
        assert all(0 <= x <= width and 0 <= y <= height for x, y, _ in points)
        assert [n for _, _, n in points] == sorted(n for _, _, n in points)
        assert browser.console_errors() == [] and browser.failed() == []
        assert [u for u in browser.requests() if not u.startswith(("file:", "data:"))] == []
