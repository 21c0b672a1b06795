"""Context metrics a RAG team reads: how much of what the answer needs, and how much junk, reaches
the LLM's context. Pure numpy; per-query float arrays in, per-query float arrays out.

Inputs, per query ``i`` (lists aligned by query):

- ``tokens[i]``: int array, the token count of each ranked chunk, in rank order;
- ``covers[i]``: bool array of shape ``(n_ranked, n_units)``: ``covers[i][r, u]`` is true when the
  chunk at rank ``r`` covers relevant unit ``u``. A *unit* is what the answer needs: a relevant
  document (id-judged queries: a chunk covers its parent document when that document is relevant)
  or an answer string (answer-judged queries: a chunk covers each answer it contains). ``n_units``
  is the query's number of relevant units, retrieved or not; a chunk is relevant when its row has
  any true value.

Why units and not tokens for recall: the relevant material is the same for every chunking when it
is counted in documents or answer strings, so recall@Ntok compares chunkings on one scale; counted
in tokens it would change with the chunking (overlap counts tokens twice, a larger chunk of a
relevant document is "more relevant material") and would need the token count of every relevant
chunk in the corpus, retrieved or not.

The budget rule (recall@Ntok, precision@Ntok): walk the ranking from the top and take chunks while
the running token total stays within ``N``; the first chunk that does not fit whole **stops** the
walk (it is neither truncated nor skipped, and nothing below it is taken). This is how a context is
usually packed (in rank order, whole chunks), and it makes a truncated chunk's relevance a
non-question (an answer could sit in the cut-off part). A query whose first chunk exceeds ``N`` gets
an empty context: recall 0, precision 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.metrics.registry import UNIT, register


def _as_covers(cov: np.ndarray, n: int | None = None, *, units: bool = True) -> np.ndarray:
    """``covers`` as a 2-d bool array; a 1-d array (relevance per chunk) is accepted where only
    relevance matters (``units=False``)."""
    c = np.asarray(cov, dtype=bool)
    if c.ndim == 1 and not units:
        c = c[:, None]
    if c.ndim != 2:
        raise ValueError(f"covers must be (ranked chunks, relevant units), got shape {c.shape}")
    if n is not None and c.shape[0] != n:
        raise ValueError(f"covers has {c.shape[0]} rows for {n} ranked chunks")
    return c


def taken_in_budget(tokens: np.ndarray, budget: int) -> int:
    """How many chunks from the top fit whole in ``budget`` tokens, stopping at the first that does
    not: the largest ``m`` with ``tokens[0] + ... + tokens[m-1] <= budget``."""
    t = np.asarray(tokens, dtype=np.int64)
    if np.any(t < 0):
        raise ValueError("token counts must be >= 0")
    return int(np.searchsorted(np.cumsum(t), budget, side="right"))


def recall_at_tokens(tokens: Sequence[np.ndarray], covers: Sequence[np.ndarray], budget: int) -> np.ndarray:
    """``recall@Ntok``: the share of the query's relevant units covered by the chunks that fit in an
    ``N``-token context.

        recall@Ntok = |{u : covers[r, u] for some r < m}| / n_units,
        m = max{m : tokens[0] + ... + tokens[m-1] <= N}

    0 for a query with no relevant unit (it stays in the mean, as for every metric).
    """
    out = np.zeros(len(tokens))
    for i, (t, cov) in enumerate(zip(tokens, covers)):
        c = _as_covers(cov, len(t))
        if c.shape[1] == 0:
            continue
        m = taken_in_budget(t, budget)
        out[i] = c[:m].any(axis=0).sum() / c.shape[1]
    return out


def precision_at_tokens(tokens: Sequence[np.ndarray], covers: Sequence[np.ndarray], budget: int) -> np.ndarray:
    """``precision@Ntok``: the share of the context's tokens that belong to relevant chunks.

        precision@Ntok = sum(tokens[r] for r < m if chunk r is relevant) / sum(tokens[r] for r < m)

    with ``m`` as in :func:`recall_at_tokens` (chunk r is relevant when it covers any unit). 0 for an
    empty context (no chunk fits, or nothing was retrieved).
    """
    out = np.zeros(len(tokens))
    for i, (t, cov) in enumerate(zip(tokens, covers)):
        t = np.asarray(t, dtype=np.int64)
        c = _as_covers(cov, len(t), units=False)
        m = taken_in_budget(t, budget)
        total = int(t[:m].sum())
        if total == 0:
            continue
        relevant = c[:m].any(axis=1)
        out[i] = int(t[:m][relevant].sum()) / total
    return out


def context_precision(covers: Sequence[np.ndarray], k: int) -> np.ndarray:
    """Context precision@k: the share of the retrieved chunks in the top ``k`` that are relevant.

        context_precision@k = |{r < min(k, n) : chunk r is relevant}| / min(k, n)

    with ``n`` the number of chunks retrieved. Unlike ``precision@k`` the denominator is what was
    retrieved, not ``k``: a context of 3 relevant chunks is all signal even when ``k`` is 5. 0 when
    nothing was retrieved.
    """
    out = np.zeros(len(covers))
    for i, cov in enumerate(covers):
        top = _as_covers(cov, units=False)[:k]
        if len(top):
            out[i] = top.any(axis=1).sum() / len(top)
    return out


def context_recall(covers: Sequence[np.ndarray], k: int) -> np.ndarray:
    """Context recall@k: the share of the needed units (relevant documents, or answer strings) that
    the top ``k`` chunks cover.

        context_recall@k = |{u : covers[r, u] for some r < k}| / n_units

    0 for a query with no relevant unit.
    """
    out = np.zeros(len(covers))
    for i, cov in enumerate(covers):
        c = _as_covers(cov)
        if c.shape[1] == 0:
            continue
        out[i] = c[:k].any(axis=0).sum() / c.shape[1]
    return out


# ---------------------------------------------------------------------------------------------
# Registered as metrics (names ``recall@512tok``, ``precision@512tok``, ``context_precision@k``,
# ``context_recall@k``); the scorer hands them a :class:`ContextInput` built from a chunk ranking.


@dataclass
class ContextInput:
    """Per judged query (in the scorer's query order): token counts of its ranked chunks, and which
    relevant unit each covers (see :func:`harness.chunking.context_covers`)."""

    tokens: list[np.ndarray]
    covers: list[np.ndarray]


@register("recall_tok", cutoff="required", source="context", unit="tok", bounds=UNIT)
def _recall_tok(ctx: ContextInput, k: int) -> np.ndarray:
    """recall@Ntok = |units covered by the chunks that fit whole in N tokens| / n_units
    (chunks taken in rank order, stopping at the first that does not fit; see recall_at_tokens)."""
    return recall_at_tokens(ctx.tokens, ctx.covers, k)


@register("precision_tok", cutoff="required", source="context", unit="tok", bounds=UNIT)
def _precision_tok(ctx: ContextInput, k: int) -> np.ndarray:
    """precision@Ntok = tokens of relevant chunks in the N-token context / tokens in it
    (see precision_at_tokens)."""
    return precision_at_tokens(ctx.tokens, ctx.covers, k)


@register("context_precision", cutoff="required", source="context", bounds=UNIT)
def _context_precision(ctx: ContextInput, k: int) -> np.ndarray:
    """context_precision@k = relevant chunks in the top min(k, n) / min(k, n) (see context_precision)."""
    return context_precision(ctx.covers, k)


@register("context_recall", cutoff="required", source="context", bounds=UNIT)
def _context_recall(ctx: ContextInput, k: int) -> np.ndarray:
    """context_recall@k = units covered by the top k chunks / n_units (see context_recall)."""
    return context_recall(ctx.covers, k)
