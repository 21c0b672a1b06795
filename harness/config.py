"""The run configuration: YAML validated by pydantic, errors that name file, line and key.

```yaml
dataset: {path: ../shared/data/scifact, split: test}   # or: dataset: demo
metrics: [ndcg@10, mrr@10, recall@100]
depth: 100
cache_dir: ~/.cache/retrieval-harness
baseline: bm25
retrievers:
  bm25: {type: bm25}
  dense: {type: dense}
```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.errors import InputError
from harness.metrics.names import DEFAULT_METRICS, parse_metrics
from harness.registry import SpecBase, spec_class

DEFAULT_CACHE_DIR = "~/.cache/retrieval-harness"


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = "demo"
    split: str = "test"
    name: str | None = None


class StatsConfig(BaseModel):
    """Statistics against the baseline (significance tests and confidence intervals)."""

    model_config = ConfigDict(extra="forbid")

    bootstrap: int = Field(1000, ge=0, description="bootstrap resamples for confidence intervals")
    permutations: int = Field(10000, ge=0, description="random sign flips for the randomization test")
    alpha: float = Field(0.05, gt=0, lt=1)


class RunConfig(BaseModel):
    """Everything ``harness run`` needs; recorded, resolved, in every ``results.json``."""

    model_config = ConfigDict(extra="forbid")

    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    depth: int = Field(100, ge=1, description="k asked of every retriever")
    cache_dir: str = DEFAULT_CACHE_DIR
    baseline: str | None = None
    seed: int = 0
    latency_queries: int = Field(100, ge=0, description="queries timed one at a time for latency percentiles")
    warmup_queries: int = Field(5, ge=0)
    timeout_s: float | None = Field(None, gt=0, description="per retriever; a retriever over it is marked failed")
    stats: StatsConfig = Field(default_factory=StatsConfig)
    retrievers: dict[str, dict[str, Any]] = Field(min_length=1)

    @field_validator("dataset", mode="before")
    @classmethod
    def _dataset_shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, (str, os.PathLike)) else v

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [m for m in v.split(",") if m.strip()]
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics_valid(cls, v: list[str]) -> list[str]:
        return [m.name for m in parse_metrics(v)]

    @field_validator("retrievers", mode="before")
    @classmethod
    def _retrievers_shape(cls, v: Any) -> Any:
        if not isinstance(v, Mapping):
            raise ValueError("must be a mapping of name -> {type: ..., ...}")
        for name, spec in v.items():
            if not isinstance(spec, Mapping):
                raise ValueError(f"{name}: must be a mapping like {{type: bm25}}")
            if "type" not in spec:
                raise ValueError(f"{name}: missing 'type'")
        return v

    @model_validator(mode="after")
    def _baseline_known(self) -> RunConfig:
        if self.baseline is not None and self.baseline not in self.retrievers:
            raise ValueError(f"baseline {self.baseline!r} is not one of the retrievers ({', '.join(self.retrievers)})")
        return self

    def specs(self, source: str | None = None, yaml_text: str | None = None) -> dict[str, SpecBase]:
        """Validate every retriever spec with its type's model; check composition references."""
        specs: dict[str, SpecBase] = {}
        for name, raw in self.retrievers.items():
            try:
                cls = spec_class(str(raw.get("type")))
            except InputError as e:
                raise _located(e.message, ("retrievers", name, "type"), source, yaml_text) from None
            try:
                specs[name] = cls.model_validate(raw)
            except ValidationError as e:
                err = e.errors()[0]
                raise _located(err["msg"], ("retrievers", name, *err["loc"]), source, yaml_text) from None
        for name, spec in specs.items():
            for dep in spec.inputs():
                if dep not in specs:
                    raise _located(
                        f"builds on {dep!r}, which is not a retriever in this config ({', '.join(specs)})",
                        ("retrievers", name),
                        source,
                        yaml_text,
                    )
                if dep == name:
                    raise _located("a retriever cannot build on itself", ("retrievers", name), source, yaml_text)
        _check_acyclic(specs, source, yaml_text)
        return specs


def _check_acyclic(specs: Mapping[str, SpecBase], source: str | None, yaml_text: str | None) -> None:
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            cycle = " -> ".join([*path[path.index(n) :], n])
            raise _located(f"retrievers build on each other in a cycle: {cycle}", ("retrievers", n), source, yaml_text)
        state[n] = 1
        for dep in specs[n].inputs():
            visit(dep, [*path, n])
        state[n] = 2

    for n in specs:
        visit(n, [])


def _line_of(yaml_text: str | None, keys: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest key of ``keys`` found in the YAML document."""
    if not yaml_text:
        return None
    try:
        node = yaml.compose(yaml_text)
    except yaml.YAMLError:
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _located(msg: str, loc: tuple[Any, ...], source: str | None, yaml_text: str | None) -> InputError:
    field = ".".join(str(x) for x in loc if x != "__root__")
    return InputError(msg, path=source, line=_line_of(yaml_text, loc), field=field or None)


def parse_config(data: Any, *, source: str | None = None, yaml_text: str | None = None) -> RunConfig:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError("a config must be a YAML mapping (key: value)", path=source, line=1)
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (valid keys here: {_valid_keys(loc)})"
        raise _located(msg, loc, source, yaml_text) from None
    except InputError as e:  # metric names
        raise _located(e.message, ("metrics",), source, yaml_text) from None
    config.specs(source, yaml_text)
    return config


def _valid_keys(loc: tuple[Any, ...]) -> str:
    model: type[BaseModel] = RunConfig
    for key in loc[:-1]:
        field = model.model_fields.get(str(key))
        ann = getattr(field, "annotation", None) if field else None
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            break
    return ", ".join(model.model_fields)


def load_config(path: str | os.PathLike[str]) -> RunConfig:
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("config file not found", path=p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte {e.start})", path=p) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", path=p, line=mark.line + 1 if mark else None) from None
    return parse_config(data, source=str(p), yaml_text=text)


def default_config() -> RunConfig:
    """What bare ``harness run`` (and ``make bench``) runs: the demo dataset; BM25 (the baseline),
    dense, their RRF hybrid, MMR over dense, and a cross-encoder rerank of the hybrid when a
    reranker is available offline (otherwise one log line says how to get one)."""
    import importlib.util
    import logging

    metrics = list(DEFAULT_METRICS)
    if importlib.util.find_spec("harness.metrics.diversity") is not None:
        metrics.append("ild@10")
    retrievers: dict[str, dict[str, Any]] = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "hybrid": {"type": "hybrid", "of": ["bm25", "dense"], "fusion": "rrf"},
        "dense_mmr": {"type": "mmr", "of": "dense", "lambda": 0.7},
    }
    try:
        from retrievers.rerank import default_reranker, recommended_interpolate
    except ImportError:
        model = None
    else:
        model = default_reranker()
    if model:
        retrievers["hybrid_rerank"] = {"type": "rerank", "of": "hybrid", "top_n": 50, "model": model}
        alpha = recommended_interpolate(model)
        if alpha is not None and alpha < 1:
            retrievers["hybrid_rerank"]["interpolate"] = alpha
    else:
        logging.getLogger("harness").info(
            "no cross-encoder reranker available offline, so no hybrid_rerank row; to add one: "
            "`harness train-reranker --dataset PATH --split train` (saved where bare `harness run` finds it), "
            "or set $HARNESS_RERANKER to a CrossEncoder folder or hub name"
        )
    return parse_config(
        {"dataset": {"path": "demo", "split": "test"}, "metrics": metrics, "baseline": "bm25", "retrievers": retrievers}
    )
