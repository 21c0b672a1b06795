"""``harness check --annotations``: GitHub workflow commands, one per thing a reviewer must see.

GitHub turns a line ``::error title=T::MESSAGE`` printed by a step into an annotation on the run
and on the pull request's checks tab, so a regression is read where the change is reviewed, not
found in a log. One ``::error`` per failing row (a regression, a non-inferiority not shown, a
failed or missing retriever) and per check-level problem (a changed dataset), one ``::warning`` per
blind check (the drop it can see is larger than its tolerance: a pass there vouches for nothing);
nothing at all when there is nothing to say, so a clean run adds no noise.

Every value is escaped as the runner's own toolkit escapes it (``@actions/core``, ``command.ts``):
in the message ``%``, ``\\r`` and ``\\n`` become ``%25``, ``%0D``, ``%0A``; in a property also ``:``
and ``,`` (``%3A``, ``%2C``), so a retriever named ``a::error::b`` or holding a newline cannot end the
command early or forge another. Other control characters from data are then shown as their escapes
(:func:`harness.printable.printable`): a log line obeys none of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.gate.verdict import CheckReport, CheckRow, fmt_p
from harness.printable import printable


def escape_data(text: object) -> str:
    """The message of a workflow command: ``%``, ``\\r``, ``\\n`` escaped (``escapeData``)."""
    s = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable(s)


def escape_property(text: object) -> str:
    """A property value (``title=...``): as :func:`escape_data`, and ``:`` and ``,`` (``escapeProperty``)."""
    s = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A")
    return printable(s.replace(",", "%2C"))


def command(kind: str, title: str, message: str) -> str:
    """One workflow command line, ``::kind title=...::message``, every value escaped."""
    return f"::{kind} title={escape_property(title)}::{escape_data(message)}"


def _where(dataset: str | None) -> str:
    return f"[{dataset}] " if dataset else ""


def _error(row: CheckRow, alpha: float, dataset: str | None) -> str:
    title = f"{_where(dataset)}{row.verdict.replace('_', ' ')}: {row.retriever} {row.metric}"
    return command("error", title, f"{_where(dataset)}{row.message(alpha)}")


def _warning(row: CheckRow, power: float, dataset: str | None) -> str:
    title = f"{_where(dataset)}blind check: {row.retriever} {row.metric}"
    drop = "not compared" if row.delta is None else f"delta {row.delta:+.4f}"
    seen = "no drop is detectable" if row.mde is None else f"detects only drops over {row.mde:.4f} at power {power:g}"
    need = f"; needs {row.queries_needed:,} queries" if row.queries_needed else ""
    msg = (
        f"{_where(dataset)}{row.retriever} {row.metric}: {drop}, p = {fmt_p(row.p_value)}; the check {seen} "
        f"with {row.queries:,} queries, above its tolerance {row.tolerance:g}{need}"
    )
    return command("warning", title, msg)


def lines(report: CheckReport, dataset: str | None = None) -> list[str]:
    """The workflow commands of one report (``dataset`` names it inside a suite): errors first."""
    out = [command("error", f"{_where(dataset)}dataset changed", f"{_where(dataset)}{p}") for p in report.problems]
    out += [_error(r, report.alpha, dataset) for r in report.sorted_rows() if r.failing]
    out += [_warning(r, report.power_target, dataset) for r in report.sorted_rows() if r.blind and not r.failing]
    return out


def annotations(parts: Iterable[tuple[str | None, CheckReport]], problems: Iterable[str] = ()) -> str:
    """Every workflow command of a check: ``parts`` are ``(dataset, report)`` (``None`` for a single
    folder), ``problems`` a suite's own (a dataset missing). ``""`` when there is nothing to say."""
    out = [command("error", "suite", p) for p in problems]
    for dataset, report in parts:
        out += lines(report, dataset)
    return "".join(line + "\n" for line in out)
