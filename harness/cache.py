"""Content-addressed vector cache (embeddings, cross-encoder pair scores).

Layout: ``<cache_dir>/<namespace>/<key>/`` holds chunks, each a ``.npy`` (vectors, no pickle) and
a ``.keys`` file (one sha256 per row) written after it; the ``.keys`` file is the commit marker.
``key`` must identify everything that changes the vectors (model weights, max length,
normalisation...), so a different model can never read another's vectors.

Work is checkpointed: missing rows are computed ``chunk_rows`` at a time and each chunk is
committed as soon as it is done, so a killed 20-minute encode keeps everything it finished and
the next run computes only the rest.

Nothing read back is trusted blindly. A chunk that is empty, truncated, of another dtype or row
shape, has a row count that differs from its key count, or holds a NaN or infinite value is
logged (naming the file), set aside as ``*.corrupt`` so it is not read again, and its rows are
recomputed. Structure is checked when the cache is opened (the ``.npy`` header only); values
when a chunk is first used.

Reads are vectorised: rows are gathered from each memory-mapped chunk with one fancy-indexing
copy per chunk, straight into the output array.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from harness.io import atomic

log = logging.getLogger("harness")

#: Rows computed and committed per chunk: small enough that a killed run loses little, large
#: enough that a million rows are a thousand files, not a million.
CHUNK_ROWS = 1024
#: ...and at least this often (seconds of work): a slow model on a slow machine takes a minute per
#: 1,024 long documents, and an interrupt must not lose more than this
CHECKPOINT_S = 10.0
#: rows a slow compute is asked for first; later calls are sized to take about a fifth of
#: :data:`CHECKPOINT_S` (at most ``chunk_rows``)
_FIRST_PIECE = 64

_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(obj: object) -> str:
    """Stable short hash of a JSON-able description (cache key of a model configuration)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:24]


class CorruptChunk(ValueError):
    """A cache chunk that cannot be trusted."""


class VectorCache:
    """Rows addressed by content hash, for one model configuration (``key``).

    ``dtype`` and ``row_shape`` (e.g. ``(384,)`` for embeddings, ``()`` for scores), when given,
    are what every chunk must hold; otherwise the first valid chunk (or the first computed rows)
    sets them.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        namespace: str,
        key: str,
        description: object = None,
        *,
        dtype: np.dtype | type | str | None = None,
        row_shape: tuple[int, ...] | None = None,
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        self.dir = Path(root).expanduser() / namespace / key
        self.dir.mkdir(parents=True, exist_ok=True)
        if description is not None and not (self.dir / "model.json").exists():
            atomic.write_json(self.dir / "model.json", description)
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.row_shape = tuple(row_shape) if row_shape is not None else None
        self.chunk_rows = max(1, int(chunk_rows))
        #: key -> chunk number; rows are ``_rows[key]`` in chunk ``_chunks[number]``
        self._index: dict[str, tuple[int, int]] | None = None
        self._chunks: list[Path] = []
        self._arrays: dict[int, np.ndarray] = {}
        self._checked: set[int] = set()
        self.hits = 0
        self.misses = 0
        self.corrupt: list[Path] = []

    # ------------------------------------------------------------------ reading
    def _expect(self, arr: np.ndarray) -> None:
        """Raise :class:`CorruptChunk` unless ``arr`` has the cache's dtype and row shape."""
        if arr.ndim < 1:
            raise CorruptChunk("not an array of rows")
        if arr.dtype.kind not in "fiu" or arr.dtype.hasobject:
            raise CorruptChunk(f"dtype {arr.dtype} is not numeric")
        if self.dtype is not None and arr.dtype != self.dtype:
            raise CorruptChunk(f"dtype {arr.dtype}, expected {self.dtype}")
        if self.row_shape is not None and tuple(arr.shape[1:]) != self.row_shape:
            raise CorruptChunk(f"rows of shape {tuple(arr.shape[1:])}, expected {self.row_shape}")

    def _open_chunk(self, keys_file: Path) -> tuple[np.ndarray, list[str]]:
        npy = keys_file.with_suffix(".npy")
        try:
            keys = keys_file.read_text(encoding="ascii").split()
            if not all(_HEX64.match(k) for k in keys):
                raise CorruptChunk("keys file holds something other than sha256 keys")
            if npy.stat().st_size == 0:
                raise CorruptChunk("zero-byte file")
            arr = np.load(npy, mmap_mode="r", allow_pickle=False)
        except CorruptChunk:
            raise
        except (OSError, ValueError, EOFError, UnicodeDecodeError) as e:
            raise CorruptChunk(f"{type(e).__name__}: {e}") from None
        self._expect(arr)
        if arr.shape[0] != len(keys):
            raise CorruptChunk(f"{arr.shape[0]} rows for {len(keys)} keys")
        if self.dtype is None:
            self.dtype = arr.dtype
        if self.row_shape is None:
            self.row_shape = tuple(arr.shape[1:])
        return arr, keys

    def _set_aside(self, npy: Path, why: object) -> None:
        """Log a bad chunk and rename it out of the way, so no later run reads it again."""
        log.warning("ignoring corrupt cache chunk %s (%s); its rows will be recomputed", npy, why)
        self.corrupt.append(npy)
        for f in (npy.with_suffix(".keys"), npy):
            atomic.set_aside(f)

    def _load_index(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            index: dict[str, tuple[int, int]] = {}
            for keys_file in sorted(self.dir.glob("*.keys")):
                npy = keys_file.with_suffix(".npy")
                try:
                    arr, keys = self._open_chunk(keys_file)
                except CorruptChunk as e:
                    self._set_aside(npy, e)
                    continue
                c = len(self._chunks)
                self._chunks.append(npy)
                del arr  # reopened when read: an open map keeps every page it served resident
                index.update(zip(keys, ((c, r) for r in range(len(keys)))))
            self._index = index
        return self._index

    def _array(self, c: int) -> np.ndarray:
        arr = self._arrays.get(c)
        if arr is None:
            arr = self._arrays[c] = np.load(self._chunks[c], mmap_mode="r", allow_pickle=False)
        return arr

    def release(self) -> None:
        """Unmap the chunks read so far: the pages they served leave this process's memory (a
        mapped 100k x 384 cache would otherwise stay resident beside the FAISS index)."""
        self._arrays.clear()

    def _verify(self, c: int) -> bool:
        """Values of chunk ``c`` are finite (checked once per chunk); a bad chunk is dropped."""
        if c in self._checked:
            return True
        try:
            arr = self._array(c)
            self._expect(arr)
            finite = bool(np.isfinite(arr).all()) if arr.dtype.kind == "f" else True
            why = "holds NaN or infinite values"
        except CorruptChunk as e:  # replaced since the cache was opened
            finite, why = False, str(e)
        except (OSError, ValueError, EOFError) as e:  # a file truncated after its header was read
            finite, why = False, f"{type(e).__name__}: {e}"
        self._arrays.pop(c, None)
        if finite:
            self._checked.add(c)
            return True
        index = self._load_index()
        for k in [k for k, (cc, _) in index.items() if cc == c]:
            del index[k]
        self._arrays.pop(c, None)
        self._set_aside(self._chunks[c], why)
        return False

    def lookup(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(chunk, row)`` arrays for ``keys``; chunk -1 where the key is not cached (or its chunk
        is bad)."""
        index = self._load_index()
        miss = (-1, -1)
        loc = np.array([index.get(k, miss) for k in keys], dtype=np.int64).reshape(len(keys), 2)
        chunk, row = loc[:, 0], loc[:, 1]
        for c in np.unique(chunk[chunk >= 0]).tolist():
            if not self._verify(c):
                gone = chunk == c
                chunk[gone], row[gone] = -1, -1
        return chunk, row

    def _gather(self, out: np.ndarray, positions: np.ndarray, chunk: np.ndarray, row: np.ndarray) -> None:
        """``out[positions] = rows``, one fancy-indexing copy per chunk."""
        if not positions.size:
            return
        order = np.argsort(chunk, kind="stable")
        pos_s, chunk_s, row_s = positions[order], chunk[order], row[order]
        starts = np.flatnonzero(np.r_[True, chunk_s[1:] != chunk_s[:-1]])
        ends = np.r_[starts[1:], len(chunk_s)]
        for a, b in zip(starts.tolist(), ends.tolist()):
            c = int(chunk_s[a])
            out[pos_s[a:b]] = self._array(c)[row_s[a:b]]
            self._arrays.pop(c, None)  # unmapped as soon as it is read

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, found)``: the cached rows for ``keys`` (rows where ``found`` is False are
        undefined); nothing is computed. Not counted in ``hits``/``misses``."""
        chunk, row = self.lookup(keys)
        found = chunk >= 0
        self._load_index()
        out = np.zeros((len(keys), *(self.row_shape or ())), dtype=self.dtype or np.float32)
        if found.any():
            self._gather(out, np.flatnonzero(found), chunk[found], row[found])
        return out, found

    def put(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Commit computed rows (non-finite ones are left out)."""
        self._write_chunk(list(keys), np.asarray(rows))

    # ------------------------------------------------------------------ the one entry point
    def get_or_compute(
        self,
        keys: Sequence[str],
        compute: Callable[[list[int]], np.ndarray],
        *,
        on_chunk: Callable[[int], None] | None = None,
        whole_chunks: bool = False,
    ) -> np.ndarray:
        """Rows for ``keys``; ``compute(positions)`` is called for the missing ones, at most
        ``chunk_rows`` positions per call (``whole_chunks``: exactly that many but the last, for a
        compute that pays a start-up per call, such as a Ray actor pool), and committed to disk every
        ``chunk_rows`` rows or every
        :data:`CHECKPOINT_S` seconds of work, whichever comes first (an interrupt loses at most that).
        Rows computed as NaN or infinite are returned but never cached. ``on_chunk(n)`` is told
        after each computed chunk, then once with the number of rows read from the cache (progress)."""

        def pieces(todo: list[int]) -> Iterator[tuple[list[int], np.ndarray]]:
            piece = self.chunk_rows if whole_chunks else min(self.chunk_rows, _FIRST_PIECE)
            start = 0
            while start < len(todo):
                part = todo[start : start + piece]
                start += len(part)
                t0 = time.monotonic()
                rows = np.asarray(compute(part))
                took = time.monotonic() - t0
                yield part, rows
                # the next call takes about CHECKPOINT_S / 5 at the rate just measured
                rate = len(part) / took if took > 0 else float("inf")
                if not whole_chunks:
                    piece = int(max(min(self.chunk_rows, 16), min(self.chunk_rows, rate * CHECKPOINT_S / 5)))

        return self.get_or_stream(keys, pieces, on_chunk=on_chunk)

    def get_or_stream(
        self,
        keys: Sequence[str],
        stream: Callable[[list[int]], Iterable[tuple[Sequence[int], np.ndarray]]],
        *,
        on_chunk: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """As :meth:`get_or_compute`, for a compute that takes every missing position at once and
        yields ``(positions, rows)`` pieces in any order (a pipelined encoder that sorts its texts
        by length): the pieces are committed as they come, every ``chunk_rows`` rows or
        :data:`CHECKPOINT_S` seconds."""
        n = len(keys)
        chunk, row = self.lookup(keys)
        hit = chunk >= 0
        missing = np.flatnonzero(~hit)
        self.hits += int(hit.sum())
        self.misses += int(missing.size)
        out: np.ndarray | None = None
        if self.dtype is not None and self.row_shape is not None:
            out = np.empty((n, *self.row_shape), dtype=self.dtype)
        if missing.size:
            # duplicates among the missing keys are computed once
            first: dict[str, int] = {}
            todo = [i for i in missing.tolist() if first.setdefault(keys[i], i) == i]
            pending: list[int] = []
            pending_rows: list[np.ndarray] = []
            since = time.monotonic()
            done = 0
            for part, rows in stream(todo):
                part = list(part)
                rows = np.asarray(rows)
                if rows.shape[0] != len(part):
                    raise ValueError(f"compute returned {rows.shape[0]} rows for {len(part)} inputs")
                if out is None:
                    self.dtype = self.dtype or rows.dtype
                    self.row_shape = self.row_shape if self.row_shape is not None else tuple(rows.shape[1:])
                    out = np.empty((n, *self.row_shape), dtype=self.dtype)
                out[part] = rows
                done += len(part)
                pending.extend(part)
                pending_rows.append(rows)
                if len(pending) >= self.chunk_rows or time.monotonic() - since >= CHECKPOINT_S or done >= len(todo):
                    self._write_chunk([keys[i] for i in pending], np.concatenate(pending_rows))
                    pending, pending_rows, since = [], [], time.monotonic()
                if on_chunk is not None:
                    on_chunk(len(part))
            if done != len(todo):
                raise ValueError(f"compute returned {done} rows for {len(todo)} inputs")
            dups = [i for i in missing.tolist() if first[keys[i]] != i]
            if dups:
                assert out is not None
                out[dups] = out[[first[keys[i]] for i in dups]]
        if out is None:  # nothing asked, nothing known
            out = np.empty((n, *(self.row_shape or ())), dtype=self.dtype or np.float32)
        self._gather(out, np.flatnonzero(hit), chunk[hit], row[hit])
        self.release()
        if on_chunk is not None and hit.any():
            on_chunk(int(hit.sum()))
        return out

    def _write_chunk(self, keys: list[str], rows: np.ndarray) -> None:
        """Commit one chunk (rows, then keys: the keys file is the marker); non-finite rows are
        left out, so they are computed again rather than trusted."""
        if not keys:
            return
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.dtype.kind == "f":
            good = np.isfinite(rows.reshape(len(keys), -1)).all(axis=1)
            if not good.all():
                log.warning("%d computed rows are NaN or infinite; they are not cached", int((~good).sum()))
                keys = [k for k, g in zip(keys, good.tolist()) if g]
                rows = rows[good]
                if not keys:
                    return
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:32]
        npy = self.dir / f"{name}.npy"
        atomic.write_npy(npy, rows)
        atomic.write_text(self.dir / f"{name}.keys", "\n".join(keys) + "\n")
        index = self._load_index()
        c = len(self._chunks)
        self._chunks.append(npy)
        self._checked.add(c)
        index.update(zip(keys, ((c, r) for r in range(len(keys)))))
