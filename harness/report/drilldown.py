"""Per-query drill-down of a results folder: where does a retriever lose against the baseline?

``harness report DIR --worst N`` lists, per retriever, the N queries with the largest loss on a
metric, with the query text (from the dataset the manifest names, when it can still be loaded) and
the rank of the first relevant document in every saved run (from ``runs/*.trec`` and
``qrels.tsv``, so the folder answers on its own).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.errors import HarnessError, InputError
from harness.io.trec import read_qrels
from harness.model import Qrels
from harness.run import Run

if TYPE_CHECKING:
    from harness.results import Results

log = logging.getLogger("harness")


def attach_folder(results: Results) -> Results:
    """Attach the runs and qrels saved in the results folder (what plots and the drill-down need)."""
    from harness.engine.store import read_runs

    folder = results.folder
    if folder is None or results.runs:
        return results
    runs: dict[str, Run] = read_runs(results)
    qrels_path = folder / "qrels.tsv"
    qrels = read_qrels(qrels_path) if qrels_path.is_file() else None
    if runs and qrels is not None:
        results.attach(runs, qrels)
    return results


def query_texts(results: Results) -> tuple[dict[str, str], str | None]:
    """Query id -> text from the dataset in the manifest, and a note when that is not possible."""
    from harness.datasets import DEMO, load_dataset

    ds = results.manifest.get("dataset") or {}
    source, name, split = ds.get("source"), ds.get("name"), ds.get("split") or "test"
    where = source if source and Path(source).is_dir() else DEMO if name == DEMO else None
    if where is None:
        why = f"dataset folder {source} not found" if source else "results.json names no dataset folder"
        return {}, f"query text unavailable ({why}); showing query ids only"
    try:
        dataset = load_dataset(where, split, name=name)
    except (HarnessError, OSError) as e:
        return {}, f"query text unavailable (loading {where} failed: {e}); showing query ids only"
    note = None
    if ds.get("fingerprint") and dataset.fingerprint != ds["fingerprint"]:
        note = f"the dataset at {where} changed since this run (fingerprint differs): query text may not match"
    return {q.id: q.text for q in dataset.queries}, note


def first_relevant_rank(run: Run, qrels: Qrels, qid: str) -> int | None:
    """1-based rank of the first document judged relevant (grade >= 1), None when none is ranked."""
    judged = qrels.get(qid) or {}
    if qid not in run:
        return None
    for rank, (doc, _) in enumerate(run.ranking(qid), start=1):
        if judged.get(doc, 0) >= 1:
            return rank
    return None


@dataclass
class Loss:
    query_id: str
    value: float
    baseline_value: float | None
    text: str | None = None
    first_relevant: dict[str, int | None] = field(default_factory=dict)

    @property
    def delta(self) -> float | None:
        return None if self.baseline_value is None else self.value - self.baseline_value


def worst_queries(results: Results, retriever: str, metric: str, n: int, baseline: str | None) -> list[Loss]:
    """The ``n`` queries where ``retriever`` loses most against ``baseline`` on ``metric`` (only
    losses; ties broken by query id); without a baseline, its ``n`` lowest-scoring queries."""
    mine = results.query_scores(retriever) if retriever in results.per_query else {}
    base = results.query_scores(baseline) if baseline and baseline in results.per_query else None
    rows = []
    for qid, vals in mine.items():
        v = vals.get(metric)
        if v is None:
            continue
        b = base.get(qid, {}).get(metric) if base is not None else None
        rows.append(Loss(qid, float(v), None if b is None else float(b)))
    if base is not None:
        rows = [r for r in rows if r.delta is not None and r.delta < 0]
        rows.sort(key=lambda r: (r.delta, r.query_id))
    else:
        rows.sort(key=lambda r: (r.value, r.query_id))
    return rows[:n]


def drilldown(
    results: Results,
    *,
    n: int,
    metric: str | None = None,
    retriever: str | None = None,
    baseline: str | None = None,
) -> tuple[dict[str, list[Loss]], str, str | None, list[str]]:
    """``({retriever: losses}, metric, baseline, notes)`` for ``harness report --worst``."""
    from harness.metrics.names import parse_metric

    if not results.summary:
        raise InputError("these results hold no scored retriever")
    if metric is None:
        metric = results.metrics[0]
    else:
        metric = parse_metric(metric).name
        if metric not in results.metrics:
            raise InputError(
                f"metric {metric!r} is not in these results ({', '.join(results.metrics)})", field="metric"
            )
    baseline = baseline or results.baseline
    if baseline is not None and baseline not in results.summary:
        raise InputError(f"baseline {baseline!r} has no scores here ({', '.join(results.summary)})", field="baseline")
    if retriever is not None:
        if retriever not in results.summary:
            known = ", ".join(results.summary)
            raise InputError(f"retriever {retriever!r} has no scores here ({known})", field="retriever")
        names = [retriever]
    else:
        names = [r for r in results.summary if r != baseline]
    if not names:
        raise InputError("nothing to compare with the baseline: name a retriever with --retriever", field="retriever")
    notes: list[str] = []
    attach_folder(results)
    texts, note = query_texts(results)
    if note:
        notes.append(note)
    qrels = results._qrels
    if not results.runs or qrels is None:
        notes.append("no runs/ or qrels.tsv in the folder: first relevant ranks unavailable")
    out: dict[str, list[Loss]] = {}
    for name in names:
        losses = worst_queries(results, name, metric, n, baseline if name != baseline else None)
        for loss in losses:
            loss.text = texts.get(loss.query_id)
            if qrels is not None:
                loss.first_relevant = {
                    r: first_relevant_rank(run, qrels, loss.query_id) for r, run in results.runs.items()
                }
        out[name] = losses
    return out, metric, baseline, notes


def print_drilldown(
    found: dict[str, list[Loss]], metric: str, baseline: str | None, notes: list[str], console: Console
) -> None:
    for name, losses in found.items():
        what = f"{name} vs {baseline}" if baseline and name != baseline else f"{name} (lowest scores)"
        if not losses:
            console.print(Text(f"{what}: no query where {name} loses on {metric}", style="bold"))
            continue
        table = Table(title=f"{what}: {len(losses)} worst queries on {metric}", title_style="bold")
        table.add_column("query")
        table.add_column("text", overflow="fold", max_width=70)
        table.add_column(name, justify="right")
        if baseline and name != baseline:
            table.add_column(baseline, justify="right")
            table.add_column("Δ", justify="right")
        # this retriever and its baseline first, then the other runs
        first = [r for r in (name, baseline) if r in losses[0].first_relevant]
        runs = first + [r for r in losses[0].first_relevant if r not in first]
        for r in runs:
            table.add_column(f"1st rel. {r}", justify="right")
        for loss in losses:
            cells = [loss.query_id, loss.text if loss.text is not None else "–", f"{loss.value:.4f}"]
            if baseline and name != baseline:
                cells += [f"{loss.baseline_value:.4f}", f"{loss.delta:+.4f}"]
            cells += [str(loss.first_relevant[r]) if loss.first_relevant[r] is not None else "–" for r in runs]
            table.add_row(*cells)
        console.print(table)
    if any(loss.first_relevant for losses in found.values() for loss in losses):
        console.print(
            Text("1st rel.: rank of the first relevant document (grade >= 1) in each run; –: none ranked.", style="dim")
        )
    for note in notes:
        console.print(Text(f"note: {note}", style="yellow"))
