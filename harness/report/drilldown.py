"""Per-query drill-down of a results folder: where does a retriever lose against the baseline?

``harness report DIR --worst N`` lists, per retriever, the N queries with the largest loss on a
metric, with the query text and the rank of the first relevant document in every saved run (from
``runs/*.trec`` and ``qrels.tsv``, so the folder answers on its own). Under each list, per query,
the documents the retriever ranked first beside the relevant ones it missed, with their text cut
to :data:`SNIPPET` characters: whether the winner was a near-duplicate, an off-topic match on one
word, or a document the judges never saw is usually plain at a glance. Texts come from the dataset
the manifest names (``demo`` or the BEIR folder), when it can still be loaded; otherwise ids only.
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
from harness.io.trec import read_qrels, read_run
from harness.model import Qrels
from harness.run import Run

if TYPE_CHECKING:
    from harness.results import Results

log = logging.getLogger("harness")

#: characters of a document's text shown in the drill-down
SNIPPET = 120
#: documents the retriever ranked first, shown per worst query (``harness report --docs``)
TOP_DOCS = 3
#: relevant documents shown per worst query (the highest graded first)
RELEVANT_DOCS = 3


def attach_folder(results: Results) -> Results:
    """Attach the runs and qrels saved in the results folder (what plots and the drill-down need)."""
    from harness.results import safe_name

    folder = results.folder
    if folder is None or results.runs:
        return results
    runs: dict[str, Run] = {}
    for name in results.summary:
        path = folder / "runs" / f"{safe_name(name)}.trec"
        if path.is_file():
            runs[name] = read_run(path, name=name)
    qrels_path = folder / "qrels.tsv"
    qrels = read_qrels(qrels_path) if qrels_path.is_file() else None
    if runs and qrels is not None:
        results.attach(runs, qrels)
    return results


def dataset_texts(results: Results) -> tuple[dict[str, str], dict[str, str], str | None]:
    """Query id -> text and doc id -> text (title and body) from the dataset in the manifest, and a
    note when that is not possible or the dataset changed since the run."""
    from harness.datasets import DEMO, load_dataset

    ds = results.manifest.get("dataset") or {}
    source, name, split = ds.get("source"), ds.get("name"), ds.get("split") or "test"
    where = source if source and Path(source).is_dir() else DEMO if name == DEMO or source == DEMO else None
    if where is None:
        why = f"dataset folder {source} not found" if source else "results.json names no dataset folder"
        return {}, {}, f"query and document text unavailable ({why}); showing ids only"
    try:
        dataset = load_dataset(where, split, name=name)
    except (HarnessError, OSError) as e:
        return {}, {}, f"query and document text unavailable (loading {where} failed: {e}); showing ids only"
    note = None
    if ds.get("fingerprint") and dataset.fingerprint != ds["fingerprint"]:
        note = f"the dataset at {where} changed since this run (fingerprint differs): texts may not match"
    docs = {d.id: d.content for d in dataset.corpus}
    return {q.id: q.text for q in dataset.queries}, docs, note


def query_texts(results: Results) -> tuple[dict[str, str], str | None]:
    """Query id -> text from the dataset in the manifest, and a note when that is not possible."""
    queries, _, note = dataset_texts(results)
    return queries, note


def snippet(text: str | None, n: int = SNIPPET) -> str | None:
    """``text`` on one line, cut to ``n`` characters (``…`` marks the cut)."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"


def first_relevant_rank(run: Run, qrels: Qrels, qid: str) -> int | None:
    """1-based rank of the first document judged relevant (grade >= 1), None when none is ranked."""
    judged = qrels.get(qid) or {}
    if qid not in run:
        return None
    for rank, (doc, _) in enumerate(run.ranking(qid), start=1):
        if judged.get(doc, 0) >= 1:
            return rank
    return None


def rank_of(run: Run, qid: str, doc: str) -> int | None:
    """1-based rank of ``doc`` in ``run``'s ranking of ``qid``, None when not ranked."""
    for rank, (d, _) in enumerate(run.ranking(qid), start=1):
        if d == doc:
            return rank
    return None


@dataclass
class DocLine:
    """One document shown under a worst query: ranked first by the retriever, or judged relevant."""

    doc_id: str
    #: 1-based rank in each shown run (None: not in that run's top ``depth[run]``)
    ranks: dict[str, int | None]
    grade: int | None  # None: not judged for this query
    text: str | None  # None: text unavailable (no dataset, or the id is not in it)
    relevant: bool = False


@dataclass
class Loss:
    query_id: str
    value: float
    baseline_value: float | None
    text: str | None = None
    #: rank of the first relevant document per run (None: none in the run's top ``depth[run]``)
    first_relevant: dict[str, int | None] = field(default_factory=dict)
    #: documents each run returned for this query (0: the run has no ranking for it)
    depth: dict[str, int] = field(default_factory=dict)
    #: the retriever's first documents, then the relevant ones it ranked lower or missed
    docs: list[DocLine] = field(default_factory=list)

    @property
    def delta(self) -> float | None:
        return None if self.baseline_value is None else self.value - self.baseline_value


def worst_queries(results: Results, retriever: str, metric: str, n: int, baseline: str | None) -> list[Loss]:
    """The ``n`` queries where ``retriever`` loses most against ``baseline`` on ``metric`` (only
    losses; ties broken by query id); without a baseline, its ``n`` lowest-scoring queries."""
    mine = results.per_query.get(retriever) or {}
    base = results.per_query.get(baseline) if baseline else None
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
    docs: int = TOP_DOCS,
) -> tuple[dict[str, list[Loss]], str, str | None, list[str]]:
    """``({retriever: losses}, metric, baseline, notes)`` for ``harness report --worst``; each loss
    lists the retriever's first ``docs`` documents and up to :data:`RELEVANT_DOCS` relevant ones."""
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
    texts, doc_texts, note = dataset_texts(results)
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
                loss.depth = {r: len(run.ranking(loss.query_id)) for r, run in results.runs.items()}
                shown = [r for r in (name, baseline) if r is not None and r in results.runs]
                loss.docs = doc_lines(results.runs, shown, qrels, loss.query_id, doc_texts, docs)
        out[name] = losses
    return out, metric, baseline, notes


def doc_lines(
    runs: dict[str, Run], shown: list[str], qrels: Qrels, qid: str, texts: dict[str, str], top: int
) -> list[DocLine]:
    """The first ``top`` documents of ``shown[0]``, then the relevant documents (highest grade
    first, at most :data:`RELEVANT_DOCS`) not among them, each with its rank in every shown run."""
    if not shown or top <= 0:
        return []
    judged = qrels.get(qid) or {}
    first = [d for d, _ in runs[shown[0]].ranking(qid)[:top]]
    relevant = sorted((d for d, g in judged.items() if g >= 1 and d not in first), key=lambda d: (-judged[d], d))
    lines = []
    for doc in first + relevant[:RELEVANT_DOCS]:
        grade = judged.get(doc)
        lines.append(
            DocLine(
                doc_id=doc,
                ranks={r: rank_of(runs[r], qid, doc) for r in shown},
                grade=grade,
                text=snippet(texts.get(doc)) if texts else None,
                relevant=grade is not None and grade >= 1,
            )
        )
    return lines


def _rank_text(rank: int | None, depth: int, *, short: bool) -> str:
    if rank is not None:
        return str(rank)
    if depth == 0:
        return "–" if short else "no ranking"
    return f">{depth}" if short else f"not in the top {depth}"


def _docs_table(name: str, loss: Loss, has_texts: bool) -> Table:
    runs = list(loss.docs[0].ranks)
    title = f"{loss.query_id}: what {name} ranked first, and the relevant documents"
    table = Table(title=title, title_style="bold", title_justify="left")
    for r in runs:
        table.add_column(f"rank {r}", justify="right")
    table.add_column("doc", overflow="fold")
    table.add_column("grade", justify="right")
    table.add_column(f"text (first {SNIPPET} characters)" if has_texts else "text", overflow="fold")
    for i, line in enumerate(loss.docs):
        if i and line.relevant and not loss.docs[i - 1].relevant and any(not x.relevant for x in loss.docs[:i]):
            table.add_section()
        ranks = [_rank_text(line.ranks[r], loss.depth.get(r, 0), short=False) for r in runs]
        grade = "unjudged" if line.grade is None else str(line.grade)
        text = line.text if line.text is not None else ("(not in the dataset)" if has_texts else "–")
        style = "green" if line.relevant else ""
        table.add_row(*ranks, Text(line.doc_id, style=style), Text(grade, style=style), text)
    return table


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
            cells += [_rank_text(loss.first_relevant[r], loss.depth.get(r, 0), short=True) for r in runs]
            table.add_row(*cells)
        console.print(table)
        has_texts = any(line.text is not None for loss in losses for line in loss.docs)
        for loss in losses:
            if loss.docs:
                console.print(_docs_table(name, loss, has_texts))
    if any(loss.first_relevant for losses in found.values() for loss in losses):
        console.print(
            Text(
                "1st rel.: rank of the first relevant document (grade >= 1) in each run; >N: not in the top N "
                "documents the run returned for that query; –: the run has no ranking for it.",
                style="dim",
            )
        )
    for note in notes:
        console.print(Text(f"note: {note}", style="yellow"))
