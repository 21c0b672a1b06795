"""On-disk cache of chunk spans: ``<cache_dir>/chunks/<key>.npy`` holds one row per chunk,
``(document position, start, end)``, written atomically (a killed writer leaves no file); a
``<key>.json`` beside it says which chunker made it and holds the sha256 of the spans. Spans are all
a chunking needs: chunk texts are slices of the parents' texts, which the key's corpus hash pins.

Nothing read back is trusted: an array of another dtype or shape, a span outside its document, or
spans whose sha256 is not the one recorded when they were written (an edited file, a file from
another cache) is ignored with a warning naming the file, and the corpus is chunked again. A wrong
span that passed would not fail: it would silently cut text out of the index.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.io import atomic

log = logging.getLogger("harness")

NAMESPACE = "chunks"


def _path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir).expanduser() / NAMESPACE / f"{key}.npy"


def _digest(rows: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(rows, dtype="<i8").tobytes()).hexdigest()


def load_spans(
    cache_dir: Path, key: str, n_docs: int, lengths: Sequence[int] | None = None
) -> list[list[tuple[int, int]]] | None:
    """Per document, its spans; None when not cached or not trustworthy (then they are recomputed).
    ``lengths`` (each document's text length) bounds every span."""
    path = _path(cache_dir, key)
    if not path.is_file():
        return None
    try:
        rows = np.load(path, allow_pickle=False)
        if rows.dtype.kind not in "iu":
            raise ValueError(f"dtype {rows.dtype}, expected int64")
        if rows.ndim != 2 or rows.shape[1] != 3:
            raise ValueError(f"shape {rows.shape}, expected (chunks, 3)")
        doc = rows[:, 0]
        if rows.size and (doc.min() < 0 or doc.max() >= n_docs or np.any(np.diff(doc) < 0)):
            raise ValueError("document positions out of order")
        if lengths is not None and rows.size:
            a, b = rows[:, 1], rows[:, 2]
            n = np.asarray(lengths, dtype=np.int64)[doc]
            ok = ((a >= 0) & (a < b) & (b <= n)) | ((a == 0) & (b == 0))
            if not ok.all():
                i = int(np.argmin(ok))
                raise ValueError(f"span ({a[i]}, {b[i]}) outside document {int(doc[i])} of {int(n[i])} characters")
        recorded = _recorded_digest(path)
        if recorded is None:
            raise ValueError("no sha256 recorded beside it")
        if recorded != _digest(rows):
            raise ValueError("its sha256 is not the one recorded when it was written (edited?)")
    except (OSError, ValueError) as e:
        log.warning("ignoring chunk cache %s (%s); chunking again", path, e)
        return None
    out: list[list[tuple[int, int]]] = [[] for _ in range(n_docs)]
    for d, a, b in rows.tolist():
        out[d].append((a, b))
    if any(not spans for spans in out):
        log.warning("ignoring incomplete chunk cache %s; chunking again", path)
        return None
    return out


def _recorded_digest(path: Path) -> str | None:
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    value = meta.get("sha256") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def save_spans(cache_dir: Path, key: str, per_doc: list[list[tuple[int, int]]], description: dict) -> Path:
    rows = np.array([(i, a, b) for i, spans in enumerate(per_doc) for a, b in spans], dtype=np.int64).reshape(-1, 3)
    path = _path(cache_dir, key)
    atomic.write_json(path.with_suffix(".json"), {**description, "sha256": _digest(rows)})
    atomic.write_npy(path, rows)
    return path
