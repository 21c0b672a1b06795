"""Diversity metrics computed from document embeddings rather than judgments: what MMR buys.

The embeddings come from the caller (the engine passes the configured dense model's), never from
a model built here: the metrics layer does not import the retriever adapters, and a metric that
picked its own model would disagree with the run it scores. A caller hands over either

- a callable ``embed(doc_ids: list[str]) -> np.ndarray`` of shape ``(len(doc_ids), dim)``, one row
  per id in order, a row of NaN for an id it cannot embed (a run naming documents the corpus lacks);
  it is called once per run with every distinct document in some query's top k, so an encoder
  batches them; or
- :func:`matrix_embeddings` ``(matrix, doc_ids)``: rows of a precomputed matrix (e.g. the dense
  index's document vectors), looked up by id.

No judgments are needed, so ``harness evaluate`` (qrels + run file) cannot compute these metrics;
``harness run`` does, through :func:`embedding_metrics`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from harness.metrics.registry import Metric, parse_metrics, register, specs
from harness.run import Run

log = logging.getLogger("harness")

#: ``doc_ids -> (len(doc_ids), dim)`` float array, NaN rows for ids that cannot be embedded.
Embed = Callable[[Sequence[str]], np.ndarray]


@register("ild", cutoff="required", source="embeddings", bounds=(0.0, 2.0))
def ild(embeddings_topk: np.ndarray) -> float:
    """Intra-list diversity: mean pairwise cosine distance among the top-k documents (needs embeddings).

    ``ILD@k = 2 / (m (m - 1)) * sum_{1 <= i < j <= m} (1 - cos(e_i, e_j))``, ``m = min(k, retrieved)``,
    ``e_i`` the embedding of the document at rank i (rows need not be normalised; an all-zero row
    has cosine 0 with every other row). Fewer than two documents: no pairs, 0; a query missing from
    the run scores 0; both stay in the mean.
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


def matrix_embeddings(matrix: np.ndarray, doc_ids: Sequence[str] | Mapping[str, int]) -> Embed:
    """An :data:`Embed` over precomputed vectors: ``matrix[i]`` embeds ``doc_ids[i]`` (or
    ``matrix[doc_ids[id]]`` when given a mapping id -> row); unknown ids get NaN rows."""
    mat = np.asarray(matrix)
    if mat.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D matrix (documents, dim), got shape {mat.shape}")
    index = doc_ids if isinstance(doc_ids, Mapping) else {d: i for i, d in enumerate(doc_ids)}
    if not isinstance(doc_ids, Mapping) and len(index) != mat.shape[0]:
        raise ValueError(f"{mat.shape[0]} embedding rows for {len(index)} distinct doc ids")

    def embed(ids: Sequence[str]) -> np.ndarray:
        rows = np.fromiter((index.get(d, -1) for d in ids), dtype=np.int64, count=len(ids))
        out = np.full((len(ids), mat.shape[1]), np.nan)
        ok = rows >= 0
        out[ok] = mat[rows[ok]]
        return out

    return embed


def embedding_metrics(
    run: Run,
    metrics: Sequence[str | Metric],
    query_ids: Sequence[str],
    embeddings: Embed,
) -> dict[str, np.ndarray]:
    """Per-query values of the embedding metrics (``ild@k``), aligned with ``query_ids``.

    ``embeddings`` is called once, with the distinct documents of every query's top k (see the
    module docstring). Queries absent from the run score 0. Documents it cannot embed (NaN rows)
    are left out of their lists, with one warning.
    """
    ms = parse_metrics(list(metrics))
    other = [m.name for m in ms if not m.needs_embeddings]
    if other:
        kinds = sorted(k for k, s in specs().items() if s.needs_embeddings)
        raise ValueError(f"embedding_metrics computes {kinds} only, not {', '.join(other)}")
    if not callable(embeddings):
        raise TypeError(
            "embeddings must be a callable doc_ids -> array (see harness.metrics.diversity.matrix_embeddings)"
        )
    out = {m.name: np.zeros(len(query_ids)) for m in ms}
    if not ms or not query_ids:
        return out
    top = run.subset(list(query_ids)).cut(max(int(m.k or 0) for m in ms))
    used = np.unique(top.indices[top.indices >= 0])
    if used.size == 0:
        return out
    vecs = np.asarray(embeddings(top.doc_ids[used].tolist()), dtype=np.float64)
    if vecs.ndim != 2 or vecs.shape[0] != used.size:
        raise ValueError(f"embeddings returned shape {vecs.shape} for {used.size} doc ids; want ({used.size}, dim)")
    known = ~np.isnan(vecs).any(axis=1)
    if not known.all():
        log.warning(
            "%s: %d documents have no embedding (e.g. %r) and are left out of %s",
            run.name or "run",
            int((~known).sum()),
            top.doc_ids[used[~known][0]],
            ", ".join(m.name for m in ms),
        )
    row = np.full(len(top.doc_ids), -1, dtype=np.int64)
    row[used[known]] = np.flatnonzero(known)
    for i in range(len(top)):
        r = row[top.indices[i, : top.lengths[i]]]
        for m in ms:
            sel = r[: m.k]
            out[m.name][i] = m.spec.compute(vecs[sel[sel >= 0]])
    return out
