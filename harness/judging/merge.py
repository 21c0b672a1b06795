"""``harness judge merge``: the old judgments plus the pool's new grades, as a new qrels file.

The old file is only read. A document graded in the pool that the old judgments grade differently
is a conflict and refuses the whole merge (a silent choice would change scores either way); the
same grade twice is fine. Beside the new file, ``<out>.provenance.json`` records where each part
came from (both files with their sha256, the time, how many judgments were added), so a golden set
grown this way can be traced.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from harness import clock
from harness.errors import InputError
from harness.io import atomic, staged
from harness.io.trec import read_qrels, write_qrels
from harness.judging.pool import read_pool
from harness.model import Qrels


@dataclass
class Merged:
    qrels: Qrels
    added: int
    already: int
    ungraded: int
    provenance: dict


def merge(pool: str | os.PathLike[str], qrels: str | os.PathLike[str] | None) -> Merged:
    """The merged judgments (nothing written); :class:`InputError` on the first conflict. ``qrels``
    None: no judgments yet (the first round of a new set, such as ``harness traces import``'s)."""
    pool_p, qrels_p = Path(pool), Path(qrels) if qrels is not None else None
    old = read_qrels(qrels_p) if qrels_p is not None else {}
    rows = read_pool(pool_p)
    merged: Qrels = {q: dict(j) for q, j in old.items()}
    added = already = ungraded = 0
    by_grade: dict[str, int] = {}
    for r in rows:
        if r.grade is None:
            ungraded += 1
            continue
        have = old.get(r.query_id, {}).get(r.doc_id)
        if have is not None:
            if have != r.grade:
                raise InputError(
                    f"query {r.query_id!r}, doc {r.doc_id!r}: graded {r.grade} in the pool {pool_p} "
                    f"but {have} in the judgments {qrels_p}; settle it in one of them and merge again",
                    path=pool_p,
                )
            already += 1
            continue
        merged.setdefault(r.query_id, {})[r.doc_id] = r.grade
        by_grade[str(r.grade)] = by_grade.get(str(r.grade), 0) + 1
        added += 1
    provenance = {
        "created": clock.stamp(),
        "qrels": {"path": str(qrels_p.resolve()), "sha256": _sha256(qrels_p), "judgments": _count(old)}
        if qrels_p is not None
        else {"path": None, "judgments": 0},
        "pool": {"path": str(pool_p.resolve()), "sha256": _sha256(pool_p), "rows": len(rows)},
        "added": added,
        "added_by_grade": dict(sorted(by_grade.items())),
        "already_judged_alike": already,
        "ungraded": ungraded,
        "judgments": _count(merged),
    }
    return Merged(merged, added, already, ungraded, provenance)


def write_merged(merged: Merged, qrels: str | os.PathLike[str] | None, out: str | os.PathLike[str]) -> Path:
    """Write ``out`` (TREC qrels) and its provenance sidecar; ``out`` must be a new file."""
    out_p = check_out(qrels, out)
    merged.provenance["out"] = str(out_p.resolve())
    write_qrels(out_p, merged.qrels)
    atomic.write_json(provenance_path(out_p), merged.provenance)
    return out_p


def merge_line(pool: str | os.PathLike[str], qrels: str | os.PathLike[str] | None, out: str | os.PathLike[str]) -> str:
    """``harness judge merge``: ``out`` checked, the merge written, and the line saying what it holds."""
    check_out(qrels, out)
    merged = merge(pool, qrels)
    path = write_merged(merged, qrels, out)
    # without --qrels there are no old judgments to count: the line starts from the new ones
    old = f"{merged.provenance['qrels']['judgments']:,} judgments from {qrels} plus " if qrels else ""
    return (
        f"{path}: {old}{merged.added:,} new "
        f"({merged.already:,} already judged alike, {merged.ungraded:,} left ungraded); provenance in "
        f"{provenance_path(path).name}"
    )


def check_out(qrels: str | os.PathLike[str] | None, out: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, an ``out`` that exists (above all the judgments themselves)."""
    out_p = Path(out)
    if qrels is not None and out_p.exists() and out_p.resolve() == Path(qrels).resolve():
        raise InputError("will not write here: it is the judgments being merged (they are never modified); choose a "
                         "new file", path=out_p, field="--out")  # fmt: skip
    staged.check_out(out_p, "new", file=True)
    staged.check_out(provenance_path(out_p), "new", file=True)
    return out_p


def provenance_path(out: str | os.PathLike[str]) -> Path:
    p = Path(out)
    return p.with_name(p.name + ".provenance.json")


def _sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _count(q: Qrels) -> int:
    return sum(len(j) for j in q.values())
