"""What the engine needs from above it, made here for the entry points to hand in.

The engine never imports an adapter (``retrievers``), yet a run needs a Python object as a graph
node and document vectors for embedding metrics (the dense adapter's encoder). :mod:`harness.api`
builds those with the functions here and passes them to :class:`harness.engine.Session`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.engine import Graph, Node
from harness.errors import InputError
from harness.model import GoldenDataset
from harness.protocol import Retriever, Stage

__all__ = ["embedder", "object_node"]


def object_node(name: str, item: Any) -> Node:
    """A retriever object (or a plain ``search(queries, k)`` function) as a graph node."""
    if isinstance(item, type):
        raise InputError(
            f"retriever {name!r} is the class {item.__qualname__}; pass an instance ({item.__qualname__}(...))",
            field=f"retrievers.{name}",
        )
    kind = type(item)
    spec: dict[str, Any] = {"object": f"{kind.__module__}:{kind.__qualname__}"}
    if not isinstance(item, (Retriever, Stage)) and callable(item):
        from retrievers.custom import FunctionRetriever

        item = FunctionRetriever(item)
        spec = item.params()
    return Node(
        name=name,
        make=(lambda o=item: o),
        spec=spec,
        inputs=[],
        allow_unknown_docs=bool(getattr(item, "allow_unknown_docs", False)),
        reproducible=False,
    )


def embedder(graph: Graph, ds: GoldenDataset, cache_dir: Path, show_progress: bool) -> Any:
    """Document vectors for embedding metrics (``ild@k``) from the configured dense model: the
    first dense retriever's (or MMR stage's) ``model``, else the packaged default; through the
    embedding cache, so documents the dense retriever encoded are not encoded again."""
    from retrievers.encoder import Encoder

    model = None
    for name in graph.order:
        spec = graph[name].spec
        if spec.get("type") in ("dense", "mmr") and spec.get("model"):
            model = spec["model"]
            break
    encoder = Encoder(model, cache_dir=cache_dir, show_progress=False)
    index = ds.doc_index
    corpus = ds.corpus

    def embed(doc_ids: Sequence[str]) -> Any:
        import numpy as np

        known = [i for i, d in enumerate(doc_ids) if d in index]
        vecs = encoder.encode_documents([corpus[index[doc_ids[i]]] for i in known], progress=False)
        out = np.full((len(doc_ids), vecs.shape[1] if vecs.ndim == 2 and len(known) else 1), np.nan)
        if known:
            out[known] = vecs
        return out  # NaN rows: documents outside the corpus, left out of ild (with a warning)

    return embed
