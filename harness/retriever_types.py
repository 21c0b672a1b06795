"""The built-in retriever types, one record each: where the type's spec is, which pip extra it needs
(and what the missing-extra line calls it), and, for a type whose answers the harness does not
write, why ``harness stream`` cannot change it.

The one table the registry (:data:`harness.registry.BUILTIN`, the ``type:`` a config names), the
extras check (:mod:`harness.extras`: named without importing the type) and the stream's refusal
(:func:`harness.stream.engines.check_changeable`) read, so a new type is one line here. A module of
the base layer: it imports nothing, so the lowest reader may use it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetrieverType:
    """One built-in retriever type."""

    #: ``module:Class`` of its spec (imported only when a config uses the type)
    spec: str
    #: the pip extra it needs (None: the core install), and what the missing-extra line calls the type
    extra: str | None = None
    subject: str | None = None
    #: why ``harness stream`` cannot write to it (None: a type the stream can change)
    fixed: str | None = None


TYPES: dict[str, RetrieverType] = {
    "bm25": RetrieverType("retrievers.bm25:BM25Spec"),
    "dense": RetrieverType("retrievers.dense:DenseSpec", "dense", "dense retrievers"),
    "splade": RetrieverType("retrievers.sparse:SpladeSpec", "sparse", "splade retrievers"),
    "colbert": RetrieverType("retrievers.colbert:ColbertSpec", "multivector", "colbert retrievers"),
    "hybrid": RetrieverType("retrievers.hybrid:HybridSpec"),
    "rerank": RetrieverType("retrievers.rerank:RerankSpec", "rerank", "rerank stages"),
    "mmr": RetrieverType("retrievers.mmr:MMRSpec", "dense", "MMR stages"),
    "python": RetrieverType("retrievers.custom:PythonSpec"),
    "http": RetrieverType("retrievers.http:HttpSpec", fixed="answers from a service the harness does not write"),
    "run_file": RetrieverType("retrievers.run_file:RunFileSpec", fixed="answers from a run file"),
    "lancedb": RetrieverType("retrievers.vectordb.lance:LanceDBSpec", "lancedb", "lancedb retrievers"),
    "chroma": RetrieverType("retrievers.vectordb.chroma:ChromaSpec", "chroma", "chroma retrievers"),
    "qdrant": RetrieverType("retrievers.vectordb.qdrant:QdrantSpec", "qdrant", "qdrant retrievers"),
    "pgvector": RetrieverType("retrievers.vectordb.pgvector:PgvectorSpec", "pgvector", "pgvector retrievers"),
}


def extra_of(type_name: str) -> tuple[str, str] | None:
    """``(subject, extra)`` of a built-in type that needs an extra; None for a core type or a plugin."""
    t = TYPES.get(type_name)
    return (t.subject or f"{type_name} retrievers", t.extra) if t is not None and t.extra else None
