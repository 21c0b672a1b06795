"""A TREC run file read in column blocks: memory about the size of the run's columns.

:func:`harness.io.trec.read_run` parses line by line into Python lists, which for a 1 GB run file
(20 million lines) costs about 5 GB: every id, rank and score a Python object. This reader lets
pandas' C tokenizer read blocks of lines (``sep=r"\\s+"``, scores parsed with round-trip
precision, so every float equals ``float(token)``), turns each block's ids into integer codes at
once, and keeps only three flat arrays (query code, document code, score: 16 bytes a line) and the
two vocabularies until the padded :class:`~harness.run.Run` is built.

It reads only files in the plain shape: every line ``qid Q0 docno rank score tag`` with six
columns, finite decimal scores, no comment, no byte-order mark. Anything else (a comment, a ragged
line, a bad score, invalid UTF-8, an unknown doc id) makes it give up (``None``), and the line
reader reads the file instead: it reports the problem with its line and column, or handles the
comment, exactly as before. The two readers give identical runs on every file both accept.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness.run import PAD, Run

#: lines per block: small enough that a block's Python strings stay small (~25 MB)
T = TypeVar("T")

BLOCK_LINES = 1 << 18
#: files smaller than this go through the line reader (its exact errors cost nothing there)
MIN_BYTES = 4 << 20


@cache
def _precise() -> dict[str, str]:
    """pandas < 3 parses floats exactly only when asked (``round_trip``); pandas 3 always does, and
    deprecates the option. Asked when a file is read, not at import: importing this module (every command
    that reads a run file) must not import pandas."""
    try:
        import pandas as pd

        return {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    except (ImportError, ValueError):  # pragma: no cover
        return {}


#: how both columnar readers (run files here, qrels in ``qrels_columnar``) ask pandas for a file: the
#: C parser, every field as written (no NA guessing, no quoting, no comments), strict UTF-8, a bad line
#: an error, in blocks of :data:`BLOCK_LINES` so a large file never sits in memory as text
STRICT_BLOCKS: dict[str, Any] = {
    "sep": r"\s+",
    "header": None,
    "engine": "c",
    "na_filter": False,
    "quoting": csv.QUOTE_NONE,
    "comment": None,
    "skip_blank_lines": True,
    "encoding": "utf-8",
    "encoding_errors": "strict",
    "chunksize": BLOCK_LINES,
    "on_bad_lines": "error",
    "index_col": False,
}


class GiveUp(Exception):
    """The file is not in the plain shape: the line reader takes over."""


_GiveUp = GiveUp


def columnar_or_none(read: Callable[[Any], T]) -> T | None:
    """``read(pandas)``, or None when pandas is missing or the file is not in the plain shape (the
    reader gave up, or pandas' parser refused a line): the line reader then takes the file and words
    its exact error. One place for both columnar readers (runs here, qrels in ``qrels_columnar``)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return None
    try:
        return read(pd)
    except (GiveUp, ValueError, UnicodeDecodeError, OverflowError, OSError):
        return None
    except Exception as e:  # pandas' own parser errors (ParserError, EmptyDataError) and the like
        if type(e).__module__.startswith("pandas"):
            return None
        raise


def object_index(values: Any, pd: Any) -> Any:
    """An Index of Python strings that stays one: pandas 3 infers ``str`` (arrow-backed) for an
    Index of strings, and then converts all of it back to Python objects on every ``get_indexer``
    (a million new strings a block, for a run of a million queries: time, and a heap left full of
    holes). Built with ``dtype=object``, and appended to only through :func:`codes_in`, it is not."""
    return pd.Index(np.asarray(values, dtype=object), dtype=object)


def _copy(value: Any) -> Any:
    """A new string equal to ``value`` (``str(value)`` and slicing return the same object)."""
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") if isinstance(value, str) else value


def codes_in(values: np.ndarray, index: Any, pd: Any, *, grow: bool = True) -> tuple[np.ndarray, Any]:
    """Integer codes of ``values`` in ``index`` (an :func:`object_index`, first-appearance order),
    new values appended: ids become codes a block at a time, with no dict of every id (both columnar
    readers use it). With ``grow=False`` a value not in ``index`` raises :class:`GiveUp`.

    The appended values are fresh copies, not the block's strings: those were allocated line by
    line among the block's other strings, and keeping one alive would keep its whole memory page
    from being handed back once the block is freed."""
    codes, uniques = pd.factorize(values)
    have = index.get_indexer(object_index(uniques, pd))
    fresh = have < 0
    if fresh.any():
        if not grow:
            raise GiveUp
        have[fresh] = np.arange(len(index), len(index) + int(fresh.sum()))
        new = np.empty(int(fresh.sum()), dtype=object)
        new[:] = [_copy(u) for u in uniques[fresh]]
        # concatenated, not ``Index.append``: that re-infers ``str`` (see object_index)
        index = object_index(np.concatenate([index.to_numpy(dtype=object), new]), pd)
    return have[codes], index


def read_run_columnar(path: Path, *, name: str, doc_ids: Any = None) -> Run | None:
    """The run in ``path``, or None when the file is not in the plain shape (see the module doc)."""
    large_allocations_apart()
    return columnar_or_none(lambda pd: _read(pd, path, name=name, doc_ids=doc_ids))


def _read(pd: Any, path: Path, *, name: str, doc_ids: Any) -> Run:
    fixed = doc_ids is not None
    doc_index = object_index(list(doc_ids) if fixed else [], pd)
    q_index = object_index([], pd)
    # the three columns, allocated once for every line the file can hold and filled a block at a
    # time: concatenating a list of blocks would hold each column twice at its peak
    cap = count_lines(path)
    qa = np.empty(cap, dtype=np.int32)
    da = np.empty(cap, dtype=np.int64 if cap >= 2**31 or (fixed and len(doc_index) >= 2**31) else np.int32)
    sa = np.empty(cap, dtype=np.float64)
    n = 0
    reader = pd.read_csv(
        path,
        names=["q", "q0", "d", "rank", "s", "tag"],
        usecols=["q", "d", "s", "tag"],  # tag: only to see that a line has all six columns
        dtype={"q": object, "q0": object, "d": object, "rank": object, "s": np.float64, "tag": object},
        **_precise(),
        **STRICT_BLOCKS,
    )
    first = True
    with reader:
        for block in reader:
            q = block["q"].to_numpy(dtype=object)
            d = block["d"].to_numpy(dtype=object)
            s = block["s"].to_numpy(dtype=np.float64)
            if s.dtype != np.float64 or not np.isfinite(s).all():
                raise _GiveUp
            if first:
                if len(q) and (str(q[0]).startswith("\ufeff")):
                    raise _GiveUp
                first = False
            # a comment line, or an id the line reader would warn about: its job (object Series:
            # a str one would copy the block's ids into arrow first)
            if pd.Series(q, dtype=object).str.startswith("#").any():
                raise _GiveUp
            # a line with fewer than six columns leaves its last ones empty
            tag = block["tag"]
            if block.isna().to_numpy().any() or (tag == "").any() or (tag.isna()).any() or (d == "").any():
                raise _GiveUp
            del tag, block
            m = len(q)
            if n + m > cap:
                raise _GiveUp  # more lines than the file has newlines: not the plain shape
            codes, q_index = codes_in(q, q_index, pd)
            qa[n : n + m] = codes
            # an unknown doc id under a fixed vocabulary: the line reader names it
            codes, doc_index = codes_in(d, doc_index, pd, grow=not fixed)
            if len(doc_index) >= 2**31 and da.dtype != np.int64:
                raise _GiveUp  # pragma: no cover - over two billion distinct documents
            da[n : n + m] = codes
            sa[n : n + m] = s
            n += m
            del q, d, s, codes
    if n == 0:
        raise _GiveUp  # empty or comment-only: the line reader says what it says
    qa, da, sa = qa[:n], da[:n], sa[:n]  # views: the unused tail of each was never written (never resident)
    release_freed_memory()
    nq = len(q_index)
    counts = np.bincount(qa, minlength=nq)
    depth = int(counts.max(initial=0))
    if len(qa) < 2 or bool((qa[1:] >= qa[:-1]).all()):
        order = None  # grouped by query, as run files are: lines are already in place
    else:
        order = stable_order(qa, nq)  # each query's lines in file order, as the line reader keeps them
    idx = np.empty((nq, depth), dtype=np.int64)
    sc = np.empty((nq, depth), dtype=np.float64)
    if bool((counts == depth).all()):
        # every query ranks the same number of documents: query q's lines are positions
        # q*depth .. (q+1)*depth of the grouped order, so the columns (gathered, if the file was not
        # grouped) are the matrix; nothing the size of the run is built beside it
        del qa
        if order is None:
            idx.ravel()[:] = da
            del da
            sc.ravel()[:] = sa
            del sa
        else:  # the widest column first, so it is freed first
            _gather(sc.ravel(), sa, order)
            del sa
            _gather(idx.ravel(), da, order)
            del da
        del order
    else:
        qs = qa if order is None else qa[order]
        del qa
        starts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        col = np.arange(len(qs), dtype=np.int64)
        col -= starts[qs]
        idx.fill(PAD)
        idx[qs, col] = da if order is None else da[order]
        del da
        sc.fill(-np.inf)
        sc[qs, col] = sa if order is None else sa[order]
        del sa, order, qs, col
    vocab = np.asarray(doc_index, dtype=object)
    qids = [str(x) for x in q_index]
    del doc_index, q_index  # their hash tables: not needed beside the run
    dropped = canonicalise_in_blocks(qids, vocab, idx, sc, name=name)
    release_freed_memory()
    return Run(qids, vocab, idx, sc, name=name, canonical=True, duplicates_dropped=dropped, adopt=True)


def count_lines(path: Path, chunk: int = 1 << 24) -> int:
    """Newlines in ``path`` (plus one for a last line without one): an upper bound on its data lines,
    read a chunk at a time (a 1 GB file: about a third of a second from the page cache)."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def stable_order(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """The stable argsort of ``codes`` (integers in ``[0, n_codes)``), by counting: each line's slot is
    its code's start plus how many lines of that code came before it. Built a block at a time into
    one int32 array (int64 past 2**31 lines): no int64 argsort output, no merge buffer."""
    n = len(codes)
    order = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    seen = np.zeros(n_codes + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_codes), out=seen[1:])  # where each code's slots start
    for lo in range(0, n, CANON_BLOCK):
        block = codes[lo : lo + CANON_BLOCK]
        within = np.argsort(block, kind="stable")  # the block's lines grouped by code, in file order
        grouped = block[within]
        first = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        rank = np.arange(len(block)) - np.repeat(first, np.diff(np.r_[first, len(block)]))
        order[seen[grouped] + rank] = within + lo
        np.add.at(seen, grouped[first], np.diff(np.r_[first, len(block)]))
    return order


#: allocations at least this large get pages of their own (glibc's ``M_MMAP_THRESHOLD``)
MMAP_THRESHOLD = 1 << 20


def large_allocations_apart() -> None:
    """Have glibc map every allocation of :data:`MMAP_THRESHOLD` or more on its own pages, handed
    back to the operating system the moment it is freed (``mallopt(M_MMAP_THRESHOLD)``).

    Left to itself glibc raises that threshold to the size of the largest block freed so far (up
    to 32 MB), so once a large file's first big arrays are freed, the per-block arrays of reading
    and scoring it (a few MB to 32 MB each) come from the heap, where the holes they leave stay
    resident: for a run of a million queries that was ~60 MB more at the evaluation's peak. Called
    before a large file is read; a no-op where there is no glibc."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to set this way
        pass


def release_freed_memory() -> None:
    """Hand memory freed so far back to the operating system (glibc's ``malloc_trim``).

    The blocks above allocate and free many arrays of a few MB; once glibc has freed one that large
    it raises its mmap threshold and serves the next ones from its heap, which it does not shrink on
    its own: without this, a 1 GB run read here kept ~500 MB of freed blocks resident through the
    steps that follow. A no-op where there is no glibc."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to hand back this way
        pass


def _gather(out: np.ndarray, src: np.ndarray, order: np.ndarray) -> None:
    """``out[:] = src[order]``, a block at a time (``src`` may be narrower than ``out``)."""
    for lo in range(0, len(order), CANON_BLOCK):
        out[lo : lo + CANON_BLOCK] = src[order[lo : lo + CANON_BLOCK]]


#: elements (rows x depth) canonicalised at a time: the sort's temporaries stay this small
CANON_BLOCK = 1 << 20


def canonicalise_in_blocks(qids: list[str], vocab: np.ndarray, idx: np.ndarray, sc: np.ndarray, *, name: str) -> int:
    """Put ``idx``/``sc`` in :class:`Run`'s canonical order, in place, a block of rows at a time
    (each block is a :class:`Run` of its own: the same de-duplication, sort and tie order, row by
    row), so the temporaries of de-duplicating and sorting are a block's, not the run's: a run with
    many queries, or lines in no order, would otherwise need several copies of itself at once.
    Returns the number of duplicate entries dropped."""
    dropped = 0
    step = max(1, CANON_BLOCK // max(1, idx.shape[1]))
    for lo in range(0, idx.shape[0], step):
        part = Run(qids[lo : lo + step], vocab, idx[lo : lo + step], sc[lo : lo + step], name=name)
        idx[lo : lo + step] = part.indices
        sc[lo : lo + step] = part.scores
        dropped += part.duplicates_dropped
    return dropped


def worth_it(path: Path) -> bool:
    """Large files only: small ones keep the line reader's exact behaviour at no cost."""
    try:
        return os.stat(path).st_size >= MIN_BYTES
    except OSError:
        return False
