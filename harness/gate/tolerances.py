"""Tolerances: the allowed absolute drop per retriever x metric, and their YAML file.

A tolerance is a gate's threshold, so every value must be a finite number >= 0: ``.nan`` would make
every comparison false (a drop never "exceeds" NaN: the gate passes everything) and ``.inf`` turns
the gate off. Both are refused with the file and key named, so a typo cannot silently loosen a gate.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness import defaults
from harness.errors import InputError
from harness.io import yamltext
from harness.metrics.names import metric_key as metric_key  # the gate's name for it
from harness.metrics.names import parse_metric
from harness.stats.levels import check_level

DEFAULT_TOLERANCE = 0.01
DEFAULT_ALPHA = defaults.ALPHA

#: a finite float (pydantic refuses NaN and +-Infinity with "Input should be a finite number")
Finite = Annotated[float, Field(allow_inf_nan=False)]


def _strict_metric(name: str, where: str = "") -> str:
    try:
        return parse_metric(name).name
    except InputError as e:
        raise ValueError(where + e.message) from None


def _non_negative(key: str, value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{key}: a tolerance must be a finite number, got {value}")
    if value < 0:
        raise ValueError(f"{key}: a tolerance must be >= 0")
    return value


def check_tolerance(value: float, what: str = "--tolerance") -> float:
    """A tolerance given on the command line or in code: finite and >= 0, else :class:`InputError`."""
    try:
        return _non_negative(what, float(value))
    except (TypeError, ValueError) as e:
        raise InputError(str(e).removeprefix(f"{what}: "), field=what) from None


def check_alpha(value: float, what: str = "alpha") -> float:
    """A significance level strictly between 0 and 1 and above float resolution (NaN fails both
    comparisons, so it is refused; :func:`harness.stats.levels.check_level`)."""
    return check_level(value, what)


class Tolerances(BaseModel):
    """Allowed absolute drop per retriever x metric; the most specific entry wins.

    ```yaml
    default: 0.01              # every metric of every retriever
    alpha: 0.05                # optional; --alpha overrides
    metrics: {ndcg@10: 0.005}  # per metric
    retrievers:                # per retriever (its own `default` too)
      bm25: {default: 0.02, recall@100: 0.03}
    non_inferiority: {ndcg@10: 0.02}  # optional: these metrics must show they are no worse than -margin
    ```
    """

    model_config = ConfigDict(extra="forbid")

    default: Finite = Field(DEFAULT_TOLERANCE, ge=0)
    alpha: Finite | None = Field(None, gt=0, lt=1)
    metrics: dict[str, Finite] = Field(default_factory=dict)
    retrievers: dict[str, dict[str, Finite]] = Field(default_factory=dict)
    #: per metric, a non-inferiority margin: replaces the regression rule for it (harness.gate.power)
    non_inferiority: dict[str, Finite] = Field(default_factory=dict)

    @field_validator("metrics", "non_inferiority")
    @classmethod
    def _metrics(cls, v: dict[str, float]) -> dict[str, float]:
        return {_strict_metric(k): _non_negative(k, t) for k, t in v.items()}

    @field_validator("retrievers")
    @classmethod
    def _retrievers(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {
            r: {
                (k if k == "default" else _strict_metric(k, f"{r}: ")): _non_negative(f"{r}.{k}", t)
                for k, t in m.items()
            }
            for r, m in v.items()
        }

    def get(self, retriever: str, metric: str) -> float:
        metric = metric_key(metric)
        own = self.retrievers.get(retriever, {})
        if metric in own:
            return own[metric]
        if metric in self.metrics:
            return self.metrics[metric]
        return own.get("default", self.default)

    @classmethod
    def coerce(cls, value: Tolerances | float | None) -> Tolerances:
        """A :class:`Tolerances`, a single default tolerance, or None (the defaults)."""
        if isinstance(value, Tolerances):
            return value
        if value is None:
            return cls()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"a tolerance must be a number, got {value!r}", field="tolerance")
        return cls(default=check_tolerance(value, "tolerance"))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tolerances:
        """From a YAML file; errors name the file and key."""
        p = Path(path).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("tolerances file not found", path=p) from None
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read tolerances file ({e})", path=p) from None
        data = yamltext.safe_load(text, path=p)
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InputError("a tolerances file must be a mapping (default, metrics, retrievers)", path=p)
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (valid keys: default, alpha, metrics, retrievers, non_inferiority)"
            raise InputError(msg, path=p, field=".".join(str(x) for x in err["loc"])) from None
