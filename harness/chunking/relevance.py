"""Relevance that survives re-chunking, and the document-level view of a chunk ranking.

- :func:`chunk_qrels`: document-level judgments reach chunks through the chunk's parent id (every
  chunk of a judged document gets the document's grade);
- :func:`answer_qrels`: answer / keyword judgments resolved per chunk (a chunk is relevant when its
  text contains an answer, case-insensitive), with :func:`harness.model.keyword_judgments`, the
  mechanism that judges the demo's keyword queries at document level;
- :func:`collapse_to_documents`: a ranking of chunks as a ranking of their parent documents, first
  occurrence wins and keeps that chunk's score (the best chunk stands for its document, as in
  MaxP), so every chunking is scored on the same document-level qrels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.errors import InputError
from harness.model import Document, GoldenDataset, Qrels, Query, keyword_judgments
from harness.run import PAD, Run


def _parent_map(parents: Mapping[str, str] | object) -> Mapping[str, str]:
    """``{chunk_id: parent_id}`` from a mapping or a :class:`~harness.chunking.corpus.ChunkedCorpus`."""
    if isinstance(parents, Mapping):
        return parents
    parent_of = getattr(parents, "parent_of", None)
    if parent_of is None:
        raise InputError(
            f"parents must map chunk id -> parent id (or be a ChunkedCorpus), got {type(parents).__name__}"
        )
    return parent_of


def chunk_qrels(doc_qrels: Mapping[str, Mapping[str, int]], parents: Mapping[str, str] | object) -> Qrels:
    """Chunk-level judgments from document-level ones: each chunk gets its parent's grade (grades
    <= 0 too: a chunk of a judged non-relevant document is judged non-relevant).

    A judged document with no chunk in ``parents`` (not in the corpus) keeps its own id, so it still
    counts as relevant and recall stays honest about what the corpus lacks, as at document level.
    Every query of ``doc_qrels`` is kept, even one whose judgments map to nothing.
    """
    parent_of = _parent_map(parents)
    children: dict[str, list[str]] = {}
    for chunk_id, parent in parent_of.items():
        children.setdefault(parent, []).append(chunk_id)
    out: Qrels = {}
    for qid, judged in doc_qrels.items():
        q: dict[str, int] = {}
        for doc_id, grade in judged.items():
            for chunk_id in children.get(doc_id, (doc_id,)):
                q[chunk_id] = int(grade)
        out[qid] = q
    return out


def answer_qrels(queries: Sequence[Query], chunk_corpus: Sequence[Document], *, include_title: bool = True) -> Qrels:
    """Judgments of the answer-judged queries (those with ``keywords``) resolved per chunk: grade 1
    for every chunk whose text (and title, with ``include_title``: chunks carry their document's
    title, which is what a retriever indexes) contains an answer, case-insensitive.

    An answer cut in two by a chunk boundary is found in no chunk: at chunk level that is a miss,
    which is the point (no single chunk holds the answer). Queries without keywords are left out.
    """
    if include_title:
        return keyword_judgments(queries, chunk_corpus)
    bare = [Document(id=d.id, text=d.text) for d in chunk_corpus]
    return keyword_judgments(queries, bare)


def chunk_level_qrels(dataset: GoldenDataset, chunked: object, chunk_corpus: Sequence[Document] | None = None) -> Qrels:
    """Chunk-level judgments for every query of ``dataset``: id-judged queries through the parent
    ids (:func:`chunk_qrels`), answer-judged ones per chunk (:func:`answer_qrels`)."""
    docs = chunk_corpus if chunk_corpus is not None else getattr(chunked, "corpus", None)
    if docs is None:
        raise InputError("chunk_level_qrels needs the chunk corpus (a ChunkedCorpus or chunk_corpus=...)")
    keyword_ids = {q.id for q in dataset.queries if q.keywords}
    by_id = chunk_qrels({q: j for q, j in dataset.qrels.items() if q not in keyword_ids}, chunked)
    by_answer = answer_qrels([q for q in dataset.queries if q.keywords], docs)
    out: Qrels = {}
    for qid in dataset.qrels:
        out[qid] = by_answer.get(qid, {}) if qid in keyword_ids else by_id[qid]
    return out


def collapse_to_documents(
    run: Run, parents: Mapping[str, str] | object, *, doc_ids: Sequence[str] | None = None
) -> Run:
    """The chunk ranking ``run`` as a ranking of parent documents: walking each ranking from the top,
    the first chunk of a document places it, with that chunk's score; later chunks of the same
    document are dropped (not counted as duplicates: they are not errors).

    ``doc_ids`` (the corpus's ids) makes the result share the dataset's vocabulary; otherwise the
    vocabulary is the parents in order of first appearance in ``parents``. A chunk id with no parent
    is an error (a run from another chunking).
    """
    parent_of = _parent_map(parents)
    chunk_ids = run.doc_ids
    try:
        parent_names = [parent_of[c] for c in chunk_ids.tolist()]
    except KeyError as e:
        raise InputError(
            f"run {run.name!r} ranks {e.args[0]!r}, which is no chunk of this chunking", field="doc_ids"
        ) from None
    if doc_ids is None:
        vocab = list(dict.fromkeys(parent_of.values()))
    else:
        vocab = list(doc_ids)
    pos = {d: i for i, d in enumerate(vocab)}
    try:
        pmap = np.fromiter((pos[p] for p in parent_names), dtype=np.int64, count=len(parent_names))
    except KeyError as e:
        raise InputError(f"parent {e.args[0]!r} is not in doc_ids", field="doc_ids") from None
    idx = run.indices
    valid = idx >= 0
    pidx = np.where(valid, pmap[np.maximum(idx, 0)] if pmap.size else PAD, PAD)
    depth = pidx.shape[1]
    keep = np.zeros(pidx.shape, dtype=bool)
    if valid.any():
        flat = pidx.ravel()
        sel = np.flatnonzero(flat >= 0)
        rows = sel // depth
        key = rows * (len(vocab) + 1) + flat[sel]
        _, first = np.unique(key, return_index=True)  # np.unique: first index of each value
        keep.ravel()[sel[first]] = True
    # kept entries first, in their original (ranked) order
    order = np.argsort(~keep, axis=1, kind="stable")
    new_idx = np.take_along_axis(np.where(keep, pidx, PAD), order, axis=1)
    new_sc = np.take_along_axis(np.where(keep, run.scores, -np.inf), order, axis=1)
    width = int(keep.sum(axis=1).max(initial=0))
    return Run(
        run.query_ids,
        vocab,
        new_idx[:, :width],
        new_sc[:, :width],
        name=run.name,
        duplicates_dropped=run.duplicates_dropped,
    )


def context_covers(
    run: Run,
    dataset: GoldenDataset,
    chunked: object,
    tokens: np.ndarray,
    *,
    include_title: bool = True,
) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """The inputs of :mod:`harness.metrics.context` for a chunk ranking: per judged query of
    ``dataset`` (qrels order), the token counts of its ranked chunks and the ``covers`` matrix
    (ranked chunk x relevant unit). Units: the relevant documents (grade >= 1) of an id-judged
    query (a chunk covers its parent), the answer strings of an answer-judged one (a chunk covers
    each answer its text contains, case-insensitive). ``tokens`` is aligned with ``chunked.corpus``
    (see :func:`harness.chunking.corpus.token_counts`)."""
    docs = getattr(chunked, "corpus", None)
    parent_of = _parent_map(chunked)
    if docs is None:
        raise InputError("context_covers needs a ChunkedCorpus")
    tokens = np.asarray(tokens, dtype=np.int64)
    if len(tokens) != len(docs):
        raise InputError(f"{len(tokens)} token counts for {len(docs)} chunks", field="tokens")
    pos = {d.id: i for i, d in enumerate(docs)}
    hay: dict[int, str] = {}
    queries = {q.id: q for q in dataset.queries}
    qids, toks, covers = [], [], []
    for qid, judged in dataset.qrels.items():
        ranked = [c for c, _ in run.ranking(qid)]
        try:
            rows = [pos[c] for c in ranked]
        except KeyError as e:
            raise InputError(f"run ranks {e.args[0]!r}, which is no chunk of this chunking", field="doc_ids") from None
        q = queries.get(qid)
        if q is not None and q.keywords:
            needles = [k.casefold() for k in q.keywords]
            cov = np.zeros((len(rows), len(needles)), dtype=bool)
            for r, i in enumerate(rows):
                if i not in hay:
                    d = docs[i]
                    hay[i] = (f"{d.title}\n{d.text}" if include_title else d.text).casefold()
                cov[r] = [n in hay[i] for n in needles]
        else:
            units = [d for d, g in judged.items() if g >= 1]
            upos = {u: j for j, u in enumerate(units)}
            cov = np.zeros((len(rows), len(units)), dtype=bool)
            for r, c in enumerate(ranked):
                j = upos.get(parent_of.get(c, c))
                if j is not None:
                    cov[r, j] = True
        qids.append(qid)
        toks.append(tokens[rows] if rows else np.zeros(0, dtype=np.int64))
        covers.append(cov)
    return qids, toks, covers


def chunk_dataset(dataset: GoldenDataset, chunked: object, *, name: str | None = None) -> GoldenDataset:
    """``dataset`` over its chunks: the chunk corpus, the same queries, chunk-level judgments
    (:func:`chunk_level_qrels`: answers re-resolved per chunk by :meth:`GoldenDataset.build`, id
    judgments through the parent ids). A retriever indexes and searches it unchanged; its run scores
    chunk-level metrics against ``qrels`` and document-level ones after
    :func:`collapse_to_documents` against ``dataset.qrels``. With chunking ``none`` the result has
    the dataset's fingerprint."""
    docs = getattr(chunked, "corpus", None)
    if docs is None:
        raise InputError("chunk_dataset needs a ChunkedCorpus")
    keyword_ids = {q.id for q in dataset.queries if q.keywords}
    by_id = chunk_qrels({q: j for q, j in dataset.qrels.items() if q not in keyword_ids}, chunked)
    label = getattr(chunked, "chunker", "") or "chunks"
    return GoldenDataset.build(
        name or f"{dataset.name}[{label}]",
        docs,
        dataset.queries,
        by_id,
        split=dataset.split,
        source=dataset.source,
    )
