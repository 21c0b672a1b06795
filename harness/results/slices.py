"""The comparison table per slice of the queries (by tag): where does a retriever win or fail?

Queries carry ``tags`` (BEIR ``queries.jsonl``: ``"metadata": {"tags": [...]}``; a golden-set file's
``tags`` column lands in the same place). A slice is every query with one tag; a query may be in
several slices, and queries with no tag form the ``(untagged)`` slice. For each slice, with the
results' own per-query values:

- the number of queries, each retriever's mean with its bootstrap CI;
- paired randomization tests of every retriever against the baseline, Holm-corrected over the
  (retriever x metric) comparisons *of that slice*: each slice is its own family, the question
  being "within keyword queries, is dense worse than BM25?";
- a slice with fewer than ``min_queries`` queries is not tested, and says so: a p-value over a
  handful of queries would be noise dressed as evidence.

The ``overall`` slice is every query, computed by the same function the unsliced table uses
(:func:`harness.stats.compare` with the results' seed and statistics settings, and
:func:`harness.metrics.evaluate.mean`), so its numbers equal the unsliced table's exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from harness import defaults
from harness.errors import InputError
from harness.io.tags import parse_tags
from harness.metrics.evaluate import mean
from harness.printable import printable
from harness.stats import compare

if TYPE_CHECKING:
    from rich.console import Console

    from harness.model import Query
    from harness.results import Results

OVERALL = "overall"
UNTAGGED = "(untagged)"
#: fewer queries than this: no significance test in the slice
MIN_QUERIES = 10
BETTER, WORSE = "▲", "▼"


@dataclass
class Slice:
    """One slice's numbers: ``means[retriever][metric]``, ``intervals`` (as ``Results.intervals``)
    and ``significance`` (as ``Results.significance``; empty when the slice is too small)."""

    name: str
    query_ids: list[str]
    means: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, list[float]]]
    significance: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    tested: bool = True

    @property
    def n(self) -> int:
        return len(self.query_ids)

    def marker(self, retriever: str, metric: str) -> str:
        t = self.significance.get(retriever, {}).get(metric)
        if not t or not t.get("significant"):
            return ""
        return BETTER if t["delta"] > 0 else WORSE if t["delta"] < 0 else ""


@dataclass
class SliceReport:
    baseline: str | None
    metrics: list[str]
    retrievers: list[str]
    slices: list[Slice]
    min_queries: int
    stats: dict[str, Any]


def query_tags(queries: Iterable[Query]) -> dict[str, list[str]]:
    """``{query_id: tags}`` from each query's ``metadata["tags"]`` (a list of strings, or one
    string; a comma-separated string is split)."""
    out: dict[str, list[str]] = {}
    for q in queries:
        try:
            out[q.id] = parse_tags(q.metadata.get("tags"))
        except ValueError as e:
            raise InputError(f"query {q.id!r}: {e}", field="metadata.tags") from None
    return out


def tags_of_results(results: Results) -> dict[str, list[str]]:
    """The tags of a results folder's queries, read from the dataset its manifest names."""
    from harness.datasets import load_dataset

    if results.query_tags:  # recorded by the run (schema 2)
        return {q: list(results.query_tags.get(q, [])) for q in results.query_ids}
    from harness.results.manifest import Manifest

    ds = Manifest.of(results).dataset.data
    where = ds.get("source") or ds.get("name")
    if not where:
        raise InputError("the results do not name their dataset, so their queries' tags are unknown")
    return query_tags(load_dataset(where, ds.get("split") or defaults.SPLIT).queries)


def _stats_settings(results: Results) -> tuple[dict[str, Any], int]:
    """The statistics settings and seed the results' own table was computed with."""
    from harness.results.manifest import Manifest
    from harness.results.table import _stats_config

    stats = {k: _stats_config(results)[k] for k in ("bootstrap", "permutations", "alpha", "correction")}
    return stats, Manifest.of(results).seed


def slice_tables(
    results: Results,
    tags: Mapping[str, Sequence[str]],
    *,
    min_queries: int = MIN_QUERIES,
    baseline: str | None = None,
    untagged: bool = True,
) -> SliceReport:
    """Every slice's table (see module doc); the first slice is ``overall``."""
    retrievers = [r for r in results.summary if r in results.per_query]
    if not retrievers:
        raise InputError("the results hold no scored retriever to slice")
    metrics = results.metrics
    baseline = baseline if baseline is not None else results.baseline
    if baseline is not None and baseline not in retrievers:
        baseline = None
    stats, seed = _stats_settings(results)
    all_ids = list(results.query_ids)
    members: dict[str, list[str]] = {}
    loose: list[str] = []
    for qid in all_ids:
        qtags = list(dict.fromkeys(tags.get(qid) or []))
        for t in qtags:
            members.setdefault(t, []).append(qid)
        if not qtags:
            loose.append(qid)
    groups = [(OVERALL, all_ids), *sorted(members.items())]
    if untagged and loose and members:
        groups.append((UNTAGGED, loose))
    slices = [
        _slice(name, ids, results, retrievers, metrics, baseline, stats, seed, min_queries if name != OVERALL else 0)
        for name, ids in groups
    ]
    return SliceReport(baseline, metrics, retrievers, slices, min_queries, stats)


def _slice(
    name: str,
    ids: list[str],
    results: Results,
    retrievers: Sequence[str],
    metrics: Sequence[str],
    baseline: str | None,
    stats: Mapping[str, Any],
    seed: int,
    min_queries: int,
) -> Slice:
    pos = {q: i for i, q in enumerate(results.query_ids)}
    rows = np.array([pos[q] for q in ids], dtype=np.int64)
    values = {r: {m: results.scores(r)[m][rows] for m in metrics} for r in retrievers}
    tested = baseline is not None and len(ids) >= max(min_queries, 1)
    significance, intervals = compare(values, baseline if tested else None, seed=seed, query_ids=ids, **stats)
    means = {r: {m: mean(v) for m, v in ms.items()} for r, ms in values.items()}
    return Slice(name, list(ids), means, intervals, significance, tested=tested or baseline is None)


# ---------------------------------------------------------------------- rendering
def _f(v: float) -> str:
    return f"{v:.4f}"


def _ci(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def legend(report: SliceReport) -> list[str]:
    boot = report.stats.get("bootstrap", defaults.BOOTSTRAP)
    lines = [
        f"Mean over the slice's queries; [low, high]: 95% bootstrap CI ({boot:,} "
        "resamples). A query with several tags is in several slices.",
        f"`{OVERALL}` is every query: the numbers of the unsliced table.",
    ]
    if report.baseline is not None and any(r != report.baseline for r in report.retrievers):  # else nothing to mark
        alpha = report.stats.get("alpha", defaults.ALPHA)
        lines.append(
            f"{BETTER} / {WORSE}: significantly better / worse than {report.baseline!r} within the slice (paired "
            f"randomization test, Holm-corrected over that slice's comparisons"
            f"{', per metric' if report.stats.get('correction') == 'metric' else ''}, p < {alpha:g})."
        )
        small = [s for s in report.slices if not s.tested]
        if small:
            names = ", ".join(f"{s.name} ({s.n})" for s in small)
            lines.append(f"Too small to test (< {report.min_queries} queries), no p-values: {names}.")
    return lines


def to_markdown(report: SliceReport) -> str:
    """Per metric, slices x retrievers (mean, marker, CI); then each tested slice's tests."""
    lines: list[str] = []
    for m in report.metrics:
        head = ["slice", "n", *report.retrievers]
        lines += [
            f"### {m} by tag",
            "",
            "| " + " | ".join(head) + " |",
            "|---|---:|" + "---:|" * len(report.retrievers),
        ]
        for s in report.slices:
            cells = [s.name, str(s.n)]
            for r in report.retrievers:
                cells.append(f"{_f(s.means[r][m])}{s.marker(r, m)} {_ci(s.intervals.get(r, {}).get(m))}".strip())
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    lines += [f"{x}  " for x in legend(report)]
    detail = [
        [
            s.name,
            r,
            m,
            f"{t['delta']:+.4f}",
            _p(t["p_value"]),
            _p(t["p_holm"]) + (f" {s.marker(r, m)}" if s.marker(r, m) else ""),
            f"{t['wins']}/{t['ties']}/{t['losses']}",
        ]
        for s in report.slices
        for r, ms in s.significance.items()
        for m, t in ms.items()
    ]
    if detail:
        head = ["slice", "retriever", "metric", "Δ vs baseline", "p (rand.)", "p (Holm, in slice)", "W/T/L"]
        lines += ["", f"#### Against the baseline ({report.baseline}), per slice", ""]
        lines += ["| " + " | ".join(head) + " |", "|---|---|---|" + "---:|" * (len(head) - 3)]
        lines += ["| " + " | ".join(row) + " |" for row in detail]
    return "\n".join(lines) + "\n"


def print_slices(report: SliceReport, console: Console) -> None:
    """Per metric, a table of slices x retrievers; each mean has its CI below it when the table
    fits the console (80 columns holds about four retrievers with CIs)."""
    from rich.table import Table
    from rich.text import Text

    name_w = max(len(s.name) for s in report.slices) + 3
    with_ci = name_w + 6 + 17 * len(report.retrievers) <= console.width
    for m in report.metrics:
        t = Table(title=Text(printable(f"{m} by tag")), title_style="bold", title_justify="left")
        t.add_column("slice")
        t.add_column("n", justify="right")
        for r in report.retrievers:
            label = f"{r} (baseline)" if r == report.baseline else r
            t.add_column(printable(label), justify="right", no_wrap=False)
        for i, s in enumerate(report.slices):
            cells: list[Any] = [Text(printable(s.name), style="bold" if i == 0 else ""), str(s.n)]
            for r in report.retrievers:
                text = Text(_f(s.means[r][m]))
                mark = s.marker(r, m)
                if mark:
                    text.append(mark, style="green" if mark == BETTER else "red")
                elif not s.tested and r != report.baseline:
                    text.append(" ·", style="dim")
                if with_ci:
                    text.append("\n" + _ci(s.intervals.get(r, {}).get(m)), style="dim")
                cells.append(text)
            t.add_row(*cells, end_section=i == 0)
        console.print(t)
    for line in legend(report):
        console.print(Text(line, style="dim"))
    small = [s for s in report.slices if not s.tested]
    if small and report.baseline is not None:
        console.print(Text("·: slice too small to test", style="dim"))


def print_by_tag(results: Results, console: Console, *, min_queries: int = MIN_QUERIES) -> SliceReport | None:
    """``harness report DIR --by tag`` in one call: the slices of ``results`` by their queries' tags
    (read from the dataset the manifest names). Says so, and returns None, when no query has a tag."""
    tags = tags_of_results(results)
    if not any(tags.values()):
        console.print("No query of this dataset has tags, so there are no slices (see docs/slices.md).")
        return None
    report = slice_tables(results, tags, min_queries=min_queries)
    print_slices(report, console)
    return report
