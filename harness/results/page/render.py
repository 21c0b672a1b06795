"""``report.html``: one self-contained page per results folder (see docs/reports.md, "The page").

The summary (table, tests, plots, manifest) is HTML that reads without JavaScript. The query
explorer is one inline script over data embedded as JSON (``<script type="application/json">``,
which runs nothing). A folder whose data would make the page larger than :data:`EMBED_LIMIT` ships
it in side files instead, ``report-data/*.js``, loaded by classic ``<script src>`` elements: the one
way a page opened from ``file://`` can read other files of its folder (it cannot fetch, import a
module or start a worker there).

The page loads nothing from the network: its Content-Security-Policy is ``default-src 'none'``,
its own script and style allowed by hash, images only as ``data:`` URIs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from harness import clock
from harness.io import atomic
from harness.results.page import summary, synthetic
from harness.results.page.data import PageData, build
from harness.results.page.embed import csp, script_json, text
from harness.results.table import ComparisonTable, build_table

if TYPE_CHECKING:
    from harness.results import Results

PAGE_FILE = "report.html"
#: side files of a folder too large to embed (``head.js``, ``part-000.js``, ...)
SIDE_DIR = "report-data"
#: embedded data above this many characters goes to side files instead
EMBED_LIMIT = 4_000_000
#: where ``harness check`` puts its section (replaced on every check; never inside the data: the
#: data escapes every ``<``)
CHECK_START, CHECK_END = "<!-- vs-baseline-folder -->", "<!-- /vs-baseline-folder -->"
GLOBAL = "window.__harnessReport"


def static(name: str) -> str:
    return resources.files("harness.results.page").joinpath("static", name).read_text(encoding="utf-8")


@dataclass
class Page:
    html: str
    #: side file name (relative to the folder) -> content; empty when the data is embedded
    side: dict[str, str]
    #: the Content-Security-Policy the page carries (``harness report --serve`` sends it as a header)
    policy: str


def render(
    results: Results,
    *,
    data: PageData | None = None,
    images: list[Path] | None = None,
    captions: dict[str, str] | None = None,
    check_section: str = "",
    embed_limit: int = EMBED_LIMIT,
) -> Page:
    """The page for ``results`` (and its side files when the data is larger than ``embed_limit``)."""
    data = data or build(results)
    table = build_table(results)
    head_json = script_json(data.head)
    detail_json = [script_json(d) for d in data.details]
    embedded = len(head_json) + sum(len(d) for d in detail_json) <= embed_limit
    js, css = static("page.js"), static("page.css")
    side: dict[str, str] = {}
    if embedded:
        data_html = (
            f'<script type="application/json" id="report-head">{head_json}</script>\n'
            f'<script type="application/json" id="report-details">[{",".join(detail_json)}]</script>'
        )
    else:
        side[f"{SIDE_DIR}/head.js"] = f"({GLOBAL}||({GLOBAL}={{parts:[]}})).head={head_json};\n"
        for k, d in enumerate(detail_json):
            side[f"{SIDE_DIR}/part-{k:03d}.js"] = f"({GLOBAL}||({GLOBAL}={{parts:[]}})).parts.push({d});\n"
        data_html = "\n".join(f'<script src="{text(name)}"></script>' for name in side)
    policy = csp([js], [css], side_files=not embedded)
    title = data.head["title"]
    from harness.results.manifest import Manifest

    created = Manifest.of(results).created or clock.stamp()
    base = table.baseline
    n = len(results.summary)
    sub = [f"{len(results.query_ids):,} queries", f"{n} retriever{'s' if n != 1 else ''}"]
    sub.append(f"baseline {base}" if base else "no baseline")
    sub.append(f"written {created}")
    body = [
        f"<header><h1>{text(title)}</h1><p class=sub>{text(' · '.join(sub))}</p>",
        synthetic.header(results) + "</header>",  # a synthetic set's bias figures, where its numbers are read
        "<main>",
        '<section id="summary-section"><h2>Comparison</h2>',
        summary.failures(table),
        summary.quality_table(table),
        summary.legend(table),
        summary.tests_table(results, table),
        summary.cost_table(table),
        _swap_section(results, table),
        "</section>",
        f"{CHECK_START}{check_section}{CHECK_END}",
    ]
    plots = summary.plots(images or [], captions or {})
    if plots:
        body += ['<section id="plots"><h2>Plots</h2>', plots, "</section>"]
    body += [
        '<section id="explorer"><h2>Queries</h2>',
        "<noscript><p>The query explorer needs JavaScript; the table above does not.</p></noscript>",
        summary.notes(data.notes),
        '<div id="explorer-ui" hidden>',
        '<div id="controls">',
        '<label>retriever<select id="retriever"></select></label>',
        '<label>metric<select id="metric"></select></label>',
        '<label>tag<select id="tag"></select></label>',
        '<label>search<input id="search" type="search" placeholder="id or text" autocomplete="off"></label>',
        "</div>",
        '<canvas id="diffplot" height="160" role="img"></canvas><p id="plotcap" class="note"></p>',
        '<p id="count" aria-live="polite"></p>',
        '<div id="listbox"><table id="queries"><thead></thead><tbody></tbody></table></div>',
        '<button id="more" type="button" hidden>Show more</button>',
        '<section id="detail" hidden aria-live="polite"></section>',
        '<p class="keys"><kbd>/</kbd> search · <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>Enter</kbd> open · '
        "<kbd>Esc</kbd> close</p>",
        "</div>",
        "</section>",
        '<section id="about"><h2>Run</h2>',
        summary.manifest(results),
        "</section>",
        "</main>",
    ]
    html = "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{text(policy)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="referrer" content="no-referrer">',
            f"<title>{text(title)}</title>",
            f"<style>{css}</style>",
            "</head><body>",
            *[b for b in body if b],
            data_html,
            f"<script>{js}</script>",
            "</body></html>",
        ]
    )
    return Page(html + "\n", side, policy)


def _swap_section(results: Results, table: ComparisonTable) -> str:
    """The swap-rate curve of the first metric over the retrievers that ran (three or more)."""
    from harness.results import groups

    metric = next((m for m in table.metrics if m in table.groups), None)
    if metric is None:
        return ""
    names = [r.name for r in table.ok_rows]
    points = groups.swap_curve(results, names, metric)
    return summary.swap_chart(metric, points, points[0].draws if points else groups.SWAP_DRAWS)


def write_page(
    results: Results,
    folder: Path,
    *,
    images: list[Path] | None = None,
    captions: dict[str, str] | None = None,
    check_section: str = "",
    embed_limit: int = EMBED_LIMIT,
) -> list[Path]:
    """Write ``report.html`` (and its side files, if any) into ``folder``; side files an earlier,
    larger page left there are removed. Returns the files written."""
    folder = Path(folder)
    page = render(results, images=images, captions=captions, check_section=check_section, embed_limit=embed_limit)
    written = [atomic.write_text(folder / name, content) for name, content in page.side.items()]
    stale = folder / SIDE_DIR
    if stale.is_dir():  # an earlier, larger page's side files (only names this module writes)
        for f in stale.glob("*.js"):
            if f"{SIDE_DIR}/{f.name}" not in page.side and re.fullmatch(r"head|part-\d{3,}", f.stem):
                f.unlink(missing_ok=True)
        if not any(stale.iterdir()):
            stale.rmdir()
    written.append(atomic.write_text(folder / PAGE_FILE, page.html))
    return written


#: captions of the plots the page embeds, by file name
CAPTIONS = {
    "metric_at_k.png": "nDCG@k and recall@k for k = 1..depth, from the saved runs",
    "quality_latency.png": "the first metric (mean, 95% CI) against p50 latency",
}


def write_report_page(
    results: Results,
    folder: Path,
    images: list[Path] | None = None,
    *,
    diff_plots: bool = True,
    check_section: str | None = None,
) -> list[Path]:
    """The per-query difference plots (PNG) and ``report.html`` with every plot embedded: what
    :func:`harness.results.render.write_renderings` adds to a results folder. A section ``harness check`` put
    into an earlier page is kept unless ``check_section`` replaces it."""
    from harness.results.page.diffplot import write_diff_plots

    folder = Path(folder)
    synthetic.bias_of(results)  # a synthetic set's hand-edited bias.json: one line before any file is written
    diffs = write_diff_plots(results, folder) if diff_plots else []
    captions = dict(CAPTIONS)
    if diffs and results.metrics:
        for p in diffs:
            captions[p.name] = f"per-query difference against the baseline on {results.metrics[0]}, sorted"
    section = read_check_section(folder / PAGE_FILE) if check_section is None else check_section
    return diffs + write_page(results, folder, images=[*diffs, *(images or [])], captions=captions,
                              check_section=section)  # fmt: skip


def read_check_section(page: Path) -> str:
    """The ``harness check`` section of an existing page ("" when there is none)."""
    try:
        html = page.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    a, b = html.find(CHECK_START), html.find(CHECK_END)
    return html[a + len(CHECK_START) : b] if 0 <= a < b else ""
