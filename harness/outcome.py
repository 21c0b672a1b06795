"""What one node of a run produced: its run and cost, or the error that stopped it.

The engine's scheduler yields an :class:`Outcome` per node and the results folder
(:class:`harness.results.store.RunStore`) stores and reads it back, so the type sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.efficiency import Cost
from harness.run import Run

__all__ = ["Outcome"]


@dataclass
class Outcome:
    """What one node produced: its run and cost, or the error that stopped it."""

    name: str
    run: Run | None = None
    cost: Cost | None = None
    error: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: True when the run was read back from a results folder instead of computed (``--resume``)
    reused: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None
