"""The ``sweep:`` block of a config: which options to try, and on which queries to choose.

```yaml
sweep:
  select_on: train          # a split of the dataset to choose on; or `folds: 5` (see below)
  metric: ndcg@10           # the one metric the choice maximises
  grid:                     # swept in this order; later ones hold earlier ones at their choice
    bm25: {k1: [0.5, 0.9, 1.2, 1.5], b: [0.3, 0.4, 0.6, 0.75]}     # every combination (4 x 4)
    hybrid: {rrf_k: [10, 30, 60, 100]}
    # a list of points instead of a grid:  hybrid: [{rrf_k: 10}, {fusion: weighted, weights: [0.7, 0.3]}]
```

``folds: N`` (instead of ``select_on``) splits the evaluated split's queries into N folds (seeded
by the config's ``seed``): each fold is scored with the point chosen on the other N - 1.

Parsed here with pydantic, so a mistake is an :class:`~harness.errors.InputError` naming the file,
line and key before any retriever runs: an unknown retriever, an option its type does not have, a
value the type rejects (every point is validated with the retriever's own spec class), an empty
list, or both / neither of ``select_on`` and ``folds``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from harness.config import RunConfig, _located
from harness.errors import InputError
from harness.metrics.names import parse_metric
from harness.registry import spec_class, strict_scalar_problem

#: A point: option -> value, applied over the retriever's spec in the config.
Point = dict[str, Any]

#: Points a sweep may hold (summed over its retrievers) unless ``--max-points`` says otherwise: every
#: point is at least one retriever run, so a grid past this is almost always a typo (``range`` pasted
#: twice), and a 1000 x 1000 grid would take a day before its first table.
DEFAULT_MAX_POINTS = 1_000
#: What ``--max-points`` may raise the bound to.
MAX_POINTS_LIMIT = 100_000


class SweepSpec(BaseModel):
    """The validated ``sweep:`` block (see module doc)."""

    model_config = ConfigDict(extra="forbid")
    #: set by :func:`harness.sweep.validate.validate_plan` once the plan passed
    _plan_checked: bool = PrivateAttr(default=False)

    select_on: str | None = Field(None, description="split whose queries choose the point")
    folds: int | None = Field(None, ge=2, description="cross-validate over the evaluated split's queries")
    metric: str = Field(description="the metric the choice maximises")
    grid: dict[str, dict[str, list[Any]] | list[dict[str, Any]]] = Field(min_length=1)

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        return parse_metric(v).name

    @field_validator("grid", mode="before")
    @classmethod
    def _grid_shape(cls, v: Any) -> Any:
        if not isinstance(v, Mapping):
            raise ValueError("must map a retriever name to {option: [values]} or to a list of {option: value}")
        for name, entry in v.items():
            if not isinstance(name, str):
                raise ValueError(f"{name!r}: a retriever name is text")
            if isinstance(entry, Mapping):
                if not entry:
                    raise ValueError(f"{name}: no options to sweep")
                for opt, values in entry.items():
                    if not isinstance(opt, str):
                        raise ValueError(f"{name}.{opt!r}: an option name is text")
                    if not isinstance(values, list) or not values:
                        raise ValueError(f"{name}.{opt}: must be a non-empty list of values, e.g. [0.5, 0.9]")
            elif isinstance(entry, list):
                if not entry or not all(isinstance(p, Mapping) and p for p in entry):
                    raise ValueError(f"{name}: a list of points must hold non-empty mappings, e.g. [{{rrf_k: 10}}]")
                if not all(isinstance(k, str) for p in entry for k in p):
                    raise ValueError(f"{name}: an option name is text")
            else:
                raise ValueError(f"{name}: must be {{option: [values]}} or a list of {{option: value}}")
        return v

    @model_validator(mode="after")
    def _one_selection(self) -> SweepSpec:
        if (self.select_on is None) == (self.folds is None):
            raise ValueError("give exactly one of `select_on: SPLIT` or `folds: N`")
        return self

    def n_points(self, name: str) -> int:
        """How many points ``name``'s grid holds, counted without building them."""
        entry = self.grid[name]
        if isinstance(entry, list):
            return len(entry)
        return math.prod(len(values) for values in entry.values())

    def points(self, name: str) -> list[Point]:
        """Every point of ``name``'s grid, in grid order (the last option varies fastest)."""
        entry = self.grid[name]
        if isinstance(entry, list):
            return [dict(p) for p in entry]
        keys = list(entry)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(entry[k] for k in keys))]

    def axes(self, name: str) -> list[tuple[str, list[Any]]] | None:
        """``[(option, values), ...]`` when ``name`` is swept as a grid, None for a list of points."""
        entry = self.grid[name]
        return list(entry.items()) if isinstance(entry, Mapping) else None


def point_label(point: Mapping[str, Any]) -> str:
    """``k1=0.9,b=0.4``: how a point is named in tables and node names."""
    return ",".join(f"{k}={_value_text(v)}" for k, v in point.items()) or "default"


def _value_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))  # the config's rrf_k: 60.0 and the grid's 60 are one setting: one label
    return json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) else str(v)


def parse_sweep(
    data: Any,
    config: RunConfig,
    *,
    source: str | None = None,
    yaml_text: str | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
) -> SweepSpec:
    """Validate the ``sweep:`` block against the config's retrievers; errors name file, line, key.

    The number of points is checked against ``max_points`` before a single point is built (a
    1000 x 1000 grid is refused in microseconds, not after planning a million variants). The plan
    itself (inputs a point would rewire to a missing retriever, to a cycle, or onto one run twice) is
    checked by :func:`harness.sweep.validate.validate_plan`, which ``load_sweep_config`` and ``run_sweep``
    call."""
    if isinstance(max_points, bool) or not isinstance(max_points, int) or not 1 <= max_points <= MAX_POINTS_LIMIT:
        raise InputError(f"must be an integer from 1 to {MAX_POINTS_LIMIT:,}, got {max_points!r}", field="--max-points")
    if data is None:
        raise _located("a sweep needs a `sweep:` block (see docs/sweeps.md)", ("sweep",), source, yaml_text)
    if not isinstance(data, Mapping):
        raise _located("must be a mapping (select_on/folds, metric, grid)", ("sweep",), source, yaml_text)
    problem = strict_scalar_problem(SweepSpec, data)  # folds: "5" / true are refused, not coerced
    if problem is not None:
        raise _located(problem[1], ("sweep", *problem[0]), source, yaml_text)
    try:
        spec = SweepSpec.model_validate(dict(data))
    except ValidationError as e:
        err = e.errors()[0]
        loc = ("sweep", *err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (valid keys here: {', '.join(SweepSpec.model_fields)})"
        raise _located(msg, _grid_loc(loc, msg), source, yaml_text) from None
    except InputError as e:  # the metric name
        raise _located(e.message, ("sweep", "metric"), source, yaml_text) from None
    sizes = {name: spec.n_points(name) for name in spec.grid}
    if sum(sizes.values()) > max_points:
        biggest = max(sizes, key=lambda n: sizes[n])
        raise _located(
            f"{sum(sizes.values()):,} points to run ({', '.join(f'{n}: {k:,}' for n, k in sizes.items())}); "
            f"a sweep runs at most {max_points:,} (each point is at least one retriever run): "
            f"sweep fewer values, or raise the bound with --max-points N (at most {MAX_POINTS_LIMIT:,})",
            ("sweep", "grid", biggest),
            source,
            yaml_text,
        )
    for name in spec.grid:
        if name not in config.retrievers:
            raise _located(
                f"{name!r} is not a retriever in this config ({', '.join(config.retrievers)})",
                ("sweep", "grid", name),
                source,
                yaml_text,
            )
        raw = config.retrievers[name]
        cls = spec_class(str(raw.get("type")))
        for point in spec.points(name):
            for opt in point:
                if opt == "type" or (opt not in cls.model_fields and not _is_alias(cls, opt)):
                    known = ", ".join(k for k in cls.model_fields if k != "type")
                    raise _located(
                        f"{raw.get('type')!r} has no option {opt!r} to sweep (its options: {known})",
                        ("sweep", "grid", name, opt),
                        source,
                        yaml_text,
                    )
            problem = strict_scalar_problem(cls, point)
            if problem is not None:
                raise _located(
                    f"{point_label(point)}: {problem[1]}", ("sweep", "grid", name, *problem[0]), source, yaml_text
                )
            try:
                cls.model_validate({**raw, **point})
            except ValidationError as e:
                err = e.errors()[0]
                opt = str(err["loc"][0]) if err["loc"] else ""
                raise _located(
                    f"{point_label(point)}: {err['msg'].removeprefix('Value error, ')}",
                    ("sweep", "grid", name, *((opt,) if opt in point else ())),
                    source,
                    yaml_text,
                ) from None
    return spec


def _grid_loc(loc: tuple[Any, ...], msg: str) -> tuple[Any, ...]:
    """Point the line number at the retriever named in a grid-shape message."""
    if loc[:2] == ("sweep", "grid") and len(loc) == 2:
        head = msg.split(":", 1)[0].split(".")
        return (*loc, *head) if head and head[0] and " " not in head[0] else loc
    return loc


def _is_alias(cls: type[BaseModel], name: str) -> bool:
    return any(f.alias == name for f in cls.model_fields.values())
