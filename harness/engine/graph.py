"""The retriever graph: named nodes (retrievers and the stages built on them), in dependency order.

A config's ``retrievers:``, ``harness.benchmark``'s mapping and Python composition
(``Hybrid(bm25, dense) >> Rerank(model)``) all become one :class:`Graph`, so the graph is walked in
one place (here) and executed in one place (:func:`harness.engine.schedule.execute`).

Each node carries a *config hash*: a digest of its resolved spec, the hashes of the nodes it builds
on, and what else decides its run (dataset fingerprint, depth, seed). A stored run whose hash
matches is the same computation, which is what lets ``--resume`` skip it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.errors import InputError
from harness.registry import build_order


@dataclass
class Node:
    """One named component; ``make`` builds it lazily, so a failure to build is local to the node.

    ``spec`` is the resolved, JSON-able (and secret-free) description recorded in results.json;
    ``reproducible`` is False for objects handed in from Python, whose behaviour no spec pins down:
    their stored runs are never reused.
    """

    name: str
    make: Callable[[], Any]
    inputs: list[str] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)
    allow_unknown_docs: bool = False
    reproducible: bool = True
    #: digests of the content the node reads (run file, module source, model files), part of its
    #: config hash: see :mod:`harness.engine.fingerprint`; computed when the hashes are
    content: Callable[[], Any] | None = None


class Graph:
    """Nodes by name, checked once: every input exists, no cycles; ``order`` is a topological order
    that keeps the caller's order where dependencies allow."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            if n.name in self.nodes:
                raise InputError(f"two retrievers are named {n.name!r}", field="retrievers")
            self.nodes[n.name] = n
        self.order = _topological(self.nodes)

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def __len__(self) -> int:
        return len(self.nodes)

    def closure(self, name: str) -> list[str]:
        """``name`` and every node it builds on, each once, dependencies first: the components whose
        cost a pipeline pays."""
        seen: list[str] = []

        def visit(n: str) -> None:
            for d in self.nodes[n].inputs:
                visit(d)
            if n not in seen:
                seen.append(n)

        visit(name)
        return seen

    def select(self, names: Iterable[str]) -> Graph:
        """The sub-graph that computes ``names`` (with everything they build on)."""
        wanted: list[str] = []
        for name in names:
            if name not in self.nodes:
                raise InputError(f"{name!r} is not a retriever here ({', '.join(self.nodes)})", field="--retrievers")
            for n in self.closure(name):
                if n not in wanted:
                    wanted.append(n)
        return Graph(self.nodes[n] for n in self.order if n in wanted)

    def suffixed(self, label: str) -> Graph:
        """The same graph with every node renamed ``name[label]`` (one copy per chunking)."""

        def rename(n: str) -> str:
            return f"{n}[{label}]"

        return Graph(
            replace(n, name=rename(n.name), inputs=[rename(d) for d in n.inputs])
            for n in (self.nodes[x] for x in self.order)
        )

    def config_hashes(self, context: Mapping[str, Any]) -> dict[str, str | None]:
        """Per node, sha256 of its spec, its inputs' hashes and ``context`` (dataset fingerprint,
        depth, seed...); None for a node built from a Python object (nothing pins its behaviour)."""
        out: dict[str, str | None] = {}
        for name in self.order:
            node = self.nodes[name]
            deps = [out[d] for d in node.inputs]
            if not node.reproducible or any(d is None for d in deps):
                out[name] = None
                continue
            payload = {"spec": node.spec, "inputs": list(zip(node.inputs, deps)), "context": dict(context)}
            if node.content is not None:
                payload["content"] = node.content()
            text = json.dumps(payload, sort_keys=True, ensure_ascii=True, default=str)
            out[name] = hashlib.sha256(text.encode("ascii")).hexdigest()
        return out


def _topological(nodes: Mapping[str, Node]) -> list[str]:
    return build_order({n: node.inputs for n, node in nodes.items()})
