"""How much of a stream segment's writing was encoding, and whether its embeddings were computed (cold) or
read from the embedding cache (warm).

A dense row written with a cold cache took 3 to 88 writes/s on SciFact and its HNSW twin, reusing the
embeddings the first had just cached, 617 to 3,639: "HNSW writes 40x faster" measured the cache, not the
index. Each checkpoint's record now carries ``encode_s`` (seconds the segment's writes spent in
the encoder) and ``cache`` (``cold``/``warm`` as ``harness run``'s table marks them, :data:`WARM_ABOVE`), so
the write rate reads apart from the encoding.

The figures come from the retriever's encoder (``retrievers.encoder.Encoder``, what the dense, lancedb,
chroma, qdrant and pgvector rows encode with, held as ``.encoder``): its running ``encode_seconds`` and its
cache's ``hits``/``misses``. A retriever without one (bm25, a team's class) gets ``None`` for both; a
composed row gets its parts' encoders together.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from harness.results.table import WARM_ABOVE


class Reading(NamedTuple):
    """An encoder's running counters at one moment: seconds spent encoding, cache rows found and not."""

    seconds: float
    hits: int
    misses: int


def _encoder(obj: Any) -> Any:
    inner = getattr(obj, "inner", obj)  # a Guarded team retriever holds the object as .inner
    enc = getattr(inner, "encoder", None)
    return enc if isinstance(getattr(enc, "encode_seconds", None), (int, float)) else None


def read(obj: Any) -> Reading | None:
    """The encoder's running counters now; None for a retriever that encodes nothing the harness can see.
    A composed row (``written_parts()``, :mod:`harness.stream.composed`) reads the sum over the parts that
    take its writes: its stages' models (a cross-encoder, MMR's embeddings) work at search time, in its
    latency, not in its writes."""
    parts = getattr(obj, "written_parts", None)
    if callable(parts):
        readings = [r for r in (read(p) for p in parts()) if r is not None]
        if not readings:
            return None
        return Reading(*(sum(col) for col in zip(*readings)))
    enc = _encoder(obj)
    if enc is None:
        return None
    cache = getattr(enc, "cache", None)
    hits, misses = int(getattr(cache, "hits", 0) or 0), int(getattr(cache, "misses", 0) or 0)
    return Reading(float(enc.encode_seconds), hits, misses)


def since(obj: Any, before: Reading | None) -> dict[str, Any]:
    """``{"encode_s": ..., "cache": "cold" | "warm" | None}`` for what the encoder did since ``before``."""
    now = read(obj)
    if before is None or now is None:
        return {"encode_s": None, "cache": None}
    looked = (now.hits - before.hits) + (now.misses - before.misses)
    cache = None if looked <= 0 else ("warm" if (now.hits - before.hits) / looked > WARM_ABOVE else "cold")
    return {"encode_s": max(0.0, now.seconds - before.seconds), "cache": cache}
