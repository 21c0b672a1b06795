"""The sweep's plan, validated before any retriever runs (``check`` is the gate's word).

A point may override any option, including the ones that name inputs (``of``), and two points of
different retrievers may make them the same run (``bm25`` at ``k1: 1.2`` *is* a ``bm25b`` written
with ``k1: 1.2``). Found only while running, either is an error after a whole stage of work (or an
internal ``KeyError`` / ``RecursionError``); found here, it is one line naming the file, line and
point. Checked:

- every input a point names is a retriever of the config, not the retriever itself, and the inputs
  form no cycle;
- no stage the sweep would run takes one run twice: for every choice of points upstream of a
  retriever's inputs (each swept retriever at its config setting or at any of its points), its
  inputs are distinct variants. Keys are memoised on the swept retrievers that can reach each input,
  so a grid of hundreds of points is checked in well under a second; past :data:`MAX_CHOICES`
  combinations, each retriever's points alone and every pair of retrievers are checked (which finds
  every collision that two retrievers moving together can cause).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from harness.config import RunConfig, _located
from harness.registry import spec_class
from harness.sweep.plan import Planner
from harness.sweep.spec import Point, SweepSpec, point_label

#: Choices enumerated for the duplicate-input check before falling back to pairs of retrievers.
MAX_CHOICES = 20_000


def validate_plan(
    config: RunConfig, spec: SweepSpec, *, source: str | None = None, yaml_text: str | None = None
) -> None:
    """Raise :class:`InputError` (file, line, key) for a point that rewires inputs to a missing
    retriever or a cycle, or a choice of points under which a retriever takes one run twice. A spec
    checked once is not checked again (``run_sweep`` calls this for specs built in code)."""
    if spec._plan_checked:
        return
    retrievers = {n: dict(r) for n, r in config.retrievers.items()}
    base_inputs = {n: _inputs(r) for n, r in retrievers.items()}
    for name in spec.grid:
        for point in spec.points(name):
            inputs = _inputs({**retrievers[name], **point})
            if inputs == base_inputs[name]:
                continue
            for dep in inputs:
                if dep not in retrievers:
                    raise _located(
                        f"{point_label(point)}: {dep!r} is not a retriever in this config ({', '.join(retrievers)})",
                        ("sweep", "grid", name),
                        source,
                        yaml_text,
                    )
            cycle = _cycle(name, {**base_inputs, name: inputs})
            if cycle:
                raise _located(
                    f"{point_label(point)}: the inputs form a cycle ({' -> '.join(cycle)})",
                    ("sweep", "grid", name),
                    source,
                    yaml_text,
                )
    _check_distinct_inputs(retrievers, spec, source, yaml_text)
    spec._plan_checked = True


def _inputs(raw: Mapping[str, Any]) -> list[str]:
    return list(spec_class(str(raw.get("type"))).model_validate(dict(raw)).inputs())


def _cycle(start: str, graph: Mapping[str, list[str]]) -> list[str] | None:
    """The path of a cycle through ``start`` (``[a, b, a]``), or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for dep in graph.get(node, []):
            if dep == start:
                return [*path, dep]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, [*path, dep]))
    return None


class _Keys:
    """Variant keys as :class:`~harness.sweep.plan.Planner` computes them, memoised on the part of a
    choice that can reach the retriever (the swept retrievers upstream of it), so checking thousands
    of choices validates each distinct variant once."""

    def __init__(self, retrievers: Mapping[str, Mapping[str, Any]], spec: SweepSpec) -> None:
        self.planner = Planner(retrievers)
        self.spec = spec
        # every input a retriever may take: its config's and any a point of it names
        may: dict[str, set[str]] = {n: set(_inputs(r)) for n, r in retrievers.items()}
        for name in spec.grid:
            for point in spec.points(name):
                may[name] |= set(_inputs({**retrievers[name], **point}))
        self.upstream: dict[str, frozenset[str]] = {}
        for name in retrievers:
            seen: set[str] = set()
            stack = [name]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                stack.extend(may.get(node, ()))
            self.upstream[name] = frozenset(seen & set(spec.grid))
        self.memo: dict[tuple[str, tuple[tuple[str, int], ...]], str] = {}

    def key(self, name: str, choice: Mapping[str, int]) -> str:
        """The variant key of ``name`` under ``choice`` (swept retriever -> point index)."""
        relevant = tuple(sorted((n, i) for n, i in choice.items() if n in self.upstream[name]))
        memo_key = (name, relevant)
        if memo_key not in self.memo:
            points = {n: self.spec.points(n)[i] for n, i in relevant}
            self.memo[memo_key] = self.planner.variant(name, points).key
        return self.memo[memo_key]


def _check_distinct_inputs(
    retrievers: Mapping[str, Mapping[str, Any]], spec: SweepSpec, source: str | None, yaml_text: str | None
) -> None:
    """For every retriever with several inputs, every choice of points upstream of its inputs (a
    swept retriever at its config setting or at any of its points) must leave the inputs distinct."""
    keys = _Keys(retrievers, spec)
    for name, raw in retrievers.items():
        input_lists = [_inputs(raw)]
        if name in spec.grid:
            input_lists += [_inputs({**raw, **p}) for p in spec.points(name)]
        for inputs in {tuple(x) for x in input_lists if len(x) > 1}:
            swept = sorted(set().union(*(keys.upstream[i] for i in inputs)), key=list(spec.grid).index)
            for choice in _choices(spec, swept):
                found = [keys.key(i, choice) for i in inputs]
                if len(set(found)) == len(found):
                    continue
                dup = next(k for k in found if found.count(k) > 1)
                named = [i for i, k in zip(inputs, found, strict=True) if k == dup]
                held = {n: spec.points(n)[i] for n, i in choice.items()}
                raise _located(
                    f"at {_label(held)}, {' and '.join(repr(n) for n in named)} become the same run, so "
                    f"{name!r} would take it twice; drop that point or make the retrievers differ",
                    ("sweep", "grid", next(iter(held), name)),
                    source,
                    yaml_text,
                )


def _choices(spec: SweepSpec, swept: list[str]) -> Iterable[dict[str, int]]:
    """Choices over ``swept`` (absent: at the config's setting): all of them while there are at most
    :data:`MAX_CHOICES`, else each retriever's points alone and every pair (a collision needs at most
    two retrievers to move when the others stay at their settings)."""
    sizes = [spec.n_points(n) + 1 for n in swept]
    if math.prod(sizes) <= MAX_CHOICES:
        for combo in itertools.product(*(range(-1, k - 1) for k in sizes)):
            yield {n: i for n, i in zip(swept, combo, strict=True) if i >= 0}
        return
    yield {}
    for a, name in enumerate(swept):
        for i in range(spec.n_points(name)):
            yield {name: i}
            for other in swept[:a]:
                for j in range(spec.n_points(other)):
                    yield {other: j, name: i}


def _label(choice: Mapping[str, Point]) -> str:
    return "; ".join(f"{n} {point_label(p)}" for n, p in choice.items()) or "the config's settings"
