"""A large TREC qrels file read in column blocks: memory about the size of its columns.

:func:`harness.io.trec.read_qrels` builds a dict per query, which for a file judging a million
queries (4 judgments each) costs about 800 MB once compiled: every query a Python mapping, every
line a new doc-id string. This reader lets pandas' C tokenizer read blocks of lines, turns ids into
integer codes per block, and returns flat arrays grouped by query (the doc ids shared, one string
per distinct id), which :meth:`harness.metrics.evaluate.CompiledQrels.from_arrays` takes as they are.

It reads only the plain shape, where the line reader would return exactly the same judgments:
every line ``qid iter docno grade`` (four columns), grades plain decimal integers of at most 18
digits, no comment, no byte-order mark, no (query, doc) pair twice. Anything else (a BEIR tsv, a
header, a repeated pair, a grade the strict parser must look at) makes it give up (``None``), and
the line reader reads the file, with its located errors and warnings, exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.io.trec_columnar import (
    STRICT_BLOCKS,
    GiveUp,
    codes_in,
    columnar_or_none,
    large_allocations_apart,
    object_index,
    release_freed_memory,
    worth_it,
)

#: a grade both readers agree on without looking closer (int64 holds every 18-digit integer)
_PLAIN_GRADE = r"-?[0-9]{1,18}"


_GiveUp = GiveUp  # not the plain shape: the line reader takes over


def read_qrels_columnar(path: str | Path) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """``(query_ids, rows, docs, grades)``: judgments grouped by query in first-appearance order,
    each query's in file order (as :func:`~harness.io.trec.read_qrels`'s dicts keep them); ``rows``
    index ``query_ids``. None for a small file or one not in the plain shape."""
    p = Path(path)
    if not worth_it(p):
        return None
    large_allocations_apart()
    return columnar_or_none(lambda pd: _read(pd, p))


_codes = codes_in


def _read(pd: Any, path: Path) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    q_index = object_index([], pd)
    d_index = object_index([], pd)
    q_parts: list[np.ndarray] = []
    d_parts: list[np.ndarray] = []
    g_parts: list[np.ndarray] = []
    reader = pd.read_csv(
        path,
        names=["q", "it", "d", "g", "extra"],  # "extra": only to see that no line has a fifth column
        dtype=object,
        **STRICT_BLOCKS,
    )
    with reader:
        for block in reader:
            # a missing field reads as "" (na_filter off): a line with fewer, or more, than four columns
            if block.isna().to_numpy().any() or (block["it"] == "").any() or (block["extra"] != "").any():
                raise _GiveUp
            q, d, g = block["q"], block["d"], block["g"]
            if (q == "").any() or (d == "").any() or q.str.startswith(("#", "\ufeff")).any():
                raise _GiveUp
            if not g.str.fullmatch(_PLAIN_GRADE).all():
                raise _GiveUp
            qc, q_index = _codes(q.to_numpy(dtype=object), q_index, pd)
            dc, d_index = _codes(d.to_numpy(dtype=object), d_index, pd)
            q_parts.append(qc)
            d_parts.append(dc)
            g_parts.append(g.to_numpy(dtype=object).astype(np.int64))
            del block, q, d, g
    if not q_parts:
        raise _GiveUp  # empty: the line reader says so
    qa, da, ga = np.concatenate(q_parts), np.concatenate(d_parts), np.concatenate(g_parts)
    del q_parts, d_parts, g_parts
    if np.unique(qa * len(d_index) + da).size != qa.size:
        raise _GiveUp  # a pair judged twice: the line reader keeps it once or names the conflict
    order = np.argsort(qa, kind="stable")
    docs = np.asarray(d_index, dtype=object)[da[order]]
    out = [str(x) for x in q_index], qa[order], docs, ga[order]
    del q_index, d_index, qa, da, ga, order
    release_freed_memory()
    return out
