"""Composition in Python, as in YAML: ``R("bm25") >> Rerank(model)``, ``Hybrid(bm25, dense)``,
``dense >> MMR(0.5)`` (PyTerrier's operators are the model).

An expression flattens into the same named specs a config's ``retrievers:`` holds (``of:`` naming
the inputs), so it builds the same :class:`~harness.engine.Graph` and runs through the same
engine. A sub-expression used twice is one node, run once::

    bm25, dense = R("bm25"), R("dense")
    benchmark("demo", {
        "bm25": bm25,
        "hybrid": Hybrid(bm25, dense),
        "hybrid_rerank": Hybrid(bm25, dense) >> Rerank("path/to/cross-encoder", top_n=50),
        "mine": R(MyRetriever(), name="mine"),
    })

(The two ``Hybrid(bm25, dense)`` above are two equal expressions, so two nodes; bind it to a name
and reuse the name to share it.) Inputs may also be given by name: ``Hybrid("bm25", "dense")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MMR", "Hybrid", "Pipeline", "R", "Rerank", "flatten"]


class Pipeline:
    """A node expression: a spec (``{"type": ..., options}``) or a retriever object, with inputs."""

    def __init__(
        self,
        spec: Mapping[str, Any] | None = None,
        *,
        obj: Any = None,
        inputs: tuple[Any, ...] = (),
        name: str | None = None,
        many_inputs: bool = False,
    ) -> None:
        self.spec = dict(spec or {})
        self.obj = obj
        self.inputs = tuple(inputs)
        self.name = name
        self.many_inputs = many_inputs

    def __rshift__(self, stage: Pipeline) -> Pipeline:
        """``first >> stage``: the stage applied to this pipeline's run."""
        if not isinstance(stage, Pipeline) or stage.obj is not None:
            raise TypeError("the right side of >> must be a stage such as Rerank(...) or MMR(...)")
        if stage.inputs:
            raise TypeError(f"{stage!r} already has its input")
        return Pipeline(stage.spec, inputs=(self,), name=stage.name)

    def named(self, name: str) -> Pipeline:
        return Pipeline(self.spec, obj=self.obj, inputs=self.inputs, name=name, many_inputs=self.many_inputs)

    @property
    def default_name(self) -> str:
        if self.obj is not None:
            return str(getattr(self.obj, "name", None) or type(self.obj).__name__)
        base = str(self.spec.get("type", "node"))
        return base if not self.inputs else f"{'_'.join(_label(i) for i in self.inputs)}_{base}"

    def __repr__(self) -> str:
        what = repr(self.obj) if self.obj is not None else repr(self.spec)
        return f"Pipeline({what}, inputs={len(self.inputs)})"


def _label(item: Any) -> str:
    return item if isinstance(item, str) else (item.name or item.default_name)


def R(retriever: str | Any, *, name: str | None = None, **options: Any) -> Pipeline:
    """A first-stage retriever: a type name with its options (``R("bm25", k1=1.2)``), or a team's
    object (anything with ``index`` and ``search``)."""
    if isinstance(retriever, str):
        return Pipeline({"type": retriever, **options}, name=name)
    if options:
        raise TypeError("options go to the object's constructor, not to R()")
    return Pipeline(obj=retriever, name=name)


def Hybrid(*parts: Pipeline | str, fusion: str = "rrf", name: str | None = None, **options: Any) -> Pipeline:
    """Fusion of two or more runs (``fusion: rrf`` or ``weighted``; see docs/reranking.md)."""
    if len(parts) < 2:
        raise TypeError("Hybrid needs at least two inputs")
    return Pipeline({"type": "hybrid", "fusion": fusion, **options}, inputs=parts, name=name, many_inputs=True)


def Rerank(model: str | None = None, *, name: str | None = None, **options: Any) -> Pipeline:
    """A cross-encoder rerank stage, to apply with ``>>``."""
    spec: dict[str, Any] = {"type": "rerank", **options}
    if model is not None:
        spec["model"] = model
    return Pipeline(spec, name=name)


def MMR(lam: float = 0.7, *, name: str | None = None, **options: Any) -> Pipeline:
    """MMR diversity re-ranking (``lambda``), to apply with ``>>``."""
    return Pipeline({"type": "mmr", "lambda": lam, **options}, name=name)


def flatten(retrievers: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: Pipeline | spec | object}`` as ``{name: spec | object}``, inputs first.

    Every sub-expression becomes a node named by the key it is bound to, its ``name=``, or its type
    (made unique); a stage's ``of`` names its inputs.
    """
    out: dict[str, Any] = {}
    assigned: dict[int, str] = {}
    bound = {id(v): k for k, v in retrievers.items() if isinstance(v, Pipeline)}
    taken = set(retrievers)

    def unique(base: str) -> str:
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        return name

    def visit(p: Pipeline | str, key: str | None = None) -> str:
        if isinstance(p, str):
            return p
        if id(p) in assigned:
            return assigned[id(p)]
        names = [visit(i) for i in p.inputs]
        name = key or bound.get(id(p)) or (p.name if p.name and p.name not in out else None) or unique(p.default_name)
        assigned[id(p)] = name
        if p.obj is not None:
            out[name] = p.obj
        else:
            spec = dict(p.spec)
            if names:
                spec["of"] = names if p.many_inputs else names[0]
            out[name] = spec
        return name

    for key, value in retrievers.items():
        if isinstance(value, Pipeline):
            visit(value, key)
        else:
            out[key] = value
    return out
