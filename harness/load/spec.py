"""The ``load:`` and ``cost:`` sections of a config, validated (errors name file, line and key).

```yaml
load:
  concurrency: [1, 2, 4, 8, 16]   # closed-loop levels (clients in flight)
  rate: [50, 100, 200]            # open-loop levels (Poisson arrivals per second); optional
  duration_s: 10                  # measured seconds per level (after warmup_s)
  warmup_s: 1
  timeout_s: 10                   # a request slower than this is a timeout; the open loop's drain
  workers: 64                     # open loop: threads sending (the most requests in flight)
  search_params: {ef_search: [16, 32, 64, 128, 256]}   # recall against QPS (an ANN retriever)
  sweep_concurrency: 1            # the closed-loop level each search setting is timed at
  sweep_duration_s: 3
cost: {usd_per_hour: 1.20, usd_per_1m_tokens: 0.02}
```
Every command-line flag of ``harness load`` overrides its key here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: a level or a duration beyond these is a typo, not a load test
MAX_CONCURRENCY = 1024
MAX_RATE = 100_000.0
MAX_DURATION_S = 3600.0


def _listify(v: Any) -> Any:
    if isinstance(v, str):
        return [x.strip() for x in v.split(",") if x.strip()]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return [v]
    return v


class CostSpec(BaseModel):
    """Prices: compute by the hour (the machine a retriever runs on) and embedding by the token."""

    model_config = ConfigDict(extra="forbid")

    usd_per_hour: float = Field(0.0, ge=0, allow_inf_nan=False, description="price of the serving machine per hour")
    usd_per_1m_tokens: float = Field(0.0, ge=0, allow_inf_nan=False, description="embedding price per 1M tokens")


class LoadSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concurrency: list[int] = Field(default_factory=lambda: [1, 2, 4, 8, 16])
    rate: list[float] = Field(default_factory=list)
    duration_s: float = Field(10.0, gt=0, le=MAX_DURATION_S, allow_inf_nan=False)
    warmup_s: float = Field(1.0, ge=0, le=MAX_DURATION_S, allow_inf_nan=False)
    timeout_s: float = Field(10.0, gt=0, le=MAX_DURATION_S, allow_inf_nan=False)
    workers: int = Field(64, ge=1, le=MAX_CONCURRENCY)
    search_params: dict[str, list[float | int | str]] = Field(default_factory=dict)
    sweep_concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY)
    sweep_duration_s: float = Field(3.0, gt=0, le=MAX_DURATION_S, allow_inf_nan=False)
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="query draw seed (default: the config's seed)")

    @field_validator("concurrency", "rate", mode="before")
    @classmethod
    def _list(cls, v: Any) -> Any:
        return _listify(v)

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if not 1 <= c <= MAX_CONCURRENCY]
        if bad:
            raise ValueError(f"concurrency levels must be 1..{MAX_CONCURRENCY}, got {bad[0]}")
        return list(dict.fromkeys(v))

    @field_validator("rate")
    @classmethod
    def _rates(cls, v: list[float]) -> list[float]:
        bad = [r for r in v if not 0 < r <= MAX_RATE]
        if bad:
            raise ValueError(f"rates must be > 0 and <= {MAX_RATE:g} per second, got {bad[0]}")
        return list(dict.fromkeys(v))

    @field_validator("search_params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        if isinstance(v, str):
            return parse_search_params(v)
        if isinstance(v, dict):
            return {k: _listify(x) for k, x in v.items()}
        return v


def parse_search_params(text: str) -> dict[str, list[Any]]:
    """``ef_search=16,32,64`` (``;`` between knobs) -> ``{"ef_search": [16, 32, 64]}``; numbers
    become ints or floats."""
    out: dict[str, list[Any]] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise ValueError(f"{part.strip()!r}: write NAME=V1,V2,... (e.g. ef_search=16,32,64)")
        out[name.strip()] = [_number(x.strip()) for x in values.split(",") if x.strip()]
    return out


def _number(x: str) -> Any:
    for kind in (int, float):
        try:
            return kind(x)
        except ValueError:
            pass
    return x
