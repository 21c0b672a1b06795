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
from pathlib import Path
from typing import Any

import numpy as np

from harness.run import PAD, Run

#: lines per block: small enough that a block's Python strings stay small (~25 MB)
BLOCK_LINES = 1 << 18
#: files smaller than this go through the line reader (its exact errors cost nothing there)
MIN_BYTES = 4 << 20


def _precise() -> dict[str, str]:
    """pandas < 3 parses floats exactly only when asked (``round_trip``); pandas 3 always does, and
    deprecates the option."""
    try:
        import pandas as pd

        return {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    except (ImportError, ValueError):  # pragma: no cover
        return {}


_PRECISE = _precise()


class _GiveUp(Exception):
    """The file is not in the plain shape: the line reader takes over."""


def read_run_columnar(path: Path, *, name: str, doc_ids: Any = None) -> Run | None:
    """The run in ``path``, or None when the file is not in the plain shape (see the module doc)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return None
    try:
        return _read(pd, path, name=name, doc_ids=doc_ids)
    except (_GiveUp, ValueError, UnicodeDecodeError, OverflowError, OSError):
        return None
    except Exception as e:  # pandas' own parser errors (ParserError, EmptyDataError) and the like
        if type(e).__module__.startswith("pandas"):
            return None
        raise


def _read(pd: Any, path: Path, *, name: str, doc_ids: Any) -> Run:
    fixed = doc_ids is not None
    doc_index = pd.Index(list(doc_ids) if fixed else [], dtype=object)
    new_docs: list[np.ndarray] = []
    n_docs = len(doc_index)
    q_index = pd.Index([], dtype=object)
    q_codes: list[np.ndarray] = []
    d_codes: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    reader = pd.read_csv(
        path,
        sep=r"\s+",
        header=None,
        names=["q", "q0", "d", "rank", "s", "tag"],
        usecols=["q", "d", "s", "tag"],  # tag: only to see that a line has all six columns
        dtype={"q": object, "q0": object, "d": object, "rank": object, "s": np.float64, "tag": object},
        engine="c",
        na_filter=False,
        quoting=csv.QUOTE_NONE,
        comment=None,
        skip_blank_lines=True,
        encoding="utf-8",
        encoding_errors="strict",
        **_PRECISE,
        chunksize=BLOCK_LINES,
        on_bad_lines="error",
        index_col=False,
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
            # a comment line, or an id the line reader would warn about: its job
            if pd.Series(q).str.startswith("#").any():
                raise _GiveUp
            # a line with fewer than six columns leaves its last ones empty
            tag = block["tag"]
            if block.isna().to_numpy().any() or (tag == "").any() or (tag.isna()).any() or (pd.Series(d) == "").any():
                raise _GiveUp
            del tag
            qc, qu = pd.factorize(q)
            have = q_index.get_indexer(qu)
            fresh = have < 0
            if fresh.any():
                have[fresh] = np.arange(len(q_index), len(q_index) + int(fresh.sum()))
                q_index = q_index.append(pd.Index(qu[fresh], dtype=object))
            q_codes.append(have[qc].astype(np.int32))
            dc, du = pd.factorize(d)
            have = doc_index.get_indexer(du)
            fresh = have < 0
            if fresh.any():
                if fixed:
                    raise _GiveUp  # an unknown doc id: the line reader names it
                have[fresh] = np.arange(n_docs, n_docs + int(fresh.sum()))
                n_docs += int(fresh.sum())
                new_docs.append(np.asarray(du[fresh], dtype=object))
                doc_index = doc_index.append(pd.Index(du[fresh], dtype=object))
            d_codes.append(have[dc].astype(np.int64 if n_docs >= 2**31 else np.int32))
            scores.append(s)
            del block, q, d, s, qc, qu, dc, du
    if not q_codes:
        raise _GiveUp  # empty or comment-only: the line reader says what it says
    qa = np.concatenate(q_codes)
    del q_codes
    da = np.concatenate(d_codes)
    del d_codes
    sa = np.concatenate(scores)
    del scores
    nq = len(q_index)
    counts = np.bincount(qa, minlength=nq)
    depth = int(counts.max(initial=0))
    if len(qa) < 2 or bool((qa[1:] >= qa[:-1]).all()):
        order = None  # grouped by query, as run files are: lines are already in place
        qs = qa
    else:
        order = np.argsort(qa, kind="stable")  # each query's lines in file order, as the line reader keeps them
        qs = qa[order]
        del qa
    if order is None and bool((counts == depth).all()):
        # every query ranks the same number of documents, lines grouped: the columns are the matrix
        idx = da.reshape(nq, depth).astype(np.int64)
        del da, qs
        sc = sa.reshape(nq, depth)
        del sa
    else:
        starts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        col = np.arange(len(qs), dtype=np.int64) - starts[qs]
        idx = np.full((nq, depth), PAD, dtype=np.int64)
        idx[qs, col] = da if order is None else da[order]
        del da
        sc = np.full((nq, depth), -np.inf)
        sc[qs, col] = sa if order is None else sa[order]
        del sa, order, qs, col
    vocab = np.asarray(doc_index, dtype=object)
    return Run([str(x) for x in q_index], vocab, idx, sc, name=name)


def worth_it(path: Path) -> bool:
    """Large files only: small ones keep the line reader's exact behaviour at no cost."""
    try:
        return os.stat(path).st_size >= MIN_BYTES
    except OSError:
        return False
