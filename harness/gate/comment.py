"""``harness check --comment FILE.md``: the pull request's one sticky comment.

A reviewer reads the verdict where the change is reviewed. The comment says it in one sentence,
then lists what failed (a table), folds the blind checks (``<details>``: a pass there vouches for
nothing, but it is not what a reviewer acts on first) and links the run's full summary.

- Its first line is :data:`MARKER`, an HTML comment GitHub does not show: ``harness ci comment``
  finds the comment it posted before by it and updates that one instead of adding another
  (``marocchino/sticky-pull-request-comment``'s convention).
- Its last lines are :data:`STATE` (``verdict=... regressions=...``: the action's outputs, read from
  the file without a second check) and the summary's own marker
  (:data:`harness.gate.render.MARKER`): the file is ``harness check``'s, so a later check may replace
  it and nothing else (:mod:`harness.gate.outputs`).
- It is never over :data:`LIMIT` bytes, GitHub's cap on a comment's body: a suite of many datasets
  is cut, datasets that failed first, with a line saying how many rows of how many datasets were
  left out.
- Names from data (a retriever, a metric, a dataset) are HTML-escaped inside ``<code>``: a name
  cannot open a tag, break the table (``|``) or mention anyone (``@team``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.gate.render import MARKER as SUMMARY_MARKER
from harness.gate.verdict import CheckReport, CheckRow, fmt_p
from harness.printable import printable

#: the first line of every comment: how ``harness ci comment`` finds its own
MARKER = "<!-- retrieval-harness -->"
#: GitHub refuses a comment body over 65,536 characters; counted in UTF-8 bytes, which is stricter
LIMIT = 65_536
#: the action's outputs, read back from the comment file (``verdict`` ok/regression/blind/error)
STATE = "<!-- harness check: verdict={verdict} regressions={regressions} -->"


@dataclass(frozen=True)
class Part:
    """One dataset's report inside a suite (``dataset`` None: the check of two results folders)."""

    dataset: str | None
    report: CheckReport


def verdict(parts: Sequence[Part], problems: Sequence[str] = ()) -> str:
    """``regression`` (the gate fails), ``blind`` (it passes but cannot see some tolerance) or ``ok``."""
    if problems or any(p.report.failed for p in parts):
        return "regression"
    if any(r.blind for p in parts for r in p.report.rows):
        return "blind"
    return "ok"


def failures(parts: Sequence[Part], problems: Sequence[str] = ()) -> int:
    """What fails the gate, counted: failing rows, changed datasets, missing datasets."""
    return len(problems) + sum(len(p.report.problems) + sum(r.failing for r in p.report.rows) for p in parts)


def run_link(env: Mapping[str, str]) -> str | None:
    """The run's page on GitHub (its job summaries are there), from the variables a runner sets."""
    server, repo, run = (env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if not (server and repo and run):
        return None
    attempt = env.get("GITHUB_RUN_ATTEMPT", "").strip()
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}" + (f"/attempts/{attempt}" if attempt else "")


def _inert(text: object) -> str:
    """Data on one line, every control character (and the line and paragraph separators) shown as its
    escape (:func:`harness.printable.printable`), HTML-escaped, ``|`` unable to end a table cell."""
    s = printable(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return html.escape(s).replace("|", "&#124;")


def _code(text: object) -> str:
    """A name from data, inert: in ``<code>`` (no tag, no table cell break, no mention)."""
    return f"<code>{_inert(text)}</code>"


def _plain(text: object) -> str:
    """A sentence that may quote data: inert, ``@`` unable to mention anyone."""
    return _inert(text).replace("@", "&#64;")


def _f(x: float | None, *, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _n(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _checked(report: CheckReport) -> int:
    return sum(1 for r in report.rows if r.verdict != "new")


def _on(report: CheckReport) -> str:
    d = report.dataset
    if not d.name:
        return ""
    return f" on {_code(d.name)} ({_plain(d.split or '?')}, {d.common_queries:,} common queries)"


def _blind_span(rows: Sequence[CheckRow]) -> str:
    mdes = sorted({round(r.mde, 3) for r in rows if r.mde is not None})
    if not mdes:
        return "no drop is detectable on so few common queries"
    under = f"{mdes[0]:.3f}" if len(mdes) == 1 else f"{mdes[0]:.3f} to {mdes[-1]:.3f}"
    return f"drops under {under} are invisible"


def _sentence(report: CheckReport) -> str:
    """The verdict of one report in one sentence."""
    c, n = report.counts(), _checked(report)
    blind = [r for r in report.rows if r.blind]
    if report.failed:
        parts = [_n(c["regression"], "regression")] if c["regression"] else []
        parts += [f"{c[v]:,} {v}" for v in ("inferior", "failed", "missing") if c[v]]
        parts += ["the dataset changed"] if report.problems else []
        return f"❌ **The gate failed**: {', '.join(parts)} in {_n(n, 'check')}{_on(report)}."
    gains = f" ({c['improved']:,} improved)" if c["improved"] else ""
    if blind:
        return (
            f"⚠️ **The gate passed, but it is blind on {len(blind):,} of {_n(n, 'check')}**{_on(report)}: "
            f"{_blind_span(blind)}, so a pass there vouches for nothing{gains}."
        )
    return f"✅ **The gate passed**: no regression in {_n(n, 'check')}{_on(report)}{gains}."


_FAIL_HEAD = [
    "| verdict | retriever | metric | baseline | current | delta | p-value | tolerance | note |",
    "|---|---|---|---:|---:|---:|---:|---:|---|",
]


def _fail_row(r: CheckRow) -> str:
    cells = [f"**{r.verdict.replace('_', ' ').upper()}**", _code(r.retriever), _code(r.metric), _f(r.baseline)]
    cells += [_f(r.current), _f(r.delta, signed=True), fmt_p(r.p_value), _plain(r.limit()), _plain(r.note)]
    return "| " + " | ".join(cells) + " |"


def _blind_head(power: float) -> list[str]:
    return [
        f"| retriever | metric | delta | p-value | tolerance | detectable drop ({power:.0%} power) | queries | "
        "queries needed |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]


def _blind_row(r: CheckRow) -> str:
    need = "—" if r.queries_needed is None else f"{r.queries_needed:,}"
    cells = [_code(r.retriever), _code(r.metric), _f(r.delta, signed=True), fmt_p(r.p_value), f"{r.tolerance:g}"]
    cells += [_f(r.mde), f"{r.queries:,}", need]
    return "| " + " | ".join(cells) + " |"


@dataclass(frozen=True)
class _Item:
    """One unit the cap may leave out: a failing row, a blind row, or a dataset with nothing to list."""

    part: int
    kind: str  # "problem", "fail", "blind" or "quiet"
    text: str
    failing: bool


def _items(parts: Sequence[Part]) -> list[_Item]:
    """Every unit in the order a reader needs them: datasets that failed first, then blind ones, then
    the rest (each a line); within a dataset its problems, its failing rows, its blind rows."""

    def rank(i: int) -> int:
        return 0 if parts[i].report.failed else 1 if any(r.blind for r in parts[i].report.rows) else 2

    out: list[_Item] = []
    for i in sorted(range(len(parts)), key=rank):
        report = parts[i].report
        rows = report.sorted_rows()
        before = len(out)
        out += [_Item(i, "problem", f"- **FAILURE**: {_plain(p)}", True) for p in report.problems]
        out += [_Item(i, "fail", _fail_row(r), True) for r in rows if r.failing]
        out += [_Item(i, "blind", _blind_row(r), False) for r in rows if r.blind and not r.failing]
        if len(out) == before:  # a dataset (or the one report) with nothing to list: its sentence
            out.append(_Item(i, "quiet", "", False))
    return out


def _render_part(part: Part, items: Sequence[_Item], suite: bool) -> list[str]:
    report = part.report
    out = [f"#### {_code(part.dataset)}", "", _sentence(report)] if suite else [_sentence(report)]
    problems = [it.text for it in items if it.kind == "problem"]
    fails = [it.text for it in items if it.kind == "fail"]
    blind = [it.text for it in items if it.kind == "blind"]
    if problems:
        out += ["", *problems]
    if fails:
        out += ["", *_FAIL_HEAD, *fails]
    if blind:
        total = sum(1 for r in report.rows if r.blind and not r.failing)
        rows = [r for r in report.rows if r.blind]
        summary = f"{_n(total, 'blind check')}: {_blind_span(rows)}"
        out += ["", f"<details><summary>{summary}</summary>", "", *_blind_head(report.power_target), *blind]
        out += ["", "</details>"]
    return out


def _compose(parts: Sequence[Part], problems: Sequence[str], items: Sequence[_Item], left: Sequence[_Item],
             link: str | None, state: str) -> str:  # fmt: skip
    suite = len(parts) != 1 or parts[0].dataset is not None
    out = [MARKER]
    if suite:
        bad = sum(1 for p in parts if p.report.failed) + len(problems)
        n = len(parts) + len(problems)
        if bad:
            out.append(f"❌ **The gate failed on {bad:,} of {_n(n, 'dataset')}** of the suite.")
        elif any(r.blind for p in parts for r in p.report.rows):
            blind = sum(r.blind for p in parts for r in p.report.rows)
            checks = sum(_checked(p.report) for p in parts)
            where = sum(1 for p in parts if any(r.blind for r in p.report.rows))
            out.append(
                f"⚠️ **The gate passed on all {_n(n, 'dataset')}, but it is blind on {blind:,} of "
                f"{_n(checks, 'check')}** (in {_n(where, 'dataset')}): a pass there vouches for nothing."
            )
        else:
            out.append(f"✅ **The gate passed on all {_n(n, 'dataset')}** of the suite: no regression.")
        out += ["", *(f"- **FAILURE**: {_plain(p)}" for p in problems)] if problems else []
    by_part: dict[int, list[_Item]] = {} if suite else {0: []}  # one report: its sentence even with no row
    for it in items:
        by_part.setdefault(it.part, []).append(it)
    for i, its in by_part.items():
        out += ["", *_render_part(parts[i], its, suite)]
    if left:
        datasets = len({it.part for it in left})
        failing = sum(it.failing for it in left)
        what = f"{_n(len(left), 'row')}" + (f" of {_n(datasets, 'dataset')}" if suite else "")
        out += ["", f"> **{what} left out** ({failing:,} of them failing) to keep this comment under GitHub's "
                f"{LIMIT:,}-byte limit: the run's summary has them all."]  # fmt: skip
    seen = f"[the run's summary]({link})" if link else "the job summary of this run (`harness check --summary`)"
    out += ["", f"Full report, every check with its power: {seen}.", "", state, SUMMARY_MARKER]
    return "\n".join(out) + "\n"


def to_comment(
    parts: Sequence[Part], problems: Sequence[str] = (), *, link: str | None = None, limit: int = LIMIT
) -> str:
    """The comment's Markdown: never over ``limit`` UTF-8 bytes (the most rows that fit, in the order
    of :func:`_items`, and a line saying how many were left out)."""
    state = STATE.format(verdict=verdict(parts, problems), regressions=failures(parts, problems))
    items = _items(parts)

    def size(k: int) -> tuple[int, str]:
        text = _compose(parts, problems, items[:k], items[k:], link, state)
        return len(text.encode("utf-8")), text

    n, text = size(len(items))
    if n <= limit:
        return text
    lo, hi = 0, len(items)  # the largest k that fits: size grows with k (the left-out line barely moves)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(mid)[0] <= limit:
            lo = mid
        else:
            hi = mid - 1
    n, text = size(lo)
    if n > limit:  # even one row does not fit (names of 60 kB): the verdict word and the link alone
        word = {"regression": "❌ **The gate failed**", "blind": "⚠️ **The gate passed, blind on some checks**"}
        head = word.get(verdict(parts, problems), "✅ **The gate passed**")
        seen = f"[the run's summary]({link})" if link and len(link) < limit // 4 else "the run's summary"
        text = f"{MARKER}\n{head}: every row was too long for a comment; see {seen}.\n\n{state}\n{SUMMARY_MARKER}\n"
    return text


def error_comment(message: str, *, link: str | None = None) -> str:
    """The comment of a check that could not run (bad input, exit 2): what went wrong, in one line."""
    seen = f" See [the run's summary]({link})." if link else ""
    state = STATE.format(verdict="error", regressions=0)
    msg = _plain(message)[: LIMIT // 2]
    return f"{MARKER}\n❌ **The gate could not run**: `error:` {msg}.{seen}\n\n{state}\n{SUMMARY_MARKER}\n"
