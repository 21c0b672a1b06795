"""Scoring runs against judgments: the dict path (pytrec_eval / ranx shapes) and the array path
(the harness's own ``Run`` against :class:`CompiledQrels`). Both turn a run into ranked grade
matrices and hand them to :func:`harness.metrics.core.compute`; nothing else computes a metric.

Query accounting (docs/architecture.md, "Metric definitions"; trec_eval ``-c``): the evaluated
queries are the judged ones; a judged query with no ranking scores 0 and stays in the mean; queries
ranked but not judged are ignored;
every such case is counted in :attr:`Evaluation.counts`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from harness.errors import InputError
from harness.metrics import core
from harness.metrics.names import Metric, parse_metrics
from harness.run import Run, rank_key

#: Elements per padded block: bounds memory when a few rankings are much longer than the rest, and
#: the lookup's temporaries (a dozen arrays of a block's size: 1 << 22 made ~300 MB of them at once
#: for a million short rankings; this size costs no measurable time)
_BLOCK_ELEMENTS = 1 << 20


def mean(values: np.ndarray) -> float:
    """Mean via an exactly rounded sum, so it does not depend on query order (a results folder
    re-scored in another order reproduces its summary bit for bit)."""
    values = np.asarray(values)
    # a block of Python floats at a time: ``values.tolist()`` would make a million floats at once
    # for a million queries, at the point where a large evaluation peaks
    floats = chain.from_iterable(values[lo : lo + _MEAN_BLOCK].tolist() for lo in range(0, len(values), _MEAN_BLOCK))
    return math.fsum(floats) / len(values) if len(values) else 0.0


#: values turned into Python floats at a time by :func:`mean`
_MEAN_BLOCK = 1 << 16


@dataclass
class Evaluation:
    """Per-query values for every metric, over the judged queries, in qrels order."""

    query_ids: list[str]
    values: dict[str, np.ndarray]
    counts: dict[str, int] = field(default_factory=dict)

    def means(self) -> dict[str, float]:
        return {m: mean(v) for m, v in self.values.items()}

    def per_query(self) -> dict[str, dict[str, float]]:
        cols = {m: v.tolist() for m, v in self.values.items()}
        return {q: {m: cols[m][i] for m in cols} for i, q in enumerate(self.query_ids)}


class CompiledQrels:
    """Judgments as arrays, built once and shared by every run scored against them.

    Per-query counts and ideal gains are computed up front (all the dict path needs); for the array
    path the judgments are translated once per run vocabulary (:meth:`for_vocab`), after which
    finding the grade of every ranked document is vectorised.
    """

    def __init__(self, qrels: Mapping[str, Mapping[str, int]]) -> None:
        if isinstance(qrels, CompiledQrels):  # pragma: no cover - convenience
            self.__dict__.update(qrels.__dict__)
            return
        if not isinstance(qrels, Mapping):
            raise InputError(f"qrels must be a mapping {{query_id: {{doc_id: grade}}}}, got {type(qrels).__name__}")
        self.query_ids = [str(q) for q in qrels]
        if not self.query_ids:
            raise InputError("qrels hold no judged queries")
        judged = [qrels[q] for q in qrels]
        sizes = np.fromiter((len(j) for j in judged), dtype=np.int64, count=len(judged))
        rows = np.repeat(np.arange(len(judged), dtype=np.int64), sizes)
        try:
            grades = np.fromiter(
                chain.from_iterable(j.values() for j in judged), dtype=np.int64, count=int(sizes.sum())
            )
        except (TypeError, ValueError, OverflowError):
            raise InputError("every grade in qrels must be an integer") from None
        self._compile(rows, grades)
        self._judged: list[Mapping[str, int]] | None = judged
        self._docs_flat: np.ndarray | None = None

    @classmethod
    def from_arrays(
        cls, query_ids: Sequence[str], rows: np.ndarray, docs: np.ndarray, grades: np.ndarray
    ) -> CompiledQrels:
        """From flat judgments grouped by query (``rows[i]``: position in ``query_ids``, ascending;
        ``docs[i]``, ``grades[i]``), as a columnar reader yields them: no dict per query, so a
        qrels file of a million queries costs its arrays, not a million Python mappings.
        :meth:`judged` builds one query's mapping when the dict path asks for it."""
        self = cls.__new__(cls)
        self.query_ids = [str(q) for q in query_ids]
        if not self.query_ids:
            raise InputError("qrels hold no judged queries")
        self._compile(np.asarray(rows, dtype=np.int64), np.asarray(grades, dtype=np.int64))
        self._judged = None
        self._docs_flat = np.asarray(docs, dtype=object)
        return self

    def _compile(self, rows: np.ndarray, grades: np.ndarray) -> None:
        """Counts, ideal gains and the lookup arrays from flat (row, grade) judgments."""
        n = len(self.query_ids)
        positive = grades > 0
        self.num_rel = np.bincount(rows[grades >= 1], minlength=n).astype(np.int64)
        #: judged non-relevant (grade 0) per query: bpref's N
        self.num_nonrel = np.bincount(rows[grades == 0], minlength=n).astype(np.int64)
        # positive grades per query, sorted descending: the ideal ranking for nDCG
        p_rows, p_grades = rows[positive], grades[positive].astype(np.float64)
        order = np.lexsort((-p_grades, p_rows))
        p_rows, p_grades = p_rows[order], p_grades[order]
        n_pos = np.bincount(p_rows, minlength=n)
        starts = np.concatenate(([0], np.cumsum(n_pos)[:-1]))
        self._ideal_rows, self._ideal_cols, self._ideal_vals = p_rows, np.arange(p_rows.size) - starts[p_rows], p_grades
        self.max_positive = int(n_pos.max(initial=0))
        self._rows, self._grades_flat = rows, grades
        self._starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=self._starts[1:])
        self._by_vocab: dict[tuple[int, bool], tuple[object, _VocabJudgments]] = {}
        self._pos_cache: tuple[object, np.ndarray] | None = None
        self._rows_cache: tuple[object, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.query_ids)

    def rows_in(self, query_ids: list[str]) -> np.ndarray:
        """For each judged query, its position in ``query_ids`` (a run's, unique), -1 if absent;
        remembered for the last list seen, since the runs of one benchmark share their query list."""
        hit = self._rows_cache
        if hit is not None and hit[0] is query_ids:
            return hit[1]
        if query_ids == self.query_ids:  # the usual case: run and qrels from one dataset, same order
            rows = np.arange(len(query_ids), dtype=np.int64)
        else:
            # one C hash table over both lists (no dict of a million entries beside them)
            rows = _positions(np.asarray(query_ids, dtype=object), self.query_ids)
        self._rows_cache = (query_ids, rows)
        return rows

    def judged(self, row: int) -> Mapping[str, int]:
        """The judgments of one query, as given."""
        if self._judged is not None:
            return self._judged[row]
        lo, hi = int(self._starts[row]), int(self._starts[row + 1])
        return dict(zip(self._docs_flat[lo:hi].tolist(), self._grades_flat[lo:hi].tolist()))  # type: ignore[index]

    def as_mapping(self) -> Mapping[str, Mapping[str, int]]:
        """``{query: {doc: grade}}`` as a read-only view: built from arrays, a query's mapping is
        made when it is read, not a million of them at once."""
        if self._judged is not None:
            return dict(zip(self.query_ids, self._judged))
        return _QrelsView(self)

    def _judged_docs(self) -> Iterable[str]:
        """Every judged doc id, flattened in qrels order (row by row)."""
        if self._judged is not None:
            return chain.from_iterable(self._judged)
        return self._docs_flat  # type: ignore[return-value]

    def ideal(self, width: int) -> np.ndarray:
        """``(n_queries, width)`` positive grades sorted descending, zero padded."""
        out = np.zeros((len(self.query_ids), width))
        if width:
            sel = self._ideal_cols < width
            out[self._ideal_rows[sel], self._ideal_cols[sel]] = self._ideal_vals[sel]
        return out

    def for_vocab(
        self, doc_ids: np.ndarray, doc_pos: Mapping[str, int] | None = None, *, with_zeros: bool = False
    ) -> _VocabJudgments:
        """The judgments in the positions of a run's vocabulary (a hash lookup per judgment), cached
        per vocabulary, so the runs of one benchmark (which share the corpus vocabulary) pay once.

        Grade-0 judgments change no grade-based metric and are left out, unless ``with_zeros`` (the
        judged-at-all matrix of ``judged@k`` needs them)."""
        hit = self._by_vocab.get((id(doc_ids), with_zeros))
        if hit is not None and hit[0] is doc_ids:
            return hit[1]
        pos = self._vocab_positions(doc_ids, doc_pos)
        keep = pos >= 0 if with_zeros else (pos >= 0) & (self._grades_flat != 0)
        vj = _VocabJudgments(
            len(self.query_ids),
            max(len(doc_ids), 1),
            self._rows[keep],
            pos[keep],
            self._grades_flat[keep].astype(np.float64),
        )
        if len(self._by_vocab) >= 8:
            self._by_vocab.clear()
        self._by_vocab[(id(doc_ids), with_zeros)] = (doc_ids, vj)
        return vj

    def _vocab_positions(self, doc_ids: np.ndarray, doc_pos: Mapping[str, int] | None) -> np.ndarray:
        """Position of every judged doc (flattened, qrels order) in ``doc_ids``, -1 if absent."""
        hit = self._pos_cache
        if hit is not None and hit[0] is doc_ids:
            return hit[1]
        if doc_pos is not None:
            if len(doc_pos) != len(doc_ids):
                raise InputError("a run's doc_ids vocabulary holds the same id twice", field="doc_ids")
            get = doc_pos.get
            pos = np.fromiter((get(d, -1) for d in self._judged_docs()), dtype=np.int64, count=self._rows.size)
        else:
            pos = _positions(doc_ids, list(self._judged_docs()))
        self._pos_cache = (doc_ids, pos)
        return pos


class _QrelsView(Mapping[str, Mapping[str, int]]):
    """:meth:`CompiledQrels.as_mapping` of qrels built from arrays."""

    def __init__(self, cq: CompiledQrels) -> None:
        self._cq = cq
        self._row: dict[str, int] | None = None

    def __getitem__(self, qid: str) -> Mapping[str, int]:
        if self._row is None:
            self._row = {q: i for i, q in enumerate(self._cq.query_ids)}
        return self._cq.judged(self._row[qid])

    def __iter__(self) -> Iterator[str]:
        return iter(self._cq.query_ids)

    def __len__(self) -> int:
        return len(self._cq.query_ids)


#: below this many ids (vocabulary and names together) :func:`_positions` uses a dict: importing pandas costs
#: more than the C hash table saves there (a 50-query ``harness evaluate`` started in 1.2 s instead of 0.5 s)
_SMALL_POSITIONS = 200_000


def _positions(vocab: np.ndarray, names: list[str]) -> np.ndarray:
    """Position of each name in ``vocab`` (-1 when absent), through one C hash table (pandas
    factorize): about twice as fast as a Python dict over a large vocabulary (a dict below
    :data:`_SMALL_POSITIONS` ids, the same answer)."""
    n = len(vocab)
    if n + len(names) < _SMALL_POSITIONS:
        index: dict[object, int] = {}
        for i, d in enumerate(vocab.tolist() if isinstance(vocab, np.ndarray) else vocab):
            index.setdefault(d, i)
        if len(index) != n:
            raise InputError("a run's doc_ids vocabulary holds the same id twice", field="doc_ids")
        return np.fromiter((index.get(x, -1) for x in names), dtype=np.int64, count=len(names))
    import pandas as pd

    codes, _ = pd.factorize(np.concatenate([np.asarray(vocab, dtype=object), np.asarray(names, dtype=object)]))
    if n and not np.array_equal(codes[:n], np.arange(n)):
        raise InputError("a run's doc_ids vocabulary holds the same id twice", field="doc_ids")
    pos = codes[n:].astype(np.int64)
    pos[pos >= n] = -1
    return pos


class _VocabJudgments:
    """Judged (query row, doc position, grade) triples for one vocabulary, ready for lookup.

    Most judged documents are judged for one query only, so the join is direct addressing:
    ``owner[p]`` is the one query row that judges the document at position ``p`` (``-1``: none,
    ``-2``: several; one slot more at the end, which padding (-1) reads), ``owner_grade[p]`` its
    grade. The judgments of documents several queries judge are kept as sorted keys
    ``query_row * n_docs + doc_position`` for one binary search over just those.
    """

    def __init__(self, n_queries: int, n_docs: int, rows: np.ndarray, pos: np.ndarray, grades: np.ndarray) -> None:
        self.n_docs = n_docs
        per_doc = np.bincount(pos, minlength=n_docs)
        row_dtype = np.int32 if n_queries < np.iinfo(np.int32).max else np.int64
        self.owner = np.full(n_docs + 1, -1, dtype=row_dtype)
        self.owner_grade = np.zeros(n_docs + 1)
        single = per_doc[pos] == 1
        self.owner[pos[single]] = rows[single]
        self.owner_grade[pos[single]] = grades[single]
        self.owner[pos[~single]] = -2
        keys = rows[~single] * n_docs + pos[~single]
        order = np.argsort(keys, kind="stable")
        self.keys, self.key_grades = keys[order], grades[~single][order]

    def lookup(self, query_rows: np.ndarray, doc_positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The judged documents among ranked ones (``doc_positions`` row-aligned with ``query_rows``,
        -1 padding), as ``(row, column, grade)`` triples in row-major order (what
        :class:`core.Ranked` takes): a ranking's judged documents are few, so nothing dense is built
        beyond one gather and two comparisons per ranked document."""
        width = doc_positions.shape[1]
        owner = self.owner[doc_positions]
        direct = np.flatnonzero(owner == query_rows[:, None].astype(owner.dtype))
        r, c = np.divmod(direct, width) if width else (direct, direct)
        grades = self.owner_grade[doc_positions[r, c]]
        if self.keys.size:
            shared = np.flatnonzero(owner == -2)
            if shared.size:
                sr, sc = np.divmod(shared, width)
                probe = query_rows[sr] * self.n_docs + doc_positions[sr, sc]
                at = np.searchsorted(self.keys, probe)
                at[at == self.keys.size] = 0
                found = self.keys[at] == probe
                flat = np.concatenate((direct, shared[found]))
                order = np.argsort(flat, kind="stable")
                r, c = np.divmod(flat[order], width)
                grades = np.concatenate((grades, self.key_grades[at[found]]))[order]
        return r, c, grades


def _blocks(lengths: np.ndarray) -> Iterator[np.ndarray]:
    """Row groups of similar length (sorted), each padded block at most ``_BLOCK_ELEMENTS``."""
    order = np.argsort(lengths, kind="stable")
    srt = np.maximum(lengths[order], 1)
    start, n = 0, len(order)
    while start < n:
        cost = np.arange(1, n - start + 1) * srt[start:]
        stop = start + max(1, int(np.searchsorted(cost, _BLOCK_ELEMENTS, side="right")))
        yield order[start:stop]
        start = stop


def _score(metrics: Sequence[Metric], cq: CompiledQrels, lengths: np.ndarray, grade_block) -> dict[str, np.ndarray]:
    """Hand each block of ranked queries (``grade_block(rows, width, ideal) -> core.Ranked``) to the core."""
    ideal = cq.ideal(core.ideal_length(metrics, cq.max_positive))
    values = {m.name: np.zeros(len(cq)) for m in metrics}
    for rows in _blocks(lengths):
        ranked = grade_block(rows, int(lengths[rows].max(initial=0)), ideal[rows])
        for name, v in core.compute_ranked(ranked, metrics).items():
            values[name][rows] = v
    return values


def _run_block(indices: np.ndarray, run_rows: np.ndarray, width: int) -> np.ndarray:
    """``indices[run_rows, :width]`` with -1 rows where ``run_rows`` is -1 (a query the run lacks);
    a view, not a copy, when the rows are a contiguous range (run and qrels in the same order)."""
    n = run_rows.size
    contiguous = n and run_rows[0] >= 0 and run_rows[-1] - run_rows[0] == n - 1
    if contiguous and width <= indices.shape[1] and (n == 1 or bool((np.diff(run_rows) == 1).all())):
        return indices[run_rows[0] : run_rows[0] + n, :width]
    idx = np.full((n, width), -1, dtype=indices.dtype)
    ok = run_rows >= 0
    idx[ok] = indices[run_rows[ok], :width]
    return idx


def _counts(cq: CompiledQrels, lengths: np.ndarray, run_qids, duplicates: int) -> dict[str, int]:
    judged = set(cq.query_ids)
    return {
        "queries": len(cq),
        "missing_from_run": int((lengths == 0).sum()),
        "not_in_qrels": sum(1 for q in run_qids if q not in judged),
        "no_relevant": int((cq.num_rel == 0).sum()),
        "duplicates_dropped": int(duplicates),
    }


#: the metrics judgments alone cannot score: what each needs
_NOT_FROM_JUDGMENTS = (
    ("needs_embeddings", "needs document embeddings; `harness run` computes it, judgments alone cannot"),
    (
        "needs_context",
        "needs the ranked chunks' token counts; `harness run` computes it, judgments alone cannot",
    ),
    (
        "needs_nuggets",
        "needs nuggets and their assignments (--nuggets, --assignments; a config's dataset: nuggets:, "
        "assignments:), judgments alone cannot",
    ),
)


def _metrics(metrics: Sequence[str | Metric] | str) -> list[Metric]:
    ms = parse_metrics(metrics)
    for needs, why in _NOT_FROM_JUDGMENTS:
        bad = [m.name for m in ms if getattr(m, needs)]
        if bad:
            raise InputError(f"{', '.join(bad)} {why}", field="metrics")
    return ms


def evaluate_dicts(
    qrels: Mapping[str, Mapping[str, int]] | CompiledQrels,
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str | Metric] | str,
    *,
    judged_only: bool = False,
) -> Evaluation:
    """Score ``{qid: {doc_id: score}}`` against ``{qid: {doc_id: grade}}`` (no ``Run`` built).

    ``judged_only``: trec_eval ``-J`` (see :mod:`harness.metrics.judged_only`)."""
    ms = _metrics(metrics)
    cq = qrels if isinstance(qrels, CompiledQrels) else CompiledQrels(qrels)
    if judged_only:
        from harness.metrics.judged_only import condense_dicts, split

        condensed, raw = split(ms)
        ev = evaluate_dicts(cq, condense_dicts(cq, run), condensed) if condensed else None
        ev_raw = evaluate_dicts(cq, run, raw) if raw else None
        return _join(ms, ev, ev_raw)
    with_judged = core.needs_judged(ms)
    empty: dict[str, float] = {}
    rankings = [run.get(q, empty) or empty for q in cq.query_ids]
    lengths = np.fromiter((len(r) for r in rankings), dtype=np.int64, count=len(rankings))

    def grade_block(rows: np.ndarray, width: int, ideal: np.ndarray) -> core.Ranked:
        # Only the judged documents a ranking holds matter, and they are a few of its ranks: look each
        # query's judged documents up in its ranking (a handful of lookups, in C through filter())
        # instead of every ranked document up in the judgments, and place each one by counting the
        # ranked scores above it. No grade matrix, no sort of every row.
        scores = np.full((len(rows), width), -np.inf)
        hit_rows: list[int] = []
        hit_scores: list[float] = []
        hit_grades: list[int] = []
        hit_docs: list[str] = []
        for i, r in enumerate(rows.tolist()):
            ranking = rankings[r]
            n = len(ranking)
            if n:
                scores[i, :n] = np.fromiter(ranking.values(), dtype=np.float64, count=n)
                has = cq.judged(r)
                found = list(filter(ranking.__contains__, has))
                if not with_judged:
                    found = [d for d in found if has[d]]
                if found:
                    hit_rows += [i] * len(found)
                    hit_docs += found
                    hit_scores += map(ranking.__getitem__, found)
                    hit_grades += map(has.__getitem__, found)
        valid = np.arange(width)[None, :] < lengths[rows][:, None]
        bad = valid & ~np.isfinite(scores)
        if bad.any():
            i, j = map(int, np.argwhere(bad)[0])
            doc = list(rankings[rows[i]])[j]
            raise InputError(
                f"query {cq.query_ids[rows[i]]!r}, doc {doc!r}: score is {scores[i, j]} (scores must be finite)",
                field="score",
            )
        key = rank_key(scores, valid)  # trec_eval ranks by the float32 score
        h_rows = np.asarray(hit_rows, dtype=np.int64)
        with np.errstate(over="ignore"):  # beyond float32's range: inf, as in trec_eval
            h_key = np.asarray(hit_scores, dtype=np.float64).astype(np.float32)
        h_cols = np.zeros(h_rows.size, dtype=np.int64)
        tied = np.zeros(h_rows.size, dtype=bool)
        step = max(1, _BLOCK_ELEMENTS // max(width, 1))  # bounded memory: a block of hits at a time
        for lo in range(0, h_rows.size, step):
            row_keys, k = key[h_rows[lo : lo + step]], h_key[lo : lo + step, None]
            h_cols[lo : lo + step] = (row_keys > k).sum(axis=1)  # NaN padding compares False
            tied[lo : lo + step] = (row_keys == k).sum(axis=1) > 1
        for t in np.flatnonzero(tied).tolist():
            # a score tie with a judged document: ties go to the larger doc id (trec_eval)
            own = (float(h_key[t]), hit_docs[t])
            with np.errstate(over="ignore"):
                h_cols[t] = sum(
                    1 for d, v in rankings[rows[hit_rows[t]]].items() if (float(np.float32(v)), d) > own
                )
        order = np.lexsort((h_cols, h_rows))
        retrieved = lengths[rows] if with_judged else None
        nonrel = cq.num_nonrel[rows] if with_judged else None
        return core.Ranked(
            (len(rows), width),
            h_rows[order],
            h_cols[order],
            np.asarray(hit_grades, dtype=np.float64)[order],
            cq.num_rel[rows],
            ideal,
            complete_judged=with_judged,
            retrieved=retrieved,
            num_nonrel=nonrel,
        )

    values = _score(ms, cq, lengths, grade_block)
    return Evaluation(cq.query_ids, values, _counts(cq, lengths, run, 0))


def evaluate_run(
    qrels: Mapping[str, Mapping[str, int]] | CompiledQrels,
    run: Run,
    metrics: Sequence[str | Metric] | str,
    *,
    judged_only: bool = False,
) -> Evaluation:
    """Score a canonical :class:`Run` (the array path: no Python loop over documents).

    ``judged_only``: trec_eval ``-J``, each ranking condensed to its judged documents first (see
    :mod:`harness.metrics.judged_only`); ``judged@k`` is still measured on the full ranking."""
    ms = _metrics(metrics)
    cq = qrels if isinstance(qrels, CompiledQrels) else CompiledQrels(qrels)
    if judged_only:
        from harness.metrics.judged_only import split

        condensed, raw = split(ms)
        ev = _evaluate_run(cq, run, condensed, condense=True) if condensed else None
        ev_raw = _evaluate_run(cq, run, raw) if raw else None
        return _join(ms, ev, ev_raw)
    return _evaluate_run(cq, run, ms)


def _join(ms: list[Metric], *parts: Evaluation | None) -> Evaluation:
    """One evaluation from the condensed and the full-ranking halves of a judged-only one."""
    done = [p for p in parts if p is not None]
    values: dict[str, np.ndarray] = {}
    for p in done:
        values.update(p.values)
    return Evaluation(done[0].query_ids, {m.name: values[m.name] for m in ms}, done[-1].counts)


def _evaluate_run(cq: CompiledQrels, run: Run, ms: list[Metric], *, condense: bool = False) -> Evaluation:
    with_judged = core.needs_judged(ms) or condense
    run_rows = cq.rows_in(run.query_ids)
    present = run_rows >= 0
    lengths = np.zeros(len(cq), dtype=np.int64)
    lengths[present] = run.lengths[run_rows[present]]
    # a dict the run already built, else a C hash
    vj = cq.for_vocab(run.doc_ids, run._dpos, with_zeros=with_judged)

    def grade_block(rows: np.ndarray, width: int, ideal: np.ndarray) -> core.Ranked:
        r = run_rows[rows]
        idx = _run_block(run.indices, r, width)
        hit_rows, hit_cols, grades = vj.lookup(rows, idx)
        shape, retrieved = (len(rows), width), lengths[rows]
        if condense:  # trec_eval -J: the judged documents (grade >= 0), ranked 1..n in their order
            keep = grades >= 0
            hit_rows, grades = hit_rows[keep], grades[keep]
            hit_cols = core._nth_in_row(hit_rows, len(rows)) - 1
            retrieved = np.bincount(hit_rows, minlength=len(rows))
            shape = (len(rows), int(retrieved.max(initial=0)))
        return core.Ranked(
            shape,
            hit_rows,
            hit_cols,
            grades,
            cq.num_rel[rows],
            ideal,
            complete_judged=with_judged,
            retrieved=retrieved if with_judged else None,
            num_nonrel=cq.num_nonrel[rows] if with_judged else None,
        )

    values = _score(ms, cq, lengths, grade_block)
    counts = _counts(cq, lengths, (), run.duplicates_dropped)
    # run and qrels query ids are each unique: the run's others are the ones not judged
    counts["not_in_qrels"] = len(run.query_ids) - int(present.sum())
    return Evaluation(cq.query_ids, values, counts)


def judged_at_10(qrels: CompiledQrels, run: Run, summary: Mapping[str, float] | None = None) -> float:
    """Mean ``judged@10`` of ``run``: from ``summary`` when it was a metric already, else computed
    (how far the judgments reach a ranking; the table shows it when it is low)."""
    if summary and "judged@10" in summary:
        return float(summary["judged@10"])
    return float(_evaluate_run(qrels, run, parse_metrics(["judged@10"])).means()["judged@10"])


def check_overlap(
    cq: Mapping[str, Mapping[str, int]] | CompiledQrels,
    run: Run | Mapping[str, Mapping[str, float]],
    *,
    run_label: str,
    qrels_label: str,
    min_share: float = 0.5,
) -> str | None:
    """Refuse to score a run that cannot be about these judgments; warn when it covers few of them.

    A run scored against the wrong qrels (another dataset, another split, ids renamed by a
    chunker) gives all-zero metrics that look like a bad retriever. So, before any scoring:

    - no query id in common, or no retrieved document (over the common queries) among the judged
      ones (any grade): :class:`InputError` naming both, with examples of each side's ids;
    - fewer than ``min_share`` of the judged queries ranked: a warning string with the counts
      (the unranked ones score 0 and stay in the mean); ``None`` when the overlap is fine.
    """
    cq = cq if isinstance(cq, CompiledQrels) else CompiledQrels(cq)
    if not isinstance(run, Run) and not all(isinstance(r, Mapping) for r in run.values()):
        run = Run.coerce(run)  # {qid: [(doc_id, score), ...]}
    run_qids = run.query_ids if isinstance(run, Run) else [str(q) for q in run]
    qpos = {q: i for i, q in enumerate(run_qids)}
    common = [(r, qpos[q]) for r, q in enumerate(cq.query_ids) if q in qpos]
    if not common:
        raise InputError(
            f"run {run_label} shares no query ids with qrels {qrels_label} "
            f"(run: {len(run_qids)} queries, e.g. {_examples(run_qids)}; "
            f"qrels: {len(cq)} judged queries, e.g. {_examples(cq.query_ids)}); "
            "are they from the same dataset and split?"
        )
    if isinstance(run, Run):
        rows = np.fromiter((i for _, i in common), dtype=np.int64, count=len(common))
        ranked = run.lengths[rows] > 0
        retrieved = np.zeros(len(run.doc_ids) + 1, dtype=bool)  # + 1: padding (-1) marks the last slot
        for lo in range(0, len(rows), _OVERLAP_ROWS):  # a block of rows at a time: not a copy of the run
            retrieved[run.indices[rows[lo : lo + _OVERLAP_ROWS]].ravel()] = True
        retrieved[-1] = False
        pos = cq._vocab_positions(run.doc_ids, run._dpos)  # the map evaluate_run reuses
        in_common = np.zeros(len(cq), dtype=bool)
        in_common[[r for r, _ in common]] = True
        mine = pos[in_common[cq._rows]]
        shared = bool(retrieved[mine[mine >= 0]].any())
        run_docs = lambda: run.doc_ids[np.flatnonzero(retrieved[:-1])[:3]].tolist()  # noqa: E731
    else:
        rankings = [run[run_qids[i]] or {} for _, i in common]
        ranked = np.array([len(r) > 0 for r in rankings], dtype=bool)
        shared = any(d in cq.judged(r) for (r, _), ranking in zip(common, rankings) for d in ranking)
        run_docs = lambda: [d for ranking in rankings for d in ranking][:3]  # noqa: E731
    n_ranked = int(ranked.sum())
    if not shared:
        judged_docs = [d for r, _ in common[:50] for d in cq.judged(r)][:3]
        raise InputError(
            f"run {run_label} retrieves none of the documents judged in qrels {qrels_label} "
            f"over the {len(common)} queries they share (run docs e.g. {_examples(run_docs())}; "
            f"judged docs e.g. {_examples(judged_docs)}); do the doc ids come from the same corpus?"
        )
    if n_ranked < min_share * len(cq):
        return (
            f"run {run_label} ranks {n_ranked} of the {len(cq)} queries judged in qrels {qrels_label} "
            f"({n_ranked / len(cq):.0%}); the other {len(cq) - n_ranked} score 0 and stay in the mean"
        )
    return None


#: rows of a run gathered at a time by :func:`check_overlap`
_OVERLAP_ROWS = 1 << 15


def _examples(ids: Sequence[str]) -> str:
    return ", ".join(repr(str(i)) for i in list(ids)[:3]) or "none"


def evaluate(
    qrels: Mapping[str, Mapping[str, int]] | CompiledQrels,
    run: Mapping[str, Mapping[str, float]] | Run,
    metrics: Sequence[str | Metric] | str,
    per_query: bool = False,
    *,
    judged_only: bool = False,
) -> dict[str, float] | dict[str, dict[str, float]]:
    """Score a run: ``{metric: mean}``, or ``{qid: {metric: value}}`` with ``per_query=True``.

    ``run`` is a :class:`Run` (array path) or ``{qid: {doc_id: score}}`` (the pytrec_eval / ranx
    shape; ``{qid: [(doc_id, score), ...]}`` works too). Means are over every judged query, a query
    missing from the run counting 0.
    """
    if not isinstance(run, Run):
        if not isinstance(run, Mapping):
            raise InputError(
                f"run must be a Run or a mapping {{query_id: {{doc_id: score}}}}, got {type(run).__name__}"
            )
        if not all(isinstance(r, Mapping) for r in run.values()):
            run = Run.coerce(run)
    if isinstance(run, Run):
        result = evaluate_run(qrels, run, metrics, judged_only=judged_only)
    else:
        result = evaluate_dicts(qrels, run, metrics, judged_only=judged_only)
    return result.per_query() if per_query else result.means()
