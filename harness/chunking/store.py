"""On-disk cache of chunk spans: ``<cache_dir>/chunks/<key>.npy`` holds one row per chunk,
``(document position, start, end)``, written atomically (a killed writer leaves no file); a
``<key>.json`` beside it says which chunker made it. Spans are all a chunking needs: chunk texts
are slices of the parents' texts, which the key's corpus hash pins.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from harness.io import atomic

log = logging.getLogger("harness")

NAMESPACE = "chunks"


def _path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir).expanduser() / NAMESPACE / f"{key}.npy"


def load_spans(cache_dir: Path, key: str, n_docs: int) -> list[list[tuple[int, int]]] | None:
    """Per document, its spans; None when not cached or unreadable (then they are recomputed)."""
    path = _path(cache_dir, key)
    if not path.is_file():
        return None
    try:
        rows = np.load(path, allow_pickle=False)
        if rows.ndim != 2 or rows.shape[1] != 3:
            raise ValueError(f"shape {rows.shape}")
        doc = rows[:, 0]
        if rows.size and (doc.min() < 0 or doc.max() >= n_docs or np.any(np.diff(doc) < 0)):
            raise ValueError("document positions out of order")
    except (OSError, ValueError) as e:
        log.warning("ignoring unreadable chunk cache %s (%s); chunking again", path, e)
        return None
    out: list[list[tuple[int, int]]] = [[] for _ in range(n_docs)]
    for d, a, b in rows.tolist():
        out[d].append((a, b))
    if any(not spans for spans in out):
        log.warning("ignoring incomplete chunk cache %s; chunking again", path)
        return None
    return out


def save_spans(cache_dir: Path, key: str, per_doc: list[list[tuple[int, int]]], description: dict) -> Path:
    rows = np.array([(i, a, b) for i, spans in enumerate(per_doc) for a, b in spans], dtype=np.int64).reshape(-1, 3)
    path = _path(cache_dir, key)
    atomic.write_json(path.with_suffix(".json"), description)
    atomic.write_npy(path, rows)
    return path
