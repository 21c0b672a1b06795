"""Hybrid retrieval: fuse the runs of other retrievers in the config (a stage, not a retriever).

```yaml
hybrid:   {type: hybrid, of: [bm25, dense], fusion: rrf}                  # rrf_k: 60
hybrid_w: {type: hybrid, of: [bm25, dense], fusion: weighted, weights: [0.5, 0.5], normalize: minmax}
```

The parts run once each and their runs are shared; the fusion itself is ``harness.fusion`` (see
there for ranks, missing documents and ties). The cost of a hybrid in the results is the sum of
its parts' and its own (``harness.efficiency.Cost.total``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from harness.fusion import RRF_K, rrf, weighted
from harness.model import Document, Query
from harness.registry import BuildContext, SpecBase
from harness.run import Run


class HybridSpec(SpecBase):
    type: Literal["hybrid"] = "hybrid"
    of: list[str] = Field(min_length=1, description="names of the retrievers to fuse")
    fusion: Literal["rrf", "weighted"] = "rrf"
    weights: list[float] | None = Field(None, description="one per retriever in `of` (rrf: 1 each; weighted: 1/n)")
    normalize: Literal["minmax", "zscore"] = Field("minmax", description="weighted fusion: per-query normalisation")
    rrf_k: float = Field(RRF_K, ge=0, le=1e9, allow_inf_nan=False, description="rrf: the k in 1 / (k + rank)")

    @model_validator(mode="after")
    def _check(self) -> HybridSpec:
        if len(set(self.of)) != len(self.of):
            raise ValueError(f"`of` names a retriever twice: {self.of}")
        if self.weights is not None:
            if len(self.weights) != len(self.of):
                raise ValueError(f"{len(self.weights)} weights for {len(self.of)} retrievers in `of` (one each)")
            if any(not math.isfinite(w) or w < 0 for w in self.weights):
                raise ValueError("weights must be finite numbers >= 0")
        return self

    def inputs(self) -> list[str]:
        return list(self.of)

    def build(self, ctx: BuildContext) -> Hybrid:
        return Hybrid(self)


class Hybrid:
    """``Stage``: fuses its input runs (in the order of ``of``)."""

    def __init__(self, spec: HybridSpec | None = None, **overrides: Any) -> None:
        if spec is None:
            spec = HybridSpec.model_validate(overrides)
        elif overrides:
            spec = HybridSpec.model_validate({**spec.model_dump(), **overrides})
        self.spec = spec
        self.name = "hybrid"

    def params(self) -> dict[str, Any]:
        return self.spec.model_dump(exclude={"type"})

    def index(self, corpus: Sequence[Document]) -> None:
        """Nothing to index: the parts did."""

    def transform(self, runs: Sequence[Run], queries: Sequence[Query], k: int) -> Run:
        s = self.spec
        if s.fusion == "rrf":
            fused = rrf(runs, k=s.rrf_k, weights=s.weights, depth=k)
        else:
            fused = weighted(runs, weights=s.weights, normalize=s.normalize, depth=k)
        return fused.subset([q.id for q in queries]).with_name(self.name)
