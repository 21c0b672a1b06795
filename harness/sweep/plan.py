"""Grid points as nodes of one retriever graph, and the work they share.

A *variant* is one retriever of the config with some options overridden, built on variants of its
inputs. Its key hashes the validated spec and its inputs' keys, so two grid points that would run
the same thing (the same BM25 under two RRF points, say) are one node: each distinct variant runs
once, over every query of the sweep (selection and test together), and its run is kept. A later
benchmark call that needs a variant already run serves the kept run instead of running it again
(:class:`ServedRun`): a fusion sweep fuses its inputs' runs, it does not recompute them, and no
index is built twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.metrics.evaluate import mean
from harness.model import Document, GoldenDataset, Query
from harness.registry import SpecBase, spec_class
from harness.run import Run
from harness.sweep.spec import Point, point_label


@dataclass
class Variant:
    """A config retriever with ``point`` applied, built on the variants ``inputs`` (keys)."""

    key: str
    retriever: str
    point: Point
    raw: dict[str, Any]
    spec: SpecBase
    inputs: list[str]


class Planner:
    """Variants of the config's retrievers under a choice of points (see module doc)."""

    def __init__(self, retrievers: Mapping[str, Mapping[str, Any]]) -> None:
        self.retrievers = {n: dict(r) for n, r in retrievers.items()}
        self.variants: dict[str, Variant] = {}

    def variant(self, name: str, choice: Mapping[str, Point]) -> Variant:
        """``name`` with ``choice[name]`` applied, on its inputs under the same ``choice``."""
        point = dict(choice.get(name) or {})
        raw = {**self.retrievers[name], **point}
        spec = spec_class(str(raw["type"])).model_validate(raw)
        inputs = [self.variant(dep, choice).key for dep in spec.inputs()]
        ident = json.dumps({"spec": spec.model_dump(mode="json"), "inputs": inputs}, sort_keys=True, default=str)
        key = hashlib.sha256(ident.encode()).hexdigest()[:16]
        if key not in self.variants:
            self.variants[key] = Variant(key, name, point, raw, spec, inputs)
        return self.variants[key]

    def option_values(self, name: str, options: Sequence[str]) -> Point:
        """The values ``options`` take in ``name``'s spec as the config writes it (its defaults)."""
        raw = self.retrievers[name]
        dumped = spec_class(str(raw["type"])).model_validate(raw).model_dump(mode="json", by_alias=True)
        return {o: dumped.get(o) for o in options}


class ServedRun:
    """A run computed earlier in the sweep, served again: ``index`` does nothing, ``search`` is a
    lookup. The work was done once; the benchmark call that needs it again only re-scores it."""

    def __init__(self, run: Run, name: str) -> None:
        self.run, self.name = run, name

    def index(self, corpus: Sequence[Document]) -> None:
        """The retriever behind the run indexed the corpus when it first ran."""

    def search(self, queries: Sequence[Query], k: int) -> Run:
        return self.run.subset([q.id for q in queries])


@dataclass
class Work:
    """What the sweep actually ran: the figures behind "each variant runs once"."""

    benchmark_calls: int = 0
    #: variants run (indexed and searched), by retriever type
    ran: dict[str, int] = field(default_factory=dict)
    #: earlier runs served again to a later call instead of running again
    served: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark_calls": self.benchmark_calls,
            "ran": dict(self.ran),
            "served": self.served,
            "seconds": round(self.seconds, 3),
        }


#: ``benchmark(dataset, retrievers=..., metrics=..., ...)`` as :func:`harness.api.benchmark`
BenchmarkFn = Callable[..., Any]


class VariantRunner:
    """Runs variants through the public ``benchmark`` API, once each, and keeps their per-query
    scores (over every query of ``dataset``) and runs."""

    def __init__(
        self,
        dataset: GoldenDataset,
        planner: Planner,
        *,
        metrics: Sequence[str],
        benchmark: BenchmarkFn,
        depth: int,
        cache_dir: Path,
        seed: int,
        workdir: Path | None = None,
        show_progress: bool = False,
    ) -> None:
        self.dataset, self.planner, self.metrics = dataset, planner, list(metrics)
        self.benchmark, self.depth, self.cache_dir, self.seed = benchmark, depth, cache_dir, seed
        self.workdir, self.show_progress = workdir, show_progress
        self.scores: dict[str, dict[str, dict[str, float]]] = {}
        self.runs: dict[str, Run] = {}
        self.failed: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.work = Work()

    def name_of(self, key: str) -> str:
        """A readable node name, unique per variant: ``bm25[k1=0.9,b=0.4]`` (``#2`` when the same
        point sits on other inputs, as in folds that chose differently upstream)."""
        if key not in self.names:
            v = self.planner.variants[key]
            base = f"{v.retriever}[{point_label(v.point)}]" if v.point else v.retriever
            name, n = base, 1
            taken = set(self.names.values())
            while name in taken:
                n += 1
                name = f"{base}#{n}"
            self.names[key] = name
        return self.names[key]

    def ensure(self, keys: Sequence[str]) -> None:
        """Score every variant in ``keys`` not scored yet, in one benchmark call."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.scores and k not in self.failed]
        if not todo:
            return
        nodes: dict[str, Any] = {}
        order: dict[str, str] = {}

        def visit(key: str) -> None:
            if key in order:
                return
            name = self.name_of(key)
            if key in self.runs:
                order[key] = name
                nodes[name] = ServedRun(self.runs[key], name)
                return
            if key in self.failed:
                raise InputError(f"{name} failed earlier in the sweep: {self.failed[key]}")
            v = self.planner.variants[key]
            for dep in v.inputs:
                visit(dep)
            order[key] = name
            nodes[name] = self._node_spec(v)

        for key in todo:
            visit(key)
        served = sum(isinstance(n, ServedRun) for n in nodes.values())
        started = time.perf_counter()
        kwargs: dict[str, Any] = {
            "metrics": self.metrics,
            "baseline": None,
            "depth": self.depth,
            "cache_dir": self.cache_dir,
            "seed": self.seed,
            # the per-point statistics are not used: the sweep's own tests run on test queries only
            "stats": {"bootstrap": 0, "permutations": 0},
            "show_progress": self.show_progress,
        }
        kwargs.update(_quiet_timing(self.benchmark))
        with _working_dir(self.workdir):
            results = self.benchmark(self.dataset, retrievers=nodes, **kwargs)
        self.work.seconds += time.perf_counter() - started
        self.work.benchmark_calls += 1
        self.work.served += served
        runs = getattr(results, "runs", None) or {}
        for key, name in order.items():
            if name in results.failures:
                self.failed[key] = results.failures[name]
                continue
            self.scores[key] = results.query_scores(name)
            if key not in self.runs:
                v = self.planner.variants[key]
                self.work.ran[v.spec.type] = self.work.ran.get(v.spec.type, 0) + 1
                if name in runs:
                    self.runs[key] = runs[name]

    def _node_spec(self, v: Variant) -> dict[str, Any]:
        """``v``'s spec for the benchmark call, its inputs renamed to their node names."""
        names = [self.name_of(k) for k in v.inputs]
        raw = dict(v.raw)
        if names:
            if "of" not in raw:
                raise InputError(
                    f"{v.retriever!r}: a sweep can rewire stages whose inputs are named in `of`; "
                    f"{raw.get('type')!r} names them elsewhere",
                    field=f"retrievers.{v.retriever}",
                )
            raw["of"] = names if isinstance(raw["of"], list) else names[0]
        return raw

    def values(self, key: str, query_ids: Sequence[str], metric: str) -> np.ndarray:
        per_query = self.scores[key]
        return np.array([per_query[q][metric] for q in query_ids], dtype=np.float64)

    def mean(self, key: str, query_ids: Sequence[str], metric: str) -> float:
        """Mean of ``metric`` over ``query_ids`` (NaN when the variant failed; undefined per-query
        values are left out, as the comparison table does)."""
        if key in self.failed:
            return float("nan")
        v = self.values(key, query_ids, metric)
        return mean(v[~np.isnan(v)])


def _quiet_timing(benchmark: BenchmarkFn) -> dict[str, Any]:
    """No warm-up or one-query latency passes when the API has them: they would search (and for
    dense, encode) queries again, and a sweep compares quality, not latency."""
    import inspect

    try:
        params = inspect.signature(benchmark).parameters
    except (TypeError, ValueError):
        return {}
    return {k: 0 for k in ("latency_queries", "warmup_queries") if k in params}


@contextmanager
def _working_dir(folder: Path | None) -> Iterator[None]:
    """Relative paths in a config's specs are relative to the config file, as ``harness run``
    reads them; ``benchmark`` reads them relative to the working directory."""
    if folder is None:
        yield
        return
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
