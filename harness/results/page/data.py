"""What the query explorer of ``report.html`` knows, as compact columns.

The page ships two kinds of records:

- the *head*: retrievers, metrics, every query's id, text and tags, and every per-query score
  exactly as ``results.json`` holds it (the explorer sorts and filters on these, so it needs all of
  them before it can show a row);
- *details*, one per range of queries: each retriever's top :data:`TOP` documents, the judgments
  of the documents shown, the relevant documents and their rank in every run, and the title and a
  snippet of every document named. A small folder ships one detail record; a large one ships one
  per :data:`CHUNK` queries, each in its own side file (:mod:`harness.results.page.render`).

Documents are numbered within a detail record (``d``: ids, titles, snippets), and rankings name
them by number, so a document shown by three retrievers for ten queries is written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.results.texts import manifest_dataset, snippet

if TYPE_CHECKING:
    from harness.model import GoldenDataset, Qrels
    from harness.results import Results
    from harness.run import Run

#: documents of each ranking shown side by side
TOP = 10
#: characters of a document's text shown under its title
SNIPPET = 200
#: characters of a title
TITLE = 160
#: queries per detail record (one side file each when the folder is too large to embed)
CHUNK = 2000


class Texts:
    """Query text by id, and a document's title and text by id (the corpus's own columns, looked up
    through its id index: no copy of a large corpus). Empty when the dataset cannot be loaded."""

    def __init__(self, dataset: GoldenDataset | None = None) -> None:
        self.queries: dict[str, str] = {q.id: q.text for q in dataset.queries} if dataset is not None else {}
        self._index: Mapping[str, int] = dataset.doc_index if dataset is not None else {}
        self._corpus = dataset.corpus if dataset is not None else None

    def title(self, doc: str) -> str | None:
        i = self._index.get(doc)
        return None if i is None or self._corpus is None else str(self._corpus.titles[i])

    def body(self, doc: str) -> str | None:
        i = self._index.get(doc)
        return None if i is None or self._corpus is None else str(self._corpus.texts[i])


@dataclass
class PageData:
    head: dict[str, Any]
    details: list[dict[str, Any]]
    notes: list[str]


def default_retriever(results: Results) -> str | None:
    """The explorer's retriever when the page opens: the first that is not the baseline."""
    names = [r for r in results.summary if r != results.baseline]
    return names[0] if names else (results.retrievers[0] if results.retrievers else None)


def build(results: Results, *, texts: Texts | None = None, chunk: int = CHUNK) -> PageData:
    """The explorer's records for ``results`` (its attached runs and qrels: the caller attaches a
    loaded folder's with :func:`harness.results.drilldown.attach_folder`; texts from the dataset its
    manifest names unless given)."""
    notes: list[str] = []
    if texts is None:
        dataset, note = manifest_dataset(results)
        texts = Texts(dataset)
        if note:
            notes.append(note)
    runs: dict[str, Run] = {r: run for r, run in results.runs.items() if r in results.summary}
    qrels: Qrels = results.qrels or {}
    if not runs or results.qrels is None:
        notes.append("no runs/ or qrels.tsv in the folder: rankings and judgments are not shown")
    qids = list(results.query_ids)
    tags_by_q = {q: list(t) for q, t in (results.query_tags or {}).items()}
    tag_names = sorted({t for ts in tags_by_q.values() for t in ts})
    tag_index = {t: i for i, t in enumerate(tag_names)}
    head = {
        "title": _title(results),
        "baseline": results.baseline if results.baseline in results.summary else None,
        "retrievers": list(results.summary),
        "metrics": list(results.metrics),
        "first": default_retriever(results),
        "tags": tag_names,
        "q": {
            "id": qids,
            "text": [texts.queries.get(q, "") for q in qids],
            "tags": [[tag_index[t] for t in tags_by_q.get(q, [])] for q in qids],
        },
        # exactly the values of results.json (JSON numbers round-trip float64), so a delta the page
        # computes is the float64 difference of the stored values
        "s": {
            r: {m: list(v) for m, v in cols.items()} for r, cols in results.per_query.items() if r in results.summary
        },
        "ranked": list(runs),
        "chunk": chunk,
        "parts": (len(qids) + chunk - 1) // chunk if qids else 0,
    }
    nuggets = _nuggets(results, notes)
    details = [_detail(qids[lo : lo + chunk], lo, runs, qrels, texts, nuggets) for lo in range(0, len(qids), chunk)]
    return PageData(head, details, notes)


def _nuggets(results: Results, notes: list[str]) -> Any:
    """The nugget judgments the folder's config names (``dataset: {nuggets, assignments}``), for each
    query's nugget coverage; None when it names none, or with a note when they cannot be read."""
    from harness.results.manifest import Manifest

    nuggets, assignments = Manifest.of(results).nugget_files
    if not nuggets:
        return None
    from harness.errors import InputError
    from harness.nuggets import NuggetJudgments

    try:
        return NuggetJudgments.load(nuggets, assignments)
    except InputError as e:
        notes.append(f"nuggets not shown: {e}")
        return None


def _title(results: Results) -> str:
    from harness.results.manifest import Manifest

    ds = Manifest.of(results).dataset.data
    name = ds.get("name") or "results"
    split = ds.get("split")
    return (
        f"{name} ({split}, {len(results.query_ids)} queries)" if split else f"{name} ({len(results.query_ids)} queries)"
    )


class _Docs:
    """Documents named in one detail record, numbered in order of first mention."""

    def __init__(self, texts: Texts) -> None:
        self.texts = texts
        self.index: dict[str, int] = {}
        self.ids: list[str] = []
        self.titles: list[str] = []
        self.snippets: list[str] = []

    def __call__(self, doc: str) -> int:
        i = self.index.get(doc)
        if i is None:
            i = self.index[doc] = len(self.ids)
            self.ids.append(doc)
            self.titles.append(snippet(self.texts.title(doc), TITLE) or "")
            self.snippets.append(snippet(self.texts.body(doc), SNIPPET) or "")
        return i

    def to_json(self) -> dict[str, list[str]]:
        return {"id": self.ids, "t": self.titles, "x": self.snippets}


def _detail(
    qids: Sequence[str], lo: int, runs: Mapping[str, Run], qrels: Qrels, texts: Texts, nuggets: Any = None
) -> dict[str, Any]:
    """One detail record for queries ``lo .. lo + len(qids)`` (see module doc). Per query:

    - ``top[r]``: document numbers of run ``r``'s first :data:`TOP`;
    - ``j``: ``[doc, grade, ...]`` for every judged document shown (top lists and relevant ones);
    - ``rel``: the relevant documents (grade >= 1), highest grade first;
    - ``rr[r]``: each relevant document's rank in run ``r`` (0: not in what it returned);
    - ``fr[r]``: rank of the first relevant document in run ``r`` (0: none); ``n[r]``: documents
      returned (0: no ranking for the query);
    - with nuggets (``nug``, only then): ``t``: the query's nugget texts, ``v``: 1 for a vital one,
      ``b[r]``: each nugget's best assignment in run ``r``'s top :data:`TOP` (2 support, 1 partial
      support, 0 neither), ``a[r]``: how many of that top were assessed.
    """
    docs = _Docs(texts)
    top: dict[str, list[list[int]]] = {r: [] for r in runs}
    rr: dict[str, list[list[int]]] = {r: [] for r in runs}
    fr: dict[str, list[int]] = {r: [] for r in runs}
    depth: dict[str, list[int]] = {r: [] for r in runs}
    judged_out: list[list[int]] = []
    rel_out: list[list[int]] = []
    rows = {r: {q: i for i, q in enumerate(run.query_ids)} for r, run in runs.items()}
    for q in qids:
        judged = qrels.get(q) or {}
        relevant = sorted((d for d, g in judged.items() if g >= 1), key=lambda d: (-judged[d], d))
        shown: dict[str, None] = {}
        for r, run in runs.items():
            i = rows[r].get(q)
            # the ids straight from the run's columns (Run.ranking would build a float per score)
            ranking = [] if i is None else run.doc_ids[run.indices[i, : int(run.lengths[i])]].tolist()
            first = ranking[:TOP]
            top[r].append([docs(d) for d in first])
            shown.update(dict.fromkeys(first))
            pos = {d: k for k, d in enumerate(ranking, start=1)}
            rr[r].append([pos.get(d, 0) for d in relevant])
            fr[r].append(min((pos[d] for d in relevant if d in pos), default=0))
            depth[r].append(len(ranking))
        rel_out.append([docs(d) for d in relevant])
        shown.update(dict.fromkeys(relevant))
        judged_out.append([x for d in shown if d in judged for x in (docs(d), int(judged[d]))])
    out = {
        "lo": lo,
        "hi": lo + len(qids),
        "d": docs.to_json(),
        "top": top,
        "j": judged_out,
        "rel": rel_out,
        "rr": rr,
        "fr": fr,
        "n": depth,
    }
    if nuggets is not None:
        out["nug"] = _coverage(qids, runs, nuggets)
    return out


def _coverage(qids: Sequence[str], runs: Mapping[str, Run], nuggets: Any) -> dict[str, Any]:
    """Per query, which nuggets each run's top :data:`TOP` covers (see :func:`_detail`)."""
    texts, vital = [], []
    best: dict[str, list[list[int]]] = {r: [] for r in runs}
    assessed: dict[str, list[int]] = {r: [] for r in runs}
    for q in qids:
        rec = nuggets.nuggets.get(q)
        texts.append([n.text for n in rec.nuggets] if rec is not None else [])
        vital.append([int(n.vital) for n in rec.nuggets] if rec is not None else [])
    for r, run in runs.items():
        ctx = nuggets.input_for(run, list(qids))
        best[r] = [b.tolist() for b in ctx.best(TOP)]
        assessed[r] = [int(a[:TOP].sum()) for a in ctx.assessed]
    return {"t": texts, "v": vital, "b": best, "a": assessed}
