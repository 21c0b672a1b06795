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
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.errors import InputError
from harness.io.trec import read_qrels
from harness.model import Qrels
from harness.printable import printable
from harness.results.terminal import Column, render_tables, table_width
from harness.results.texts import SNIPPET, manifest_dataset, snippet
from harness.run import Run

if TYPE_CHECKING:
    from harness.results import Results

log = logging.getLogger("harness")

#: documents the retriever ranked first, shown per worst query (``harness report --docs``)
TOP_DOCS = 3
#: relevant documents shown per worst query (the highest graded first)
RELEVANT_DOCS = 3


def attach_folder(results: Results) -> Results:
    """Attach the runs and qrels saved in the results folder (what plots and the drill-down need)."""
    from harness.results.store import read_runs

    folder = results.folder
    if folder is None or results.runs:
        return results
    runs: dict[str, Run] = read_runs(results)
    qrels_path = folder / "qrels.tsv"
    qrels = read_qrels(qrels_path) if qrels_path.is_file() else None
    if runs and qrels is not None:
        results.attach(runs, qrels)
    return results


def dataset_texts(results: Results) -> tuple[dict[str, str], dict[str, str], str | None]:
    """Query id -> text and doc id -> text (title and body) from the dataset in the manifest, and a
    note when that is not possible or the dataset changed since the run."""
    dataset, note = manifest_dataset(results)
    if dataset is None:
        return {}, {}, note
    docs = {d.id: d.content for d in dataset.corpus}
    return {q.id: q.text for q in dataset.queries}, docs, note


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


#: narrowest a text column may get before the drill-down splits its table (characters)
MIN_TEXT = 30


def _fits(fixed: list[Column], width: int) -> bool:
    """Whether ``fixed`` columns plus a text column of :data:`MIN_TEXT` fit ``width``."""
    return table_width(fixed) + MIN_TEXT + 3 <= width


def _table(title: str, fixed: list[Column], text: Column | None) -> Table:
    """``fixed`` columns never cut (no wrap, at their full width), then ``text`` taking the rest."""
    t = Table(title=Text(printable(title)), title_style="bold", title_justify="left")
    for col in fixed:
        t.add_column(col.header, justify=col.justify, no_wrap=True, min_width=col.width)
    if text is not None:
        t.add_column(text.header, overflow="fold", max_width=SNIPPET)
    n = len(fixed[0].cells)
    for r in range(n):
        t.add_row(*(c.cells[r] for c in fixed), *([text.cells[r]] if text is not None else []))
    return t


def _docs_table(name: str, baseline: str | None, loss: Loss, has_texts: bool, width: int) -> Table:
    """The retriever's first documents, then the relevant ones, with ranks, grade and text."""
    runs = list(loss.docs[0].ranks)

    def columns(short: bool) -> list[Column]:
        headers = {name: "rank", baseline: "baseline rank" if short else f"rank in {baseline}"}
        ranks = [
            Column(
                headers.get(r, f"rank {r}"),
                [Text(_rank_text(line.ranks[r], loss.depth.get(r, 0), short=short)) for line in loss.docs],
            )
            for r in runs
        ]
        style = ["green" if line.relevant else "" for line in loss.docs]
        doc = Column("doc", [Text(line.doc_id, style=s) for line, s in zip(loss.docs, style)], justify="left")
        grade = Column(
            "grade",
            [Text("unjudged" if line.grade is None else str(line.grade), style=s) for line, s in zip(loss.docs, style)],
        )
        return [*ranks, doc, grade]

    fixed = columns(short=False)
    if not _fits(fixed, width):  # "not in the top 100" is wide: ">100" (the legend says what it means)
        fixed = columns(short=True)
    missing = "(not in the dataset)" if has_texts else "–"
    text = Column(
        f"text (first {SNIPPET} characters)" if has_texts else "text",
        [Text(line.text if line.text is not None else missing) for line in loss.docs],
        justify="left",
    )
    t = _table(f"{loss.query_id}: what {name} ranked first (rank), and the relevant documents", fixed, text)
    # a line between what the retriever ranked first and the relevant documents it missed
    first_relevant = next((i for i, line in enumerate(loss.docs) if line.relevant and i >= 1), None)
    if first_relevant is not None and not loss.docs[first_relevant - 1].relevant:
        t.rows[first_relevant - 1].end_section = True
    return t


def _loss_tables(name: str, baseline: str | None, metric: str, losses: list[Loss], width: int) -> list[Table]:
    """The worst queries: scores, query text and the first relevant rank in every run; split in two
    (scores and text, then the ranks, themselves split by columns) when one table would not fit."""
    vs = baseline is not None and name != baseline
    what = f"{name} vs {baseline}" if vs else f"{name} (lowest scores)"
    title = f"{what}: {len(losses)} worst queries on {metric}"
    query = Column("query", [Text(x.query_id) for x in losses], justify="left")
    scores = [Column(name if vs else "score", [Text(f"{x.value:.4f}") for x in losses])]
    if vs:
        scores.append(Column(str(baseline), [Text(f"{x.baseline_value:.4f}") for x in losses]))
        scores.append(Column("Δ", [Text(f"{x.delta:+.4f}") for x in losses]))
    # this retriever and its baseline first, then the other runs
    first = [r for r in (name, baseline) if r in losses[0].first_relevant]
    runs = first + [r for r in losses[0].first_relevant if r not in first]
    ranks = [
        Column(
            f"1st rel. {r}",
            [Text(_rank_text(x.first_relevant[r], x.depth.get(r, 0), short=True)) for x in losses],
        )
        for r in runs
    ]
    text = Column("text", [Text(x.text if x.text is not None else "–") for x in losses], justify="left")
    if _fits([query, *scores, *ranks], width):
        return [_table(title, [query, *scores, *ranks], text)]
    if not _fits([query, *scores], width):  # long retriever names as score headers: name them in the title
        scores = [Column(h, c.cells) for h, c in zip(("score", "baseline", "Δ"), scores)]
    out = [_table(title, [query, *scores], text)]
    if ranks:
        by_run = [Column(r, c.cells) for r, c in zip(runs, ranks)]
        out += render_tables(f"{what}: rank of the first relevant document", [query], [by_run], width)
    return out


def print_drilldown(
    found: dict[str, list[Loss]], metric: str, baseline: str | None, notes: list[str], console: Console
) -> None:
    """The worst queries per retriever and, per query, its documents (see module doc), laid out for
    ``console.width`` so that no id, score or rank is cut."""
    width = console.width
    for name, losses in found.items():
        if not losses:
            what = f"{name} vs {baseline}" if baseline and name != baseline else f"{name} (lowest scores)"
            console.print(Text(printable(f"{what}: no query where {name} loses on {metric}"), style="bold"))
            continue
        for t in _loss_tables(name, baseline, metric, losses, width):
            console.print(t)
        has_texts = any(line.text is not None for loss in losses for line in loss.docs)
        for loss in losses:
            if loss.docs:
                console.print(_docs_table(name, baseline if baseline != name else None, loss, has_texts, width))
    if any(loss.first_relevant for losses in found.values() for loss in losses):
        console.print(
            Text(
                "1st rel.: rank of the first relevant document (grade >= 1) in each run; >N: not in the top N "
                "documents the run returned for that query; –: the run has no ranking for it.",
                style="dim",
            )
        )
    for note in notes:
        console.print(Text(printable(f"note: {note}"), style="yellow"))
