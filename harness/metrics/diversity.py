"""Diversity metrics computed from document embeddings rather than judgments: what MMR buys.

``ild@k``, intra-list diversity: the mean pairwise cosine distance among a query's top-k documents,

    ILD@k = 2 / (m (m - 1)) * sum_{1 <= i < j <= m} (1 - cos(e_i, e_j)),    m = min(k, retrieved)

with ``e_i`` the embedding of the document at rank i (the default dense model, through the
embedding cache). A list of fewer than two documents has no pairs and scores 0, as does a query
missing from the run; both stay in the mean. No judgments are needed, so ``harness evaluate``
(qrels + run file) cannot compute it; ``harness run`` does, through :func:`embedding_metrics`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np

from harness.metrics.names import EMBEDDING_KINDS, Metric, parse_metrics
from harness.model import GoldenDataset
from harness.run import Run

log = logging.getLogger("harness")


def ild(embeddings_topk: np.ndarray) -> float:
    """Mean pairwise (1 - cosine) among the rows (ranked documents); 0 for fewer than two rows.

    Rows need not be normalised; an all-zero row has cosine 0 with every other row.
    """
    e = np.asarray(embeddings_topk, dtype=np.float64)
    if e.ndim != 2:
        raise ValueError(f"ild expects a 2-D array (documents, dim), got shape {e.shape}")
    m = e.shape[0]
    if m < 2:
        return 0.0
    norms = np.linalg.norm(e, axis=1)
    e = e / np.where(norms > 0, norms, 1.0)[:, None]
    iu = np.triu_indices(m, k=1)
    cos = (e @ e.T)[iu]
    return float(np.mean(1.0 - cos))


def embedding_metrics(
    run: Run,
    metrics: Sequence[str | Metric],
    query_ids: Sequence[str],
    dataset: GoldenDataset,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    show_progress: bool = True,
) -> dict[str, np.ndarray]:
    """Per-query values of embedding metrics (``ild@k``), aligned with ``query_ids``.

    Documents are embedded with the default dense model through the cache in ``cache_dir``,
    only those in some query's top k. Queries absent from the run score 0. Documents the corpus
    does not hold (a run file naming unknown ids) cannot be embedded and are left out, with a warning.
    """
    ms = parse_metrics(list(metrics))
    other = [m.name for m in ms if m.kind not in EMBEDDING_KINDS]
    if other:
        raise ValueError(f"embedding_metrics computes {sorted(EMBEDDING_KINDS)} only, not {', '.join(other)}")
    out = {m.name: np.zeros(len(query_ids)) for m in ms}
    if not ms or not query_ids:
        return out
    top = run.subset(list(query_ids)).cut(max(int(m.k or 0) for m in ms))
    to_corpus = _corpus_positions(top, dataset)
    used = np.unique(top.indices[top.indices >= 0])
    known = used[to_corpus[used] >= 0]
    if known.size < used.size:
        log.warning(
            "%s: %d documents are not in the corpus (e.g. %r) and are left out of %s",
            run.name or "run",
            used.size - known.size,
            top.doc_ids[used[to_corpus[used] < 0][0]],
            ", ".join(m.name for m in ms),
        )
    if known.size == 0:
        return out
    from retrievers.encoder import Encoder

    encoder = Encoder(None, cache_dir=cache_dir, show_progress=show_progress)
    corpus = dataset.corpus
    vecs = encoder.encode_documents([corpus[p] for p in to_corpus[known]], progress=known.size > 256)
    row = np.full(len(top.doc_ids), -1, dtype=np.int64)
    row[known] = np.arange(known.size)
    for i in range(len(top)):
        ranked = top.indices[i, : top.lengths[i]]
        r = row[ranked]
        for m in ms:
            sel = r[: m.k]
            out[m.name][i] = ild(vecs[sel[sel >= 0]])
    return out


def _corpus_positions(run: Run, dataset: GoldenDataset) -> np.ndarray:
    """Run vocabulary index -> corpus position, -1 for ids the corpus lacks."""
    pos = dataset.doc_index
    return np.fromiter((pos.get(d, -1) for d in run.doc_ids), dtype=np.int64, count=len(run.doc_ids))
