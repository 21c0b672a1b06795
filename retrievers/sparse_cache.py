"""Content-addressed cache of sparse rows (learned sparse document vectors), stored as CSR.

The sparse sibling of :class:`harness.cache.VectorCache`: the same layout and the same rules, for
rows whose width is a vocabulary (30,522 for a BERT SPLADE model) and whose values are mostly zero.
``<cache_dir>/sparse_embeddings/<key>/`` holds chunks, each a ``.npz`` of one CSR block
(``indptr``, ``indices``, ``data``; no pickle) and a ``.keys`` file (one sha256 per row) written
after it, the commit marker. ``key`` is a digest of everything that changes a row (the weights,
the document length, the pruning ``max_active_dims``, the prompt), so a changed configuration
never reads another's rows.

Nothing read back is trusted blindly: a chunk that does not load, whose row count differs from its
keys, whose width is not the vocabulary's, whose column indices fall outside it, or that holds a
NaN or infinite value is logged, set aside as ``*.corrupt`` and its rows recomputed.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from harness.io import atomic

log = logging.getLogger("harness")

_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")

#: the cache's folder under ``cache_dir`` (beside dense's ``embeddings``)
NAMESPACE = "sparse_embeddings"


class SparseRowCache:
    """CSR rows of width ``width`` addressed by content hash, for one model configuration."""

    def __init__(self, root: str | os.PathLike[str], key: str, description: object, *, width: int) -> None:
        self.dir = Path(root).expanduser() / NAMESPACE / key
        self.dir.mkdir(parents=True, exist_ok=True)
        if not (self.dir / "model.json").exists():
            atomic.write_json(self.dir / "model.json", description)
        self.width = int(width)
        self._index: dict[str, tuple[int, int]] | None = None
        self._chunks: list[Path] = []
        self._sizes: list[int] = []
        self.hits = 0
        self.misses = 0

    def _load_index(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            index: dict[str, tuple[int, int]] = {}
            for keys_file in sorted(self.dir.glob("*.keys")):
                try:
                    keys = keys_file.read_text(encoding="ascii").split()
                    if not all(_HEX64.match(k) for k in keys):
                        raise ValueError("keys file holds something other than sha256 keys")
                except (OSError, ValueError, UnicodeDecodeError) as e:
                    self._set_aside(keys_file.with_suffix(".npz"), e)
                    continue
                c = len(self._chunks)
                self._chunks.append(keys_file.with_suffix(".npz"))
                self._sizes.append(len(keys))
                index.update(zip(keys, ((c, r) for r in range(len(keys)))))
            self._index = index
        return self._index

    def _set_aside(self, npz: Path, why: object) -> None:
        log.warning("ignoring corrupt cache chunk %s (%s); its rows will be recomputed", npz, why)
        for f in (npz.with_suffix(".keys"), npz):
            atomic.set_aside(f)

    def _read(self, c: int, n_keys: int) -> Any:
        """Chunk ``c`` as a scipy CSR matrix, checked; raises ``ValueError`` when it cannot be trusted."""
        import scipy.sparse as sp

        try:
            with np.load(self._chunks[c], allow_pickle=False) as z:
                indptr, indices, data = z["indptr"], z["indices"], z["data"]
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise ValueError(f"{type(e).__name__}: {e}") from None
        if indptr.ndim != 1 or len(indptr) != n_keys + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
            raise ValueError(f"{len(indptr) - 1} rows for {n_keys} keys")
        if np.any(np.diff(indptr) < 0) or len(data) != len(indices) or data.dtype != np.float32:
            raise ValueError("not a CSR block of float32 values")
        if len(indices) and (indices.min() < 0 or indices.max() >= self.width):
            raise ValueError(f"column indices outside the vocabulary of {self.width}")
        if not np.isfinite(data).all():
            raise ValueError("holds NaN or infinite values")
        return sp.csr_matrix((data, indices, indptr), shape=(n_keys, self.width))

    def get(self, keys: list[str]) -> tuple[np.ndarray, Any]:
        """``(found, rows)``: which keys are cached, and their rows (a CSR matrix of ``found.sum()``
        rows, in the order of the found keys). Counts hits and misses."""
        import scipy.sparse as sp

        index = self._load_index()
        loc = np.array([index.get(k, (-1, -1)) for k in keys], dtype=np.int64).reshape(len(keys), 2)
        chunk, row = loc[:, 0], loc[:, 1]
        blocks, where = [], []
        for c in np.unique(chunk[chunk >= 0]).tolist():
            try:
                mat = self._read(c, self._sizes[c])
            except ValueError as e:
                self._set_aside(self._chunks[c], e)
                for k in [k for k, v in index.items() if v[0] == c]:
                    del index[k]
                chunk[chunk == c] = -1
                continue
            sel = np.flatnonzero(chunk == c)
            blocks.append(mat[row[sel]])
            where.append(sel)
        found = chunk >= 0
        self.hits += int(found.sum())
        self.misses += int((~found).sum())
        if not blocks:
            return found, sp.csr_matrix((0, self.width), dtype=np.float32)
        stacked = sp.vstack(blocks, format="csr")
        positions = np.concatenate(where)
        # rows in the order of the found keys
        order = np.argsort(positions, kind="stable")
        return found, stacked[order]

    def put(self, keys: list[str], rows: Any) -> None:
        """Commit one CSR block (rows in the order of ``keys``): the ``.npz``, then the keys file."""
        if not keys:
            return
        rows = rows.tocsr()
        rows.sort_indices()
        buf = io.BytesIO()
        np.savez(
            buf,
            indptr=rows.indptr.astype(np.int64),
            indices=rows.indices.astype(np.int32),
            data=rows.data.astype(np.float32),
        )
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:32]
        npz = self.dir / f"{name}.npz"
        atomic.write_bytes(npz, buf.getvalue())
        atomic.write_text(self.dir / f"{name}.keys", "\n".join(keys) + "\n")
        index = self._load_index()
        c = len(self._chunks)
        self._chunks.append(npz)
        self._sizes.append(len(keys))
        index.update(zip(keys, ((c, r) for r in range(len(keys)))))
