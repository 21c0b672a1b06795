"""``harness inspect`` as text (a terminal), markdown (a pull request) and JSON (a script).

The verdict comes first; then each family of findings with its count and the first ids (the JSON
lists every id). Text and markdown show at most :data:`SHOWN` items per finding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.inspect.findings import Inspection

SHOWN = 10


def _ids(items: Sequence[Any], fmt: str) -> str:
    def one(x: Any) -> str:
        text = " = ".join(x) if isinstance(x, list) else str(x)
        return f"`{text}`" if fmt == "markdown" else text

    shown = ", ".join(one(x) for x in items[:SHOWN])
    more = len(items) - SHOWN
    return shown + (f", ... and {more} more (--format json lists all)" if more > 0 else "")


def _differ(found: Inspection, fmt: str) -> list[str]:
    lines = []
    for case in found.judged_differently[:SHOWN]:
        members = ", ".join(f"{d} ({case.grades.get(d, 'unjudged')})" for d in case.documents)
        lines.append(f"query {case.query} ({case.kind}): {members}")
    more = len(found.judged_differently) - SHOWN
    if more > 0:
        lines.append(f"... and {more} more (--format json lists all)")
    return [f"  - {x}" if fmt == "markdown" else f"    {x}" for x in lines]


def _section(found: Inspection, fmt: str) -> list[str]:
    ds = found.dataset
    head = f"{ds['name']} ({ds['split']}): {ds['documents']} documents, {ds['queries']} queries"
    head += f", {ds['judgments']} judgments"
    out = [
        f"## {head}" if fmt == "markdown" else head,
        "",
        f"**{found.verdict}**" if fmt == "markdown" else found.verdict,
    ]
    rows: list[tuple[str, str]] = []
    grades = ", ".join(f"{g}: {n}" for g, n in found.grades.items()) or "none"
    rpq = found.relevant_per_query
    rows.append(("grades (grade: judgments)", grades))
    rows.append(("relevant per query", f"min {rpq['min']:g}, median {rpq['median']:g}, max {rpq['max']:g}"))
    if found.empty_corpus:
        rows.append(("empty corpus", "no document: every retriever scores 0"))
    for key, label in (
        ("judged_queries_not_in_queries", "judged queries missing from the queries file"),
        ("unjudged_queries", "unjudged queries"),
        ("only_nonrelevant_queries", "queries judged only non-relevant"),
        ("missing_judged_documents", "judged ids missing from the corpus"),
        ("duplicate_queries", "duplicate queries (groups)"),
        ("duplicate_documents", "duplicate documents (groups)"),
        ("near_duplicate_documents", "near-duplicate documents (groups)"),
        ("leaking_queries", "queries leaking verbatim from a relevant document"),
        ("near_leaking_queries", "queries nearly copied from a relevant sentence"),
    ):
        items = getattr(found, key)
        if key in ("leaking_queries", "near_leaking_queries"):
            items = [f"{q} (in {', '.join(found.leaks.get(q, []))})" for q in items]
        rows.append((f"{label}: {len(items)}", _ids(items, fmt) if items else ""))
    rows.append((f"duplicate groups judged differently for a query: {len(found.judged_differently)}", ""))
    out.append("")
    for label, value in rows:
        if fmt == "markdown":
            out.append(f"- {label}" + (f": {value}" if value and ":" not in label else f" {value}" if value else ""))
        else:
            out.append(f"  {label}" + (f"  {value}" if value else ""))
    out += _differ(found, fmt)
    if found.difficulty is not None:
        out += ["", *_difficulty(found, fmt)]
    return out


def _difficulty(found: Inspection, fmt: str) -> list[str]:
    """Per retriever and metric: ceiling and floor shares; per metric: what no retriever separates."""
    assert found.difficulty is not None
    metrics = list(found.headroom or {})
    header = ["retriever", *[f"{m} ceiling / floor" for m in metrics], "judged@10"]
    rows = []
    for r, per in found.difficulty.items():
        judged = (found.judged_at_10 or {}).get(r)
        cells = [f"{per[m]['ceiling']:.3f} / {per[m]['floor']:.3f}" if m in per else "-" for m in metrics]
        rows.append([r, *cells, "-" if judged is None else f"{judged:.3f}"])
    all_rows = []
    for m in metrics:
        n_q = found.dataset["queries"] or 1
        ceil, floor, tie = (len((getattr(found, k) or {}).get(m, [])) for k in ("all_ceiling", "all_floor", "all_tie"))
        head = (found.headroom or {}).get(m)
        all_rows.append(
            [
                m,
                f"{ceil} ({ceil / n_q:.1%})",
                f"{floor} ({floor / n_q:.1%})",
                f"{tie} ({tie / n_q:.1%})",
                "-" if head is None else f"{head:.4f}",
            ]
        )
    all_header = ["metric", "all at ceiling", "all at floor", "all tie", "headroom"]
    if fmt == "markdown":

        def table(h: list[str], body: list[list[str]]) -> list[str]:
            return ["| " + " | ".join(h) + " |", "|" + "---|" * len(h), *("| " + " | ".join(b) + " |" for b in body)]

        return ["### Difficulty", "", *table(header, rows), "", *table(all_header, all_rows)]

    def plain(h: list[str], body: list[list[str]]) -> list[str]:
        widths = [max(len(x[i]) for x in [h, *body]) for i in range(len(h))]
        return ["  " + "  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [h, *body]]

    return ["Difficulty (shares of queries)", *plain(header, rows), "", *plain(all_header, all_rows)]


def render(inspections: dict[str, Inspection], fmt: str, plots: Sequence[str] = ()) -> str:
    """Every inspection in ``fmt`` (text, markdown or json). JSON: one dataset's findings as the
    top-level object; several (a suite, chunkings): ``{"verdict": ..., "datasets": {label: ...}}``."""
    if fmt == "json":
        if len(inspections) == 1:
            payload: dict[str, Any] = next(iter(inspections.values())).to_json()
        else:
            payload = {
                "verdict": overall(inspections),
                "datasets": {k: v.to_json() for k, v in inspections.items()},
            }
        return json.dumps(payload, indent=1, ensure_ascii=False) + "\n"
    lines: list[str] = []
    if fmt == "markdown":
        lines += ["# Is the golden set fit to decide?", ""]
    if len(inspections) > 1:
        lines += [overall(inspections), ""]
    for found in inspections.values():
        lines += [*_section(found, fmt), ""]
    if plots:
        lines += ["Plots:" if fmt == "text" else "### Plots", ""]
        lines += [f"![{p}]({p})" if fmt == "markdown" else f"  {p}" for p in plots]
        lines.append("")
    return "\n".join(lines)


def overall(inspections: dict[str, Inspection]) -> str:
    """One line over several datasets: which have findings that change comparisons."""
    bad = [k for k, v in inspections.items() if v.changes_comparisons]
    if not bad:
        return f"No finding that changes comparisons in {len(inspections)} datasets."
    return f"Findings that change comparisons in {len(bad)} of {len(inspections)} datasets: {', '.join(bad)}."
