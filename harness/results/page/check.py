"""The "vs baseline folder" section ``harness check`` writes into the current folder's page.

The page's own comparison is against the baseline *retriever* of the same run; a check compares
the folder with another *folder* (last night's, the main branch's). The section lists every
verdict and, for each regression, the queries that lost most against the baseline folder, each a
link that opens the query in the page's explorer (``#q=ID&r=RETRIEVER&m=METRIC``).

The gate's report is read by duck typing (rows with ``retriever``, ``metric``, ``verdict``,
``baseline``, ``current``, ``delta``, ``p_value``, ``failing``): the report layer sits below the
gate and does not import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np

from harness import clock
from harness.io import atomic
from harness.results.page.embed import text
from harness.results.page.render import CHECK_END, CHECK_START, PAGE_FILE, write_report_page

if TYPE_CHECKING:
    from harness.results import Results

#: queries linked per regression
QUERIES = 10
SECTION_ID = "vs-baseline-folder"


def losses(
    baseline: Results, current: Results, retriever: str, metric: str, n: int = QUERIES
) -> list[tuple[str, float]]:
    """``(query id, current - baseline)`` for the ``n`` queries of ``retriever`` that lost most on
    ``metric``, over the queries both folders scored (largest loss first; only losses)."""
    if retriever not in baseline.per_query or retriever not in current.per_query:
        return []
    if metric not in baseline.per_query[retriever] or metric not in current.per_query[retriever]:
        return []
    b = dict(zip(baseline.query_ids, baseline.scores(retriever)[metric]))
    c = current.scores(retriever)[metric]
    out = [(q, float(c[i] - b[q])) for i, q in enumerate(current.query_ids) if q in b and np.isfinite(c[i] - b[q])]
    out = [x for x in out if x[1] < 0]
    out.sort(key=lambda x: (x[1], x[0]))
    return out[:n]


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _rule_cells(r: Any) -> str:
    """What the verdict was held to: the tolerance, or under non-inferiority the margin and the
    one-sided lower bound of the mean difference that must lie above ``-margin``."""
    limit = r.limit() if hasattr(r, "limit") else f"{getattr(r, 'tolerance', 0.0):g}"
    bound = _num(getattr(r, "bound", None), True) if getattr(r, "rule", "") == "non_inferiority" else ""
    return f"<td>{text(limit)}</td><td>{bound}</td>"


def section(report: Any, baseline: Results, current: Results, *, baseline_label: str = "") -> str:
    """The section's HTML (see module doc)."""
    from harness.results.table import fmt_p

    rows = sorted(report.rows, key=lambda r: (not r.failing, r.verdict != "regression"))
    out = [
        f'<section id="{SECTION_ID}"><h2>Against the baseline folder</h2>',
        f"<p><b>{text(report.headline())}</b></p>" if hasattr(report, "headline") else "",
        f"<p class=sub>baseline folder: <code>{text(baseline_label or report.baseline)}</code> · checked "
        f"{text(clock.stamp())}</p>",
        '<div class="scroll"><table class="num"><thead><tr><th>verdict</th><th>retriever</th><th>metric</th>'
        "<th>baseline</th><th>current</th><th>Δ</th><th>p</th><th>tolerance / margin</th><th>bound</th>"
        "<th>queries that lost most</th></tr></thead><tbody>",
    ]
    for k, r in enumerate(rows):
        links = []
        if r.verdict == "regression":
            for q, d in losses(baseline, current, r.retriever, r.metric):
                href = f"#q={quote(q, safe='')}&r={quote(r.retriever, safe='')}&m={quote(r.metric, safe='')}"
                links.append(f'<a href="{text(href)}" data-qid="{text(q)}">{text(q)}</a> {_num(d, True)}')
        verdict = r.verdict.replace("_", " ")
        verdict = f"<b class=down>{text(verdict.upper())}</b>" if r.failing else text(verdict)
        rid = f' id="{SECTION_ID}-{k}"' if r.verdict == "regression" else ""
        out.append(
            f"<tr{rid}><td class=l>{verdict}</td><th scope=row>{text(r.retriever)}</th>"
            f"<td class=l>{text(r.metric)}</td>"
            f"<td>{_num(r.baseline)}</td><td>{_num(r.current)}</td><td>{_num(r.delta, True)}</td>"
            f"<td>{text(fmt_p(r.p_value))}</td>{_rule_cells(r)}<td class=l>{', '.join(links)}</td></tr>"
        )
    out.append("</tbody></table></div>")
    problems = [*getattr(report, "problems", [])]
    out += [f'<p class="note">FAILURE: {text(p)}</p>' for p in problems]
    out.append("</section>")
    return "\n".join(x for x in out if x)


def write_section(current: Results, html: str) -> Path | None:
    """Put ``html`` into the page of ``current``'s folder, replacing an earlier check's section; a
    folder without a page gets one. None (and nothing written) when the folder holds a
    ``report.html`` the harness did not write, or ``current`` is not a results folder."""
    folder = current.folder
    if folder is None or not current.files:  # a saved baseline file, not a results folder
        return None
    page = folder / PAGE_FILE
    if page.is_file():
        old = page.read_text(encoding="utf-8", errors="replace")
        a, b = old.find(CHECK_START), old.find(CHECK_END)
        if not 0 <= a < b:
            return None  # not a page this harness wrote: left as it is
        return atomic.write_text(page, old[: a + len(CHECK_START)] + html + old[b:])
    from harness.results.drilldown import attach_folder

    images = [folder / f for f in ("metric_at_k.png", "quality_latency.png") if (folder / f).is_file()]
    write_report_page(attach_folder(current), folder, images, check_section=html)
    return page
