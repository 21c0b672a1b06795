"""Content-addressed vector cache (embeddings, cross-encoder pair scores).

Layout: ``<cache_dir>/<namespace>/<key>/`` holds chunks, each a ``.npy`` (vectors, no pickle) and
a ``.keys`` file (one sha256 per row) written after it; the ``.keys`` file is the commit marker.
``key`` must identify everything that changes the vectors (model weights, max length,
normalisation...), so a different model can never read another's vectors. A chunk that fails to
load (killed writer, disk trouble) is ignored and its rows are recomputed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from harness.io import atomic

log = logging.getLogger("harness")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(obj: object) -> str:
    """Stable short hash of a JSON-able description (cache key of a model configuration)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:24]


class VectorCache:
    """Rows addressed by content hash, for one model configuration (``key``)."""

    def __init__(self, root: str | os.PathLike[str], namespace: str, key: str, description: object = None) -> None:
        self.dir = Path(root).expanduser() / namespace / key
        self.dir.mkdir(parents=True, exist_ok=True)
        if description is not None and not (self.dir / "model.json").exists():
            atomic.write_json(self.dir / "model.json", description)
        self._index: dict[str, tuple[Path, int]] | None = None
        self._arrays: dict[Path, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def _load_index(self) -> dict[str, tuple[Path, int]]:
        if self._index is None:
            index: dict[str, tuple[Path, int]] = {}
            for keys_file in sorted(self.dir.glob("*.keys")):
                npy = keys_file.with_suffix(".npy")
                try:
                    keys = keys_file.read_text(encoding="ascii").split()
                    arr = np.load(npy, mmap_mode="r", allow_pickle=False)
                    if arr.shape[0] != len(keys):
                        raise ValueError(f"{arr.shape[0]} rows for {len(keys)} keys")
                except (OSError, ValueError, UnicodeDecodeError) as e:
                    log.warning("ignoring corrupt cache chunk %s (%s); its rows will be recomputed", npy, e)
                    continue
                self._arrays[npy] = arr
                for i, k in enumerate(keys):
                    index[k] = (npy, i)
            self._index = index
        return self._index

    def get_or_compute(self, keys: Sequence[str], compute: Callable[[list[int]], np.ndarray]) -> np.ndarray:
        """Rows for ``keys``; ``compute(positions)`` is called once for the missing ones."""
        index = self._load_index()
        missing = [i for i, k in enumerate(keys) if k not in index]
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        fresh = None
        if missing:
            # duplicates among the missing keys are computed once
            first: dict[str, int] = {}
            todo = [i for i in missing if first.setdefault(keys[i], i) == i]
            fresh_rows = np.asarray(compute(todo))
            self._write_chunk([keys[i] for i in todo], fresh_rows)
            fresh = {keys[i]: fresh_rows[j] for j, i in enumerate(todo)}
        out = None
        for i, k in enumerate(keys):
            if fresh is not None and k in fresh:
                row = fresh[k]
            else:
                npy, r = index[k]
                row = self._arrays[npy][r]
            if out is None:
                out = np.empty((len(keys), *np.shape(row)), dtype=np.asarray(row).dtype)
            out[i] = row
        if out is None:
            out = np.empty((0,), dtype=np.float32)
        return out

    def _write_chunk(self, keys: list[str], rows: np.ndarray) -> None:
        if not keys:
            return
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:32]
        npy = self.dir / f"{name}.npy"
        atomic.write_npy(npy, rows)
        atomic.write_text(self.dir / f"{name}.keys", "\n".join(keys) + "\n")
        arr = np.load(npy, mmap_mode="r", allow_pickle=False)
        self._arrays[npy] = arr
        index = self._load_index()
        for i, k in enumerate(keys):
            index[k] = (npy, i)
