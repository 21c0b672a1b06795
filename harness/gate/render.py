"""A :class:`~harness.gate.verdict.CheckReport` as text (CI logs) and markdown (a CI job summary).

Failures come first in both, so the line that needs a look is the first a reader sees. The markdown
ends with :data:`MARKER`, an HTML comment GitHub does not show: it is how ``harness check`` knows a
file it is about to replace is a summary it wrote, not a user's file (:mod:`harness.gate.outputs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.gate.blind import markdown_block, mde_cell, text_block
from harness.gate.junit import junit_xml
from harness.gate.verdict import CheckReport, CheckRow, fmt_p

#: last line of every markdown summary harness check writes
MARKER = "<!-- written by harness check: safe to replace -->"


@dataclass
class Rendered:
    """Every output of one check, rendered once: ``stdout`` (the table or the JSON document, as the
    format asks), the markdown ``summary``, the ``junit`` XML; for one report also its ``text`` table,
    its ``json`` payload and its ``verdict`` word (a suite's outputs are built from them)."""

    stdout: str
    summary: str
    junit: str
    text: str = ""
    json: dict[str, Any] = field(default_factory=dict)
    verdict: str = ""


@dataclass
class View:
    """What every rendering prints of a report, asked of it once: the sentences, the rows in display
    order with their p-value and tolerance cells, and (in the report's order) the JUnit messages."""

    headline: str
    verdict: str
    dataset_line: str
    rule: str
    row_notes: list[tuple[str, bool]]
    rows: list[CheckRow]
    p_cells: list[str]
    limits: list[str]
    counts: dict[str, int]
    messages: list[str]


def view_of(report: CheckReport) -> View:
    rows = report.sorted_rows()
    return View(
        headline=report.headline(),
        verdict=report.verdict_word(),
        dataset_line=report.dataset_line(),
        rule=report.rule(),
        row_notes=report.row_notes(),
        rows=rows,
        p_cells=[fmt_p(r.p_value) for r in rows],
        limits=[r.limit() for r in rows],
        counts=report.counts(),
        messages=[r.message(report.alpha) for r in report.rows],
    )


def render(report: CheckReport, fmt: str = "text", page: str | None = None) -> Rendered:
    """All of ``report``'s renderings in one call, from one :class:`View` of it; ``page`` as
    :func:`to_markdown` takes it."""
    v = view_of(report)
    text, payload = _text(report, v), _json(report, v)
    stdout = json.dumps(payload, indent=2, allow_nan=False) + "\n" if fmt == "json" else text
    summary = _markdown(report, v, page)
    return Rendered(
        stdout=stdout,
        summary=summary,
        text=text,
        json=payload,
        verdict=v.verdict,
        junit=junit_xml(report, v.counts, v.messages),
    )


def _f(x: float | None, *, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _provenance(info: Mapping[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in info.items() if v]
    return f" ({', '.join(parts)})" if parts else ""


def _ni(report: CheckReport) -> bool:
    return any(r.rule == "non_inferiority" for r in report.rows)


def _power_cells(report: CheckReport, r) -> list[str]:
    """``mde`` (the drop detectable at the report's power) and, under non-inferiority, ``bound``."""
    # no mde computed (a missing or new row): the table's own dash, as every other empty figure of the row
    cells = [mde_cell(r.metric, r.mde) if r.mde is not None else _f(None)]
    if _ni(report):
        cells.append(_f(r.bound, signed=True) if r.rule == "non_inferiority" else "")
    return cells


def _power_header(report: CheckReport) -> list[str]:
    return [f"mde@{report.power_target:.0%}"] + (["bound"] if _ni(report) else [])


def power_lines(report: CheckReport) -> list[str]:
    """The blind lines, then the notes on where the variance came from (the JSON's ``blind`` and a
    ``--require-power`` error hold the lines; text and markdown print :mod:`harness.gate.blind`'s table)."""
    return [*report.blind, *report.power_notes]


def to_text(report: CheckReport) -> str:
    """A plain aligned table (CI logs are not terminals)."""
    return _text(report, view_of(report))


def _text(report: CheckReport, v: View) -> str:
    header = ["verdict", "retriever", "metric", "baseline", "current", "delta", "p-value"]
    header += ["tol/margin" if _ni(report) else "tol", "queries"]
    header += _power_header(report)
    body = [
        [
            r.verdict.replace("_", " ").upper() if r.failing else r.verdict.replace("_", " "),
            r.retriever,
            r.metric,
            _f(r.baseline),
            _f(r.current),
            _f(r.delta, signed=True),
            p_cell,
            limit,
            str(r.queries),
            *_power_cells(report, r),
        ]
        for r, p_cell, limit in zip(v.rows, v.p_cells, v.limits)
    ]
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    right = set(range(3, len(header)))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    # the verdict on the first line too: a log cut after a screen still says PASS, FAIL or blind
    lines = [f"harness check: {report.baseline} -> {report.current}: {v.headline}", v.dataset_line, ""]
    lines += [line(header), line(["-" * w for w in widths]), *map(line, body), ""]
    lines += [f"{'FAILURE' if bad else 'note'}: {text}" for text, bad in v.row_notes]
    lines += [f"FAILURE: {p}" for p in report.problems] + [f"note: {n}" for n in report.notes]
    lines += [*text_block(report), *report.power_notes]
    lines += [v.rule, v.headline]
    return "\n".join(lines) + "\n"


def to_markdown(report: CheckReport, page: str | None = None) -> str:
    """A CI job summary: headline, what was compared, the table with failures first; ``page``
    names the current folder's report.html that ``harness check`` wrote its section into."""
    return _markdown(report, view_of(report), page)


def _markdown(report: CheckReport, v: View, page: str | None = None) -> str:
    mark = "❌" if report.failed else "✅"
    out = [f"## {mark} harness check: {v.headline}", ""]
    out.append(f"- baseline: `{report.baseline}`{_provenance(report.baseline_info)}")
    out.append(f"- current: `{report.current}`{_provenance(report.current_info)}")
    out.append(f"- {v.dataset_line}")
    out.append(f"- {v.rule}")
    if page:
        out.append(f"- page: `{page}` (section \"Against the baseline folder\": the queries behind each regression)")
    out += [f"- **FAILURE**: {_md(p)}" for p in report.problems]
    out += [f"- {'**FAILURE**' if bad else 'note'}: {_md(text)}" for text, bad in v.row_notes]
    out += [f"- note: {_md(n)}" for n in report.notes]
    out += [f"- {_md(n)}" for n in report.power_notes]
    extra = _power_header(report)
    out += [
        "",
        "| verdict | retriever | metric | baseline | current | delta | p-value | "
        + ("tolerance / margin" if _ni(report) else "tolerance")
        + " | queries | "
        + " | ".join(extra)
        + " |",
    ]
    out.append("|---|---|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(extra))
    for r, p_cell, limit in zip(v.rows, v.p_cells, v.limits):
        verdict = r.verdict.replace("_", " ")
        verdict = f"**{verdict.upper()}**" if r.failing else verdict
        cells = [verdict, _md(r.retriever), _md(r.metric), _f(r.baseline), _f(r.current)]
        cells += [_f(r.delta, signed=True), p_cell, limit, str(r.queries)]
        cells += _power_cells(report, r)
        out.append("| " + " | ".join(cells) + " |")
    blind = markdown_block(report, _md)
    out += ["", *blind, MARKER] if blind else ["", MARKER]
    return "\n".join(out) + "\n"


def error_markdown(message: str) -> str:
    """The summary of a check that could not run (bad input), so a CI page says what went wrong."""
    return f"## ❌ harness check: ERROR\n\n`error: {message}`\n\n{MARKER}\n"


def to_json(report: CheckReport, exit_code: int | None = None) -> dict[str, Any]:
    """``harness check --format json``: per retriever x metric ``delta``, ``p``, ``mde``, ``bound`` (under
    non-inferiority) and ``verdict`` with what they rest on, the blind lines, and the overall ``exit``."""
    return _json(report, view_of(report), exit_code)


def _json(report: CheckReport, v: View, exit_code: int | None = None) -> dict[str, Any]:
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for r in report.rows:
        entry: dict[str, Any] = {
            "verdict": r.verdict,
            "rule": r.rule,
            "baseline": r.baseline,
            "current": r.current,
            "delta": r.delta,
            "p": r.p_value,
            "tolerance": r.tolerance,
            "queries": r.queries,
            "mde": r.mde,
            "sd_diff": r.sd_diff,
            "sd_used": r.sd_used,
            "sd_source": r.sd_source,
        }
        if r.rule == "non_inferiority":
            entry.update(bound=r.bound, margin=r.margin)
        if r.queries_needed is not None:
            entry["queries_needed"] = r.queries_needed
        if r.note:
            entry["note"] = r.note
        results.setdefault(r.retriever, {})[r.metric] = entry
    return {
        "exit": report.exit_code if exit_code is None else exit_code,
        "headline": v.headline,
        "baseline": report.baseline,
        "current": report.current,
        "alpha": report.alpha,
        "test": report.test_description,
        "power": report.power_target,
        "ni_alpha": report.ni_alpha if report.non_inferiority else None,
        "non_inferiority": report.non_inferiority,
        "dataset": report.dataset.model_dump(),
        "results": results,
        "blind": report.blind,
        "notes": [*report.problems, *report.notes, *report.power_notes],
    }
