"""The ``stream:`` section of a run config: how ``harness stream`` changes the index, and how it probes.

Every key is optional; the defaults below are the documented ones (docs/streaming.md). Shares are of
the whole corpus: ``initial`` is loaded before checkpoint 0, then each of ``steps`` write batches
inserts ``insert``, deletes ``delete`` and updates ``update`` of it, and is followed by a checkpoint.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: one step's writes may not take longer than this per document when paced (``rate``)
MAX_RATE = 1_000_000.0
#: the slowest pace: one write a day (a lower rate would sleep longer than a day between two writes)
MIN_RATE = 1 / 86_400


class StreamSpec(BaseModel):
    """``stream:`` (every key optional)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the runbook and of the probes drawn")
    initial: float = Field(0.5, ge=0, le=1, description="share of the corpus loaded before checkpoint 0")
    steps: int = Field(5, ge=0, le=10_000, description="write batches, each followed by a checkpoint")
    insert: float = Field(0.1, ge=0, le=1, description="share of the corpus inserted per step")
    delete: float = Field(0.02, ge=0, le=1, description="share of the corpus deleted per step")
    update: float = Field(0.02, ge=0, le=1, description="share of the corpus updated per step")
    rate: float = Field(
        0, ge=0, le=MAX_RATE, description="target writes per second (0: as fast as taken; else at least one a day)"
    )
    probes: int = Field(20, ge=0, le=100_000, description="documents probed per step (inserted, deleted, updated)")
    probe_deadline_s: float = Field(10.0, gt=0, le=86_400, description="how long a probe polls before 'never'")
    poll_s: float = Field(0.05, gt=0, le=60, description="seconds between two polls of the probes")
    k: int = Field(10, ge=1, le=10_000, description="a probe is found when its document is in the top k")
    settle: bool = Field(True, description="after the last step: the engine's maintenance, then one more checkpoint")

    @field_validator("rate")
    @classmethod
    def _pace(cls, v: float) -> float:
        if 0 < v < MIN_RATE:
            raise ValueError(
                f"must be 0 (as fast as the engine takes) or at least 1/86400 = {MIN_RATE:.4g} (one write a day); "
                f"got {v:g}, which would wait {1 / v:.3g} s between two writes"
            )
        return v

    @model_validator(mode="after")
    def _fits(self) -> StreamSpec:
        if self.initial + self.steps * self.insert > 1 + 1e-9:
            raise ValueError(
                f"initial + steps x insert = {self.initial:g} + {self.steps} x {self.insert:g} = "
                f"{self.initial + self.steps * self.insert:g} inserts more than the corpus (at most 1)"
            )
        return self
