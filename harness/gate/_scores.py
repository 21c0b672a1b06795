"""The one place the gate reads a results object: validated scores, per-query matrices, provenance.

``harness check`` needs a results object's summary means, its per-query scores as a
(queries x metrics) matrix per retriever, its failures and a few manifest fields. Reading them here,
once, keeps the gate independent of how results are stored (schema 2: per-query arrays over
``query_ids``, read through ``Results.query_scores``; only this module knows).

Every score is validated up front: a NaN or an infinity is bad input, named by file and key
(``current results.json: per_query.bm25.q12.ndcg@10: not a finite number``). A gate must never
compare NaN (every comparison is false: the check passes) or infinity (an "improvement").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.results import Manifest, Results


def _number(value: Any, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"not a number ({value!r})", path=where, field=key)
    if not math.isfinite(value):
        raise InputError("not a finite number", path=where, field=key)
    return float(value)


@dataclass
class Scores:
    """One side of a check (baseline or current), validated.

    ``where`` names it in errors: ``"current results/nightly/results.json"``.
    """

    where: str
    summary: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, dict[str, float]]]
    failures: dict[str, str]
    manifest: dict[str, Any] = field(default_factory=dict)
    #: query id -> traffic weight (weighted results: harness.stats.weighted); None: unweighted
    weights: dict[str, float] | None = None

    @classmethod
    def of(cls, results: Results, side: str, label: str | None = None) -> Scores:
        """Validate ``results`` (every summary and per-query value finite) and wrap it."""
        where = f"{side} {_file_of(results, label)}" if label else side
        summary = {
            str(r): {str(m): _number(v, where, f"summary.{r}.{m}") for m, v in ms.items()}
            for r, ms in (results.summary or {}).items()
        }
        per_query = {
            str(r): {
                str(q): {str(m): _number(v, where, f"per_query.{r}.{q}.{m}") for m, v in ms.items()}
                for q, ms in results.query_scores(r).items()
            }
            for r in (results.per_query or {})
        }
        return cls(
            where=where,
            summary=summary,
            per_query=per_query,
            failures={str(k): str(v) for k, v in (results.failures or {}).items()},
            manifest=dict(results.manifest or {}),
            weights=results.weights.by_query(results.query_ids) if results.weights is not None else None,
        )

    # ------------------------------------------------------------------ reads
    def queries(self) -> set[str]:
        """Every query any retriever has a per-query score for."""
        return {q for per in self.per_query.values() for q in per}

    def query_order(self, retriever: str) -> list[str]:
        return list(self.per_query.get(retriever) or {})

    def has_per_query(self, retriever: str) -> bool:
        return bool(self.per_query.get(retriever))

    def matrix(self, retriever: str, qids: list[str], metrics: list[str]) -> np.ndarray:
        """Per-query scores as (len(qids), len(metrics)) float64; a missing cell is bad input."""
        per = self.per_query.get(retriever) or {}
        out = np.empty((len(qids), len(metrics)), dtype=np.float64)
        for i, q in enumerate(qids):
            row = per.get(q)
            if row is None:
                raise InputError(
                    f"no per-query scores for query {q!r}", path=self.where, field=f"per_query.{retriever}"
                )
            for j, m in enumerate(metrics):
                if m not in row:
                    raise InputError(
                        f"query {q!r} lacks metric {m!r} (other queries have it)",
                        path=self.where,
                        field=f"per_query.{retriever}",
                    )
                out[i, j] = row[m]
        return out

    def weights_of(self, qids: list[str], other: Scores | None = None) -> np.ndarray | None:
        """The weights of ``qids`` (this side's, else ``other``'s), or None when neither is weighted."""
        for side in (self, other):
            if side is not None and side.weights is not None:
                missing = [q for q in qids if q not in side.weights]
                if missing:
                    raise InputError(f"query {missing[0]!r} has no weight", path=side.where, field="weights")
                return np.array([side.weights[q] for q in qids], dtype=np.float64)
        return None

    def dataset(self) -> dict[str, Any]:
        return dict(Manifest(self.manifest).dataset.data)

    def git(self) -> dict[str, Any]:
        return Manifest(self.manifest).git

    def provenance(self) -> dict[str, Any]:
        """When and from which commit a result was made (for the summary)."""
        git = self.git()
        commit, dirty = git.get("commit"), git.get("dirty")
        return {
            "created": Manifest(self.manifest).created,
            "commit": (str(commit)[:10] + ("+dirty" if dirty else "")) if commit else None,
        }


def _file_of(results: Results, label: str) -> str:
    """The results.json a label (a file or a folder) stands for, as the user would find it."""
    p = Path(label).expanduser()
    if results.folder is not None and p.is_dir():
        return str(Path(label) / "results.json")
    return label
