"""Metric names parsed into small objects (``ndcg@10`` -> ``Metric("ndcg", 10)``), as ir_measures does.

One registry of kinds; every caller (API, CLI, config) parses through :func:`parse_metric`, so a
typo is caught once with the list of valid names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import InputError

#: kind -> (needs a cutoff?, allows no cutoff?, description). ``None`` cutoff means "whole ranking".
KINDS: dict[str, tuple[bool, bool, str]] = {
    "hit_rate": (False, True, "1 if any relevant doc is in the top k (trec_eval success.k)"),
    "mrr": (False, True, "reciprocal rank of the first relevant doc within k (recip_rank)"),
    "precision": (True, False, "relevant in top k / k (P.k)"),
    "recall": (False, True, "relevant in top k / all relevant judged (recall.k)"),
    "ndcg": (False, True, "nDCG with linear gain = grade (ndcg_cut.k)"),
    "ndcg_exp": (False, True, "nDCG with exponential gain 2^grade - 1 (ranx ndcg_burges)"),
    "map": (False, True, "average precision, cut at k (map_cut.k / map)"),
    "r_precision": (False, False, "relevant in top R / R, R = number relevant (Rprec)"),
    "ild": (True, False, "intra-list diversity: mean pairwise 1 - cosine among the top k (needs embeddings)"),
}

#: Kinds computed from embeddings rather than judgments.
EMBEDDING_KINDS = frozenset({"ild"})

ALIASES = {
    "hitrate": "hit_rate",
    "hit": "hit_rate",
    "success": "hit_rate",
    "hits": "hit_rate",
    "recip_rank": "mrr",
    "rr": "mrr",
    "p": "precision",
    "r": "recall",
    "ndcg_cut": "ndcg",
    "ndcg_burges": "ndcg_exp",
    "ap": "map",
    "map_cut": "map",
    "rprec": "r_precision",
    "r-precision": "r_precision",
    "rprecision": "r_precision",
}


@dataclass(frozen=True, order=True)
class Metric:
    kind: str
    k: int | None = None

    @property
    def name(self) -> str:
        return self.kind if self.k is None else f"{self.kind}@{self.k}"

    @property
    def needs_embeddings(self) -> bool:
        return self.kind in EMBEDDING_KINDS

    def __str__(self) -> str:
        return self.name


def valid_names() -> str:
    parts = []
    for kind, (needs_k, allows_none, _) in KINDS.items():
        if needs_k:
            parts.append(f"{kind}@k")
        elif allows_none:
            parts.append(f"{kind}[@k]")
        else:
            parts.append(kind)
    return ", ".join(parts)


def parse_metric(name: str | Metric) -> Metric:
    """Parse ``ndcg@10``, ``nDCG@10``, ``P@5``, ``recall_100`` (trec style), ``map``..."""
    if isinstance(name, Metric):
        return name
    raw = str(name).strip()
    text = raw.lower()
    kind, k = text, None
    for sep in ("@", ".", "_"):
        if sep in text:
            head, _, tail = text.rpartition(sep)
            if tail.isdigit():
                kind, k = head, int(tail)
                break
    kind = ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise InputError(f"unknown metric {raw!r}; valid metrics: {valid_names()}", field="metrics")
    needs_k, allows_none, _ = KINDS[kind]
    if k is not None and k < 1:
        raise InputError(f"metric {raw!r}: the cutoff must be >= 1", field="metrics")
    if k is None and needs_k:
        raise InputError(f"metric {raw!r} needs a cutoff, e.g. {kind}@10", field="metrics")
    if k is not None and not needs_k and not allows_none:
        raise InputError(f"metric {raw!r} takes no cutoff", field="metrics")
    return Metric(kind, k)


def parse_metrics(names: Iterable[str | Metric] | str) -> list[Metric]:
    """Parse a list (or a comma-separated string), dropping repeats, keeping order."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    out: list[Metric] = []
    for n in names:
        m = parse_metric(n)
        if m not in out:
            out.append(m)
    if not out:
        raise InputError("no metrics given", field="metrics")
    return out


DEFAULT_METRICS = ["ndcg@10", "mrr@10", "recall@100", "hit_rate@5", "precision@5", "map@100"]
