"""The sweep's plan, checked before any retriever runs.

A point may override any option, including the ones that name inputs (``of``), and two points of
different retrievers may make them the same run (``bm25`` at ``k1: 1.2`` *is* a ``bm25b`` written
with ``k1: 1.2``). Found only while running, either is an error after a whole stage of work (or an
internal ``KeyError`` / ``RecursionError``); found here, it is one line naming the file, line and
point. Checked:

- every input a point names is a retriever of the config, not the retriever itself, and the inputs
  form no cycle;
- no stage the sweep would run takes one run twice: for every choice of points the coordinate
  search can reach (each retriever's points, with the retrievers swept before it at any of theirs,
  the rest at their config setting), the inputs of every retriever built are distinct variants.
  When that many choices would take too long to enumerate (more than :data:`MAX_CHOICES`), pairs of
  swept retrievers are checked instead, which finds every collision two retrievers can cause.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from harness.config import RunConfig, _located
from harness.errors import InputError
from harness.registry import spec_class
from harness.sweep.plan import Planner
from harness.sweep.spec import Point, SweepSpec, point_label

#: Choices enumerated for the duplicate-input check before falling back to pairs of retrievers.
MAX_CHOICES = 20_000


def check_plan(config: RunConfig, spec: SweepSpec, *, source: str | None = None, yaml_text: str | None = None) -> None:
    """Raise :class:`InputError` (file, line, key) for a point that rewires inputs to a missing
    retriever or a cycle, or a choice of points under which a retriever takes one run twice."""
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


def _choices(spec: SweepSpec) -> Iterable[tuple[str, dict[str, Point]]]:
    """``(swept retriever, choice)`` for every choice the coordinate search can reach (see module doc)."""
    names = list(spec.grid)
    for name in names:
        yield name, {}  # its default, which the chosen point is compared with
    total = 0
    for i in range(len(names)):
        n = 1
        for other in names[: i + 1]:
            n *= spec.n_points(other)
        total += n
    if total <= MAX_CHOICES:
        for i, name in enumerate(names):
            earlier = [[None, *spec.points(e)] for e in names[:i]]
            for held in itertools.product(*earlier):
                for p in spec.points(name):
                    choice = {e: q for e, q in zip(names[:i], held, strict=True) if q is not None}
                    yield name, {**choice, name: p}
        return
    for i, name in enumerate(names):
        for p in spec.points(name):
            yield name, {name: p}
        for earlier in names[:i]:
            for q in spec.points(earlier):
                for p in spec.points(name):
                    yield name, {earlier: q, name: p}


def _check_distinct_inputs(
    retrievers: Mapping[str, Mapping[str, Any]], spec: SweepSpec, source: str | None, yaml_text: str | None
) -> None:
    planner = Planner(retrievers)
    checked: set[str] = set()
    for swept, choice in _choices(spec):
        try:
            planner.variant(swept, choice)
        except InputError:
            raise
        except Exception as e:  # a spec the point makes invalid was reported above; anything else is a bug
            raise InputError(f"cannot plan the sweep at {_label(choice)}: {e}", field="sweep.grid") from None
        for key, v in planner.variants.items():
            if key in checked:
                continue
            checked.add(key)
            if len(set(v.inputs)) == len(v.inputs):
                continue
            dup = next(k for k in v.inputs if v.inputs.count(k) > 1)
            named = [n for n, k in zip(v.spec.inputs(), v.inputs, strict=True) if k == dup]
            raise _located(
                f"at {_label(choice)}, {' and '.join(repr(n) for n in named)} become the same run, so "
                f"{v.retriever!r} would take it twice; drop that point or make the retrievers differ",
                ("sweep", "grid", next(iter(choice), swept)),
                source,
                yaml_text,
            )


def _label(choice: Mapping[str, Point]) -> str:
    return "; ".join(f"{n} {point_label(p)}" for n, p in choice.items()) or "the config's settings"
