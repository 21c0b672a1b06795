"""Tolerances: the allowed absolute drop per retriever x metric, their YAML file, and every flag of
``harness check`` read and checked in one call (:func:`settings`: :class:`CheckOptions` in,
:class:`CheckSettings` out, before anything else is read).

A tolerance is a gate's threshold, so every value must be a finite number >= 0: ``.nan`` would make
every comparison false (a drop never "exceeds" NaN: the gate passes everything) and ``.inf`` turns
the gate off. Both are refused with the file and key named, so a typo cannot silently loosen a gate.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
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
#: load.json (harness.gate.load): p95 may rise by this share of the baseline's before it is a regression
DEFAULT_LATENCY_TOLERANCE = 0.5
#: load.json: QPS may fall by this share of the baseline's before it is a regression
DEFAULT_QPS_TOLERANCE = 0.3

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

    def table(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """:meth:`get` of every (retriever, metric) pair at once: the check reads its tolerances here,
        once, rather than coming back per row."""
        return {(r, m): self.get(r, m) for r, m in pairs}

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


class CheckOptions(BaseModel):
    """Every flag of ``harness check`` (``None``: not given)."""

    model_config = ConfigDict(frozen=True)

    baseline: str
    current: str
    tolerance: float | None = None
    tolerances: str | None = None
    alpha: float | None = None
    test: str = "randomization"
    permutations: int = defaults.PERMUTATIONS
    metrics: list[str] | None = None
    retrievers: list[str] | None = None
    latency_tolerance: float = DEFAULT_LATENCY_TOLERANCE
    qps_tolerance: float = DEFAULT_QPS_TOLERANCE
    allow_dataset_change: bool = False
    non_inferiority: float | None = None
    ni_alpha: float = DEFAULT_ALPHA
    require_power: float | None = None
    format: str = "text"
    summary: str | None = None
    junit: str | None = None
    history: str | None = None
    comment: str | None = None
    annotations: bool = False
    allow_incomplete: bool = False


class CheckSettings(BaseModel):
    """What a check runs with, every value checked: the tolerances, the resolved alpha, the test,
    the selection, non-inferiority and power (:func:`harness.gate.verdict.report` takes it as is)."""

    model_config = ConfigDict(frozen=True)

    tolerances: Tolerances = Field(default_factory=Tolerances)
    alpha: float = DEFAULT_ALPHA
    test: str = "randomization"
    permutations: int = defaults.PERMUTATIONS
    seed: int = defaults.SEED
    metrics: list[str] | None = None
    retrievers: list[str] | None = None
    allow_dataset_change: bool = False
    non_inferiority: float | None = None
    ni_alpha: float = DEFAULT_ALPHA
    #: the power the detectable drops are computed at; ``require_power``: ``--require-power`` (None: not given)
    power: float = 0.8
    require_power: float | None = None
    latency_tolerance: float = DEFAULT_LATENCY_TOLERANCE
    qps_tolerance: float = DEFAULT_QPS_TOLERANCE


#: the flags a :class:`CheckSettings` takes as they are (their checks are the parser's choices and types)
_AS_GIVEN = {
    "test", "permutations", "metrics", "retrievers", "allow_dataset_change", "latency_tolerance", "qps_tolerance"
}  # fmt: skip


def settings(o: CheckOptions, *, quality: bool = True) -> CheckSettings:
    """Every flag of ``o`` checked, in one reading for a results folder and for a suite:
    ``--non-inferiority``, ``--ni-alpha`` and ``--require-power`` first (the latter above the alpha),
    then, where quality results are checked (not two ``load.json`` alone), the tolerances file,
    ``--tolerance``, ``--alpha`` and ``--permutations``. :class:`InputError` on the first bad one."""
    margin = o.non_inferiority
    if margin is not None:
        margin = check_tolerance(margin, "--non-inferiority")
    ni_alpha = check_alpha(o.ni_alpha, "--ni-alpha")
    power = o.require_power
    if power is not None:
        check_alpha(power, "--require-power")
    _above_alpha(power, o.alpha)
    tol = Tolerances()
    if quality:
        tol = Tolerances.load(o.tolerances) if o.tolerances else tol
        if o.tolerance is not None:
            tol = tol.model_copy(update={"default": check_tolerance(o.tolerance, "--tolerance")})
        if o.alpha is not None:
            check_alpha(o.alpha, "--alpha")
        if o.permutations < 1:
            raise InputError("--permutations must be >= 1")
        _above_alpha(power, o.alpha if o.alpha is not None else tol.alpha)
    alpha = o.alpha if o.alpha is not None else tol.alpha
    return CheckSettings(
        **o.model_dump(include=_AS_GIVEN),
        tolerances=tol,
        alpha=DEFAULT_ALPHA if alpha is None else alpha,
        non_inferiority=margin,
        ni_alpha=ni_alpha,
        power=power if power is not None else 0.8,
        require_power=power,
    )


def _above_alpha(power: float | None, alpha: float | None) -> None:
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    if power is not None and not power > alpha:
        raise InputError(f"must be above the check's alpha ({alpha:g}), got {power:g}", field="--require-power")
