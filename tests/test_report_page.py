"""``report.html`` in headless Chromium (DevTools protocol, offline), on a small folder built here:

- hostile text (``<script>``, ``</script><script>``, ``<!--``, ``<img onerror>``, ``</textarea>``,
  ``javascript:`` links) in documents, titles, queries and ids renders literally: no dialog, no
  request, no console error, no element the data made;
- every row's ``data-delta`` equals ``results.json``'s per-query difference to 1e-12; sorting by
  the delta puts the largest loss first; opening a query shows both rankings with the grades of
  ``qrels.tsv`` and the unjudged documents marked, by mouse and by keyboard; no horizontal
  document scroll at 390 px;
- side files (a folder too large to embed) load from ``file://``;
- ``harness check`` writes its section, whose links open the queries behind a regression;
- ``harness report --serve`` answers on 127.0.0.1 with the page's policy and refuses the rest.

The embedded data's escaping is a hypothesis property (no browser needed).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.results.page.embed import script_json
from tests.page_browser import HAVE_CHROMIUM, Browser, settle
from tests.test_judging_browser import REPO

needs_chromium = pytest.mark.skipif(not HAVE_CHROMIUM, reason="no /usr/bin/chromium")

HOSTILE = [
    "<script>alert('s')</script>",
    "</script><script>alert('e')</script>",
    "<!-- <script>",
    "<img src=x onerror=alert('i')>",
    "</textarea><svg onload=alert('t')>",
    "<a href=\"javascript:alert('j')\">javascript:alert(1)</a>",
    "&lt;b&gt; \u2028 \u2029 </style><style>*{display:none}</style>",
]


TEXT = st.text(st.characters(blacklist_categories=()))  # lone surrogates too
LEAVES = TEXT | st.floats(allow_nan=False, allow_infinity=False) | st.integers()


@settings(max_examples=200, deadline=None)
@given(st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)))
def test_embedded_data_cannot_end_its_script_and_reads_back(obj):
    text = script_json(obj)
    assert not re.search("[<>&\u2028\u2029\ud800-\udfff]", text)
    assert json.loads(text) == obj  # lone surrogates and floats come back exactly


def write_beir(folder: Path) -> Path:
    """Eight documents about coffee with hostile text, four queries, judgments for some."""
    folder.mkdir()
    (folder / "qrels").mkdir()
    docs = [
        {"_id": f"d{i}", "title": f"coffee {HOSTILE[i % len(HOSTILE)]}", "text": f"coffee grind {t} brew water"}
        for i, t in enumerate(HOSTILE)
    ]
    docs.append({"_id": "d<b>x</b>&amp;", "title": "espresso", "text": "coffee espresso grind fine"})
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    queries = [
        {"_id": "q1", "text": "coffee grind <script>alert('q')</script>", "metadata": {"tags": ["<i>tag</i>"]}},
        {"_id": "q2", "text": "espresso brew water </script><!--", "metadata": {"tags": ["plain"]}},
        {"_id": "q3", "text": "coffee water javascript:alert(1)"},
        {"_id": "q<4>", "text": "fine espresso grind <img src=x onerror=alert(2)>"},
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    qrels = [("q1", "d1", 2), ("q1", "d3", 0), ("q1", "d6", 1), ("q2", "d<b>x</b>&amp;", 3), ("q2", "d0", 0)]
    qrels += [("q3", "d2", 1), ("q3", "d5", 2), ("q<4>", "d<b>x</b>&amp;", 1), ("q<4>", "d4", 2)]
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels), encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("page")
    data = write_beir(tmp / "hostile")
    cfg = tmp / "run.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(data))}}}\nmetrics: [ndcg@10, recall@10]\ndepth: 20\n"
        "latency_queries: 0\nwarmup_queries: 0\nbaseline: bm25\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_k2: {type: bm25, k1: 2.0, b: 0.1}\n"
    )
    out = tmp / "res"
    assert main(["run", "--config", str(cfg), "--out", str(out)]) == 0
    assert (out / "report.html").is_file() and "report.html" in json.loads((out / "results.json").read_text())["files"]
    return out


@pytest.fixture(scope="module")
def browser():
    if not HAVE_CHROMIUM:
        pytest.skip("no /usr/bin/chromium")
    with Browser() as b:
        yield b


def open_page(browser: Browser, page: Path, width: int = 1280, **kw) -> None:
    browser.page.events.clear()
    browser.resize(width)
    browser.open(page.resolve().as_uri(), **kw)


def page_requests(browser: Browser) -> list[str]:
    """Every request the page made beyond its own file, its side files and its data: images."""
    return [u for u in browser.requests() if not u.startswith("data:image/png;base64,")]


def show_all(browser: Browser) -> None:
    browser.eval("while (!document.getElementById('more').hidden) document.getElementById('more').click()")


def rows(browser: Browser) -> list[dict]:
    return browser.eval(
        "Array.from(document.querySelectorAll('#queries tbody tr')).map(t => ({q: t.dataset.qid, d: t.dataset.delta}))"
    )


def detail(browser: Browser) -> dict:
    """What the opened query shows: per retriever its documents with grade, and its first-relevant line."""
    return browser.eval(
        """(() => { const out = {qid: document.getElementById('detail').dataset.qid, cols: {}};
        for (const c of document.querySelectorAll('#detail section.col')) {
          out.cols[c.dataset.retriever] = {
            top: Array.from(c.querySelectorAll(':scope > ol.docs > li')).map(li => [li.dataset.doc, li.dataset.grade,
                 li.querySelector('.grade').textContent]),
            missed: Array.from(c.querySelectorAll('.missed li')).map(li => [li.dataset.doc, li.dataset.grade]),
            first: c.querySelector('.meta').dataset.firstRelevant};
        }
        return out; })()"""
    )


def set_control(browser: Browser, element: str, value: str, event: str = "change") -> None:
    """Set a select or input of the explorer as a user would, firing its event."""
    browser.eval(
        f"(() => {{ const e = document.getElementById({json.dumps(element)}); e.value = {json.dumps(value)}; "
        f"e.dispatchEvent(new Event({json.dumps(event)})); }})()"
    )


def qrels_of(folder: Path) -> dict[str, dict[str, int]]:
    from harness.io.trec import read_qrels

    return read_qrels(folder / "qrels.tsv")


def check_detail(shown: dict, folder: Path, names: list[str]) -> None:
    """Both rankings shown, each document's grade as in qrels.tsv, unjudged ones marked."""
    from harness.results import Results
    from harness.results.store import read_runs

    qrels = qrels_of(folder).get(shown["qid"], {})
    runs = read_runs(Results.load(folder))
    assert set(names) <= set(shown["cols"])
    for name in names:
        col = shown["cols"][name]
        want = [d for d, _ in runs[name].ranking(shown["qid"])[:10]]
        assert [d for d, _, _ in col["top"]] == want
        for doc, grade, label in col["top"]:
            if doc in qrels:
                assert grade == str(qrels[doc]) and label == f"grade {qrels[doc]}"
            else:
                assert grade == "" and label == "unjudged"
        missed = {d for d, g in qrels.items() if g >= 1} - set(want)
        assert {d for d, _ in col["missed"]} == missed
        ranks = [i for i, d in enumerate(want, 1) if qrels.get(d, 0) >= 1]
        full = [i for i, (d, _) in enumerate(runs[name].ranking(shown["qid"]), 1) if qrels.get(d, 0) >= 1]
        assert int(col["first"]) == (ranks[0] if ranks else full[0] if full else 0)


@needs_chromium
def test_hostile_text_renders_literally_and_runs_nothing(folder, browser, tmp_path):
    open_page(browser, folder / "report.html")
    show_all(browser)
    # every query opened, by click: each time the text is text
    for q in [r["q"] for r in rows(browser)]:
        browser.eval(f"document.querySelector('#queries tbody tr[data-qid={json.dumps(json.dumps(q))[1:-1]}]').click()")
        settle(0.05)
        assert browser.eval("document.getElementById('detail').dataset.qid") == q
    body = browser.eval("document.body.innerText")
    for s in ["<script>alert('q')</script>", "</script><!--", "<img src=x onerror=alert(2)>", "d<b>x</b>&amp;"]:
        assert s in body, s
    browser.eval("document.querySelector('#queries tbody tr[data-qid=q1]').click()")
    settle(0.05)
    text = browser.eval("document.getElementById('detail').innerText")
    assert "<img src=x onerror=alert('i')>" in text or "</textarea><svg onload=alert('t')>" in text
    # nothing the data holds became markup: only the page's own elements exist
    assert browser.eval("document.querySelectorAll('script').length") == 3
    assert (
        browser.eval(
            "document.querySelectorAll('svg, textarea, iframe, a[href^=javascript], [onerror], [onload]').length"
        )
        == 0
    )
    assert browser.eval("Array.from(document.images).every(i => i.src.startsWith('data:image/png;base64,'))")
    assert browser.eval("typeof window.__harnessReport") == "undefined"  # embedded: no side files
    assert browser.dialogs() == [] and browser.failed() == [] and browser.console_errors() == []
    assert page_requests(browser) == [(folder / "report.html").resolve().as_uri()]
    csp = browser.eval("document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
    assert csp.startswith("default-src 'none'; script-src 'sha256-") and "img-src data:" in csp
    assert "'self'" not in csp and "unsafe" not in csp


@needs_chromium
def test_deltas_sorting_detail_keyboard_and_narrow_screen(folder, browser, tmp_path):
    results = json.loads((folder / "results.json").read_text())
    open_page(browser, folder / "report.html")
    assert browser.eval("document.getElementById('retriever').value") == "bm25_k2"  # first not the baseline
    assert browser.eval("document.getElementById('metric').value") == "ndcg@10"  # the table's first
    # the page opens sorted by the delta, largest loss first; a click reverses, another restores
    for _ in range(2):
        browser.eval("document.querySelector('#queries th button[data-sort=delta]').click()")
    assert browser.eval("document.querySelector('#queries th[aria-sort]').getAttribute('aria-sort')") == "ascending"
    shown = rows(browser)
    per = results["per_query"]
    for metric in results["summary"]["bm25"]:
        set_control(browser, "metric", metric)
        shown = rows(browser)
        want = {q: per["bm25_k2"][metric][i] - per["bm25"][metric][i] for i, q in enumerate(results["query_ids"])}
        assert {r["q"] for r in shown} == set(want)
        for r in shown:
            assert abs(float(r["d"]) - want[r["q"]]) <= 1e-12
        deltas = [float(r["d"]) for r in shown]
        assert deltas == sorted(deltas)
    set_control(browser, "metric", "ndcg@10")
    worst = rows(browser)[0]["q"]
    # filters: a tag, then text (ids and query text)
    tag = browser.eval("Array.from(document.getElementById('tag').options).find(o => o.textContent === 'plain').value")
    set_control(browser, "tag", tag)
    assert [r["q"] for r in rows(browser)] == ["q2"]
    set_control(browser, "tag", "-1")
    set_control(browser, "search", "ESPRESSO", "input")
    assert sorted(r["q"] for r in rows(browser)) == ["q2", "q<4>"]
    set_control(browser, "search", "", "input")
    assert rows(browser)[0]["q"] == worst
    # by keyboard: focus the first row, Enter opens it, j moves on, Escape closes
    browser.eval("document.querySelector('#queries tbody tr').focus()")
    browser.page.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
    browser.page.call("Input.dispatchKeyEvent", type="keyUp", key="Enter", code="Enter", windowsVirtualKeyCode=13)
    settle(0.1)
    opened = detail(browser)
    assert opened["qid"] == worst
    check_detail(opened, folder, ["bm25", "bm25_k2"])
    assert any(label == "unjudged" for c in opened["cols"].values() for _, _, label in c["top"])
    browser.page.key("j")
    settle(0.1)
    second = rows(browser)[1]["q"]
    assert detail(browser)["qid"] == second
    check_detail(detail(browser), folder, ["bm25", "bm25_k2"])
    browser.page.call("Input.dispatchKeyEvent", type="keyDown", key="Escape", code="Escape", windowsVirtualKeyCode=27)
    settle(0.1)
    assert browser.eval("document.getElementById('detail').hidden")
    # the link of a query opens it (what harness check's section and a pasted URL use)
    browser.page.call("Page.navigate", url=(folder / "report.html").resolve().as_uri() + "#q=q%3C4%3E&m=recall%4010")
    browser.page.wait_for(
        "document.body.dataset.ready === '1' && document.getElementById('detail').dataset.qid === 'q<4>'"
    )
    assert browser.eval("document.getElementById('metric').value") == "recall@10"
    browser.screenshot(tmp_path / "report-1280.png")
    assert browser.eval(
        "document.getElementById('summary').scrollWidth <= document.getElementById('summary').parentElement.clientWidth"
    )
    browser.resize(390, 800)
    settle(0.3)
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    browser.screenshot(tmp_path / "report-390.png")
    assert browser.console_errors() == [] and browser.failed() == []


@needs_chromium
def test_side_files_load_from_file_url(folder, browser, tmp_path):
    from harness.results import Results
    from harness.results.drilldown import attach_folder
    from harness.results.page.render import SIDE_DIR, write_page

    copy = tmp_path / "big"
    subprocess.run(["cp", "-r", str(folder), str(copy)], check=True)
    results = attach_folder(Results.load(copy))
    written = write_page(results, copy, embed_limit=0)  # as a folder too large to embed is written
    assert {p.name for p in written} >= {"report.html", "head.js", "part-000.js"}
    html = (copy / "report.html").read_text()
    assert 'id="report-head"' not in html and f'src="{SIDE_DIR}/head.js"' in html
    open_page(browser, copy / "report.html")
    assert browser.eval("document.querySelectorAll('#queries tbody tr').length") == 4
    browser.eval("document.querySelector('#queries tbody tr[data-qid=q1]').click()")
    settle(0.1)
    check_detail(detail(browser), copy, ["bm25", "bm25_k2"])
    assert browser.failed() == [] and browser.console_errors() == [] and browser.dialogs() == []
    assert browser.heap_used() > 0
    # written again small enough to embed: the side files it no longer needs are gone
    write_page(results, copy)
    assert not (copy / SIDE_DIR).exists()


@needs_chromium
def test_check_section_links_open_the_queries_behind_a_regression(folder, browser, tmp_path):
    current = tmp_path / "current"
    subprocess.run(["cp", "-r", str(folder), str(current)], check=True)
    data = json.loads((current / "results.json").read_text())
    data["per_query"]["bm25_k2"]["ndcg@10"] = [0.0 for _ in data["query_ids"]]  # every query lost
    (current / "results.json").write_text(json.dumps(data))
    summary = tmp_path / "summary.md"
    argv = ["check", "--baseline", str(folder), "--current", str(current), "--summary", str(summary)]
    assert main([*argv, "--tolerance", "0", "--alpha", "0.2"]) == 1
    assert f"{current / 'report.html'}#vs-baseline-folder" in summary.read_text()
    open_page(browser, current / "report.html")
    links = browser.eval("Array.from(document.querySelectorAll('#vs-baseline-folder a')).map(a => a.dataset.qid)")
    assert links and set(links) <= set(data["query_ids"])
    browser.eval("document.querySelector('#vs-baseline-folder a').click()")
    browser.page.wait_for(f"document.getElementById('detail').dataset.qid === {json.dumps(links[0])}")
    # re-rendering the folder keeps the section; a second check replaces it
    assert main(["report", str(current), "--html"]) == 0
    assert (current / "report.html").read_text().count('id="vs-baseline-folder"') == 1


def test_serve_answers_on_loopback_only_the_page(folder):
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "report", str(folder), "--serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(REPO), **_env()},
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        with urllib.request.urlopen(m[0], timeout=30) as resp:
            body = resp.read().decode()
            assert resp.headers["Content-Security-Policy"].startswith("default-src 'none'")
            assert resp.headers["X-Content-Type-Options"] == "nosniff" and resp.headers["Cache-Control"] == "no-store"
        assert 'id="explorer"' in body
        for path, code in (("results.json", 404), ("../results.json", 404), ("runs/", 404)):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(m[0] + path, timeout=30)
            assert e.value.code == code
        forged = urllib.request.Request(m[0], headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(forged, timeout=30)
        assert e.value.code == 403
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(m[0], data=b"{}", method="POST"), timeout=30)
        assert e.value.code == 405
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@needs_chromium
def test_suite_index_links_each_dataset_page(folder, browser, tmp_path):
    from harness.results import Results
    from harness.suite.aggregate import aggregate
    from harness.suite.run import write_suite

    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    for name in ("hostile", "again<b>"):
        subprocess.run(["cp", "-r", str(folder), str(suite_dir / name)], check=True)
    suite = aggregate({n: Results.load(suite_dir / n) for n in ("hostile", "again<b>")}, baseline="bm25")
    assert suite_dir / "report.html" in write_suite(suite, suite_dir)
    open_page(browser, suite_dir / "report.html", ready="document.readyState === 'complete'")
    links = browser.eval("Array.from(document.querySelectorAll('#datasets a')).map(a => a.textContent)")
    assert links == ["hostile", "again<b>"]
    assert browser.eval("document.querySelectorAll('#suite table').length") == 2  # one per metric
    browser.eval("document.querySelectorAll('#datasets a')[1].click()")
    browser.page.wait_for("document.body && document.body.dataset.ready === '1'")
    assert browser.eval("decodeURIComponent(location.pathname)").endswith("again<b>/report.html")
    assert browser.failed() == [] and browser.console_errors() == [] and browser.dialogs() == []


def test_power_figures_where_results_carry_them(folder):
    from harness.results import Results
    from harness.results.page.render import render

    results = Results.load(folder)
    sig = results.significance["bm25_k2"]

    def with_fields(**fields) -> None:
        for m, c in sig.items():
            sig[m] = type(c).model_validate({**c.model_dump(), **fields})

    with_fields(sd_diff=None, mde=None, n_for_observed=None, power_reason=None)  # results from before the figures
    plain = render(results).html
    assert "MDE (80% power)" not in plain and 'class="power"' not in plain
    with_fields(sd_diff=0.25, mde=0.4321, n_for_observed=1900)
    html = render(results).html
    delta = sig["ndcg@10"].delta
    assert "MDE (80% power)" in html and "<td>0.4321</td>" in html and "<td>1,900</td>" in html
    sentence = (
        f"with 4 queries this set detects ndcg@10 differences of 0.432 or more (80% power, one comparison, "
        f"before Holm); bm25_k2&#x27;s {delta:+.3f} would need 1,900 queries"
    )
    assert html.count(sentence) == 1  # under the tests, not again in the legend
    with_fields(sd_diff=0.0, mde=None, n_for_observed=None, power_reason="the differences have zero variance")
    html = render(results).html
    assert 'title="the differences have zero variance"' in html


@needs_chromium
def test_summary_reads_without_javascript(folder, browser):
    browser.page.call("Emulation.setScriptExecutionDisabled", value=True)
    try:
        open_page(browser, folder / "report.html", ready="document.readyState === 'complete'")
        text = browser.eval("document.body.innerText")
        results = json.loads((folder / "results.json").read_text())
        for name, means in results["summary"].items():
            assert name in text and f"{means['ndcg@10']:.4f}" in text
        assert "Against the baseline (bm25)" in text and "The query explorer needs JavaScript" in text
        assert browser.eval("document.getElementById('explorer-ui').hidden")
    finally:
        browser.page.call("Emulation.setScriptExecutionDisabled", value=False)
