"""How sure a judge is: one probability per grade, ``p_0`` ... ``p_G``, beside each grade.

``harness judge auto --probabilities`` writes them (:mod:`~harness.judging.auto`), ``harness judge
sample --active`` reads them to draw where the judge is unsure (:mod:`~harness.judging.active_sample`)
and ``--export-lara`` hands them on as LARA's CSV. One rule everywhere (:func:`check_row`): every
probability finite and >= 0, the row summing to 1 within :data:`TOLERANCE`; anything else is one
line naming the file, line and column, and nothing is written.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.io.csvcell import restore

#: how far a row of probabilities may sum from 1
TOLERANCE = 1e-6
#: the grades a judge gives: 0-3, so ``p_0`` ... ``p_3``
GRADES = 4


def columns(grades: int = GRADES) -> list[str]:
    """``["p_0", ..., "p_{grades-1}"]``."""
    return [f"p_{g}" for g in range(grades)]


def check_row(values: Sequence[object], where: str = "") -> list[float]:
    """``values`` as floats when they are a distribution over the grades; else :class:`ValueError`
    saying which one is wrong (the caller adds the file and line)."""
    out: list[float] = []
    for g, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"p_{g}: {v!r} is not a number")
        try:
            x = float(v)
        except ValueError:
            raise ValueError(f"p_{g}: {v!r} is not a number") from None
        if not math.isfinite(x) or x < 0:
            raise ValueError(f"p_{g}: {v!r} is not a probability (finite and >= 0)")
        out.append(x)
    if len(out) != GRADES:
        raise ValueError(f"expected {GRADES} probabilities (grades 0-{GRADES - 1}), got {len(out)}")
    total = math.fsum(out)
    if abs(total - 1) > TOLERANCE:
        raise ValueError(f"p_0..p_{GRADES - 1} sum to {total!r}, not 1 (within {TOLERANCE:g}){where}")
    return out


def check_matrix(rows: Sequence[Sequence[object]], n: int, who: str) -> np.ndarray:
    """A judge's ``probabilities(pairs)`` answer, checked: ``n`` rows, each a distribution over the
    grades. :class:`InputError` naming ``who`` and the first bad pair otherwise."""
    if not isinstance(rows, Sequence) or len(rows) != n:
        got = len(rows) if isinstance(rows, Sequence) else type(rows).__name__
        raise InputError(f"{who}: probabilities() must return one row per pair ({n}); it returned {got}")
    out = np.zeros((n, GRADES))
    for i, r in enumerate(rows):
        if not isinstance(r, Sequence) or isinstance(r, str):
            raise InputError(f"{who}: probabilities() row {i + 1}: {r!r} is not a list of {GRADES} numbers")
        try:
            out[i] = check_row(list(r))
        except ValueError as e:
            raise InputError(f"{who}: probabilities() row {i + 1}: {e}") from None
    return out


def read_probabilities(path: str | os.PathLike[str]) -> dict[tuple[str, str], np.ndarray]:
    """``{(query_id, doc_id): [p_0..p_G]}`` from a grade file ``judge auto --probabilities`` wrote.

    A file without the columns is a judge that gave no probabilities: one line saying how to get
    them. A row whose probabilities are missing or not a distribution: one line with its line."""
    p = Path(path)
    cols = columns()
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=p, field="--auto") from None
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte {e.start})", path=p, field="--auto") from None
    records: list[tuple[int, dict]] = []
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise InputError(f"not JSON ({e})", path=p, line=lineno) from None
                if not isinstance(rec, dict):
                    raise InputError("expected a JSON object per line", path=p, line=lineno)
                records.append((lineno, rec))
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        names = reader.fieldnames or []
        if not all(c in names for c in cols):
            raise InputError(
                f"no {', '.join(cols)} columns: the judge gave no probabilities (grade the pool with "
                "`harness judge auto ... --probabilities`)",
                path=p,
                field="--auto",
            )
        records = [(reader.line_num, {k: restore(v) if isinstance(v, str) else v for k, v in rec.items()})
                   for rec in reader]  # fmt: skip
    if records and not all(c in records[0][1] for c in cols):
        raise InputError(
            f"no {', '.join(cols)} fields: the judge gave no probabilities (grade the pool with "
            "`harness judge auto ... --probabilities`)",
            path=p,
            field="--auto",
        )
    out: dict[tuple[str, str], np.ndarray] = {}
    for lineno, rec in records:
        q, d = str(rec.get("query_id") or "").strip(), str(rec.get("doc_id") or "").strip()
        if not q or not d:
            raise InputError("query_id and doc_id must not be empty", path=p, line=lineno)
        vals = [rec.get(c) for c in cols]
        if any(v is None or v == "" for v in vals):
            raise InputError(
                "no probabilities on this row (the judge gave no grade): grade it again", path=p, line=lineno
            )
        try:
            out[q, d] = np.array(check_row(vals))
        except ValueError as e:
            raise InputError(str(e), path=p, line=lineno) from None
    return out


# ----------------------------------------------------------------------------- asking a judge


def probability_cache(cache_dir: Path, identity: list | None, source: str) -> Any:
    """The probabilities a judge gave, kept in ``<cache>/judge/probabilities.jsonl`` under the pair's
    key and ``source`` (how they were had: ``logprobs``, ``votes=K``, ``class``, ...); None for a
    judge that is never cached."""
    from harness.endpoint.fanout import ReplyCache

    if identity is None:
        return None
    return ReplyCache(cache_dir / "judge" / "probabilities.jsonl", [*identity, "probabilities", source],
                      _read_cached, lambda p, _o: {"p": list(p)})  # fmt: skip


def _read_cached(rec: dict[str, Any]) -> tuple[float, ...] | None:
    try:
        return tuple(check_row(rec["p"]))
    except (KeyError, TypeError, ValueError):
        return None


def gather(rows: Sequence[Any], judge: Any, keys: Sequence[str | None], cache: Any) -> np.ndarray:
    """Every row's ``p_0..p_3``: the cached ones under the row's key, the rest from the judge's
    ``probabilities(pairs)`` in its ``batch_size``, each answer checked (:func:`check_matrix`) and
    cached. Asked before any grade is written, so a judge whose probabilities are not a
    distribution stops the command with one line and no output file."""
    from harness.endpoint.client import Answer
    from harness.judging import umbrela
    from harness.judging.judge import Pair

    out = np.zeros((len(rows), GRADES))
    todo: list[int] = []
    for i, k in enumerate(keys):
        got = cache.get(k) if cache is not None and k is not None else None
        if got is not None:
            out[i] = got
        else:
            todo.append(i)
    batch = max(1, int(getattr(judge, "batch_size", 32)))
    for start in range(0, len(todo), batch):
        idx = todo[start : start + batch]
        pairs = [Pair(rows[i].query_id, rows[i].query, rows[i].doc_id, umbrela.passage(rows[i].title, rows[i].text))
                 for i in idx]  # fmt: skip
        m = check_matrix(judge.probabilities(pairs), len(pairs), f"judge {judge.name!r}")
        for j, i in enumerate(idx):
            out[i] = m[j]
            if cache is not None and keys[i] is not None:
                cache.put(keys[i], tuple(map(float, m[j])), Answer())
    return out


def check_capable(judge: Any, choice: str) -> str:
    """How ``judge`` says how sure it is (its ``probability_source``, else ``class``); one line
    naming ``--probabilities`` when it has no ``probabilities(pairs)``."""
    if not callable(getattr(judge, "probabilities", None)):
        raise InputError(
            f"judge {choice!r} has no probabilities(pairs) method: it cannot say how sure it is (add one "
            "returning one [p_0, p_1, p_2, p_3] per pair, summing to 1)",
            field="--probabilities",
        )
    return str(getattr(judge, "probability_source", "class"))


def set_columns(rows: Sequence[Any], probs: np.ndarray) -> None:
    """``p_0..p_3`` into each row's other columns (written beside ``grade``)."""
    for r, p in zip(rows, probs):
        r.extra.update({c: float(x) for c, x in zip(columns(), p)})


# ----------------------------------------------------------------------------- LARA


def check_lara(path: str | None, with_probabilities: bool) -> Path | None:
    """``--export-lara FILE``: needs ``--probabilities``, a new file ending in .csv."""
    if path is None:
        return None
    if not with_probabilities:
        raise InputError("needs --probabilities (LARA reads the judge's probabilities)", field="--export-lara")
    p = Path(path)
    if p.suffix.lower() != ".csv":
        raise InputError("LARA reads a .csv file", field="--export-lara")
    if p.exists():
        raise InputError("exists; choose a new file", path=p, field="--export-lara")
    return p


def export_lara(rows: Sequence[Any], path: Path) -> int:
    """LARA's graded input (RikiyaT/LARA, README: ``topic_id,doc_id,annotation,prob_0,...,prob_k``;
    ``annotation`` the judge's grade), one line per graded row, written atomically; how many."""
    from harness.io import atomic

    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["topic_id", "doc_id", "annotation", *(f"prob_{g}" for g in range(GRADES))])
    n = 0
    for r in rows:
        if r.grade is None:
            continue
        w.writerow([r.query_id, r.doc_id, r.grade, *(repr(float(r.extra[c])) for c in columns())])
        n += 1
    atomic.write_text(path, buf.getvalue())
    return n
