"""The runbook: the writes of a stream, one operation a line, drawn from a seed or replayed from a file.

```
{"op": "insert", "ids": ["d1", "d7"]}
{"op": "checkpoint"}
{"op": "delete", "ids": ["d3"]}
{"op": "update", "ids": ["d7"]}
{"op": "settle"}
{"op": "checkpoint"}
```

The first ``insert`` before the first checkpoint is the initial load (the retriever's ``index``);
every later write goes through its ``add``/``delete``/``update``. An update writes a new version of
the same id: its text is the document's with one line appended, ``Revision N of this document.``,
so every version differs from the last (an engine still serving an old one is seen, docs/streaming.md).

A drawn runbook puts relevant documents (grade >= 1 in the qrels) among the later inserts, and one
in each step's deletes and updates while any is visible, so every figure of a checkpoint is exercised.
The same seed gives the same file byte for byte.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import InputError
from harness.model import Document, GoldenDataset
from harness.stream.spec import StreamSpec

WRITES = ("insert", "delete", "update")
OPS = (*WRITES, "checkpoint", "settle")


@dataclass(frozen=True)
class Op:
    """One line of a runbook."""

    op: str
    ids: tuple[str, ...] = ()
    line: int = 0

    def to_line(self) -> str:
        body: dict[str, object] = {"op": self.op}
        if self.op in WRITES:
            body["ids"] = list(self.ids)
        return json.dumps(body, ensure_ascii=False) + "\n"


@dataclass
class Visible:
    """What a search could find at a point of the runbook: doc id -> version (0: as in the corpus)."""

    versions: dict[str, int] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    def apply(self, op: Op, where: str = "runbook") -> None:
        """Apply one write, refusing what cannot happen (located: ``where``, the op's line, ``ids``)."""
        seen: set[str] = set()
        for i in op.ids:
            if i in seen:
                raise InputError(f"{op.op} names {i!r} twice", path=where, line=op.line, field="ids")
            seen.add(i)
            held = i in self.versions
            if op.op == "insert" and held:
                raise InputError(f"insert of {i!r}, which is already visible", path=where, line=op.line, field="ids")
            if op.op != "insert" and not held:
                why = "deleted already" if i in self.deleted else "not inserted"
                raise InputError(f"{op.op} of {i!r}, which is {why}", path=where, line=op.line, field="ids")
        for i in op.ids:
            if op.op == "insert":
                self.versions[i] = 0
                self.deleted.discard(i)
            elif op.op == "delete":
                del self.versions[i]
                self.deleted.add(i)
            else:
                self.versions[i] += 1


def version_of(doc: Document, version: int) -> Document:
    """The document as its ``version``-th update wrote it (version 0: as in the corpus)."""
    if version == 0:
        return doc
    return doc.model_copy(update={"text": f"{doc.text}\n\nRevision {version} of this document."})


def draw(ds: GoldenDataset, spec: StreamSpec) -> list[Op]:
    """The runbook ``spec`` asks for over ``ds``'s corpus (raises ``InputError`` at ``stream.delete`` /
    ``stream.update`` when a step would delete or update more documents than are visible)."""
    rng = np.random.default_rng(spec.seed)
    ids = list(ds.doc_ids)
    n = len(ids)
    known = set(ids)
    relevant = sorted({d for judged in ds.qrels.values() for d, g in judged.items() if g >= 1 and d in known})
    rel_set = set(relevant)
    others = [d for d in ids if d not in rel_set]
    n_init = min(n, round(spec.initial * n))
    per_insert = round(spec.insert * n)
    later = min(n - n_init, spec.steps * per_insert)
    # relevant documents in the later inserts in proportion to the corpus (at least one per step)
    n_rel = min(len(relevant), max(math.ceil(len(relevant) * later / max(n, 1)), min(spec.steps, later)))
    n_rel = min(n_rel, later)
    rel_order = [relevant[i] for i in rng.permutation(len(relevant))]
    oth_order = [others[i] for i in rng.permutation(len(others))]
    n_oth = later - n_rel
    if n_oth > len(oth_order):  # too few others: more relevant documents join the later inserts
        n_rel, n_oth = later - len(oth_order), len(oth_order)
    pool = rel_order[:n_rel] + oth_order[:n_oth]
    pool = [pool[i] for i in rng.permutation(len(pool))]
    rest = rel_order[n_rel:] + oth_order[n_oth:]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    position = {d: i for i, d in enumerate(ids)}
    initial = sorted(rest[:n_init], key=position.__getitem__)  # corpus order: the initial load reads as a corpus
    if not initial:
        raise InputError(f"stream.initial {spec.initial:g} of {n} documents loads no document: every retriever "
                         "would search an index of none (raise stream.initial)", field="stream.initial")  # fmt: skip
    ops = [Op("insert", tuple(initial)), Op("checkpoint")]
    visible = Visible()
    visible.apply(ops[0])
    for step in range(spec.steps):
        fresh = pool[step * per_insert : (step + 1) * per_insert]
        # deletes and updates come from what was visible before this step's inserts
        old = sorted(visible.versions)
        n_del, n_upd = round(spec.delete * n), round(spec.update * n)
        for key, want in (("delete", n_del), ("update", n_upd)):
            if want > len(old):
                raise InputError(
                    f"step {step + 1} would {key} {want} documents but only {len(old)} are visible before it "
                    f"(lower stream.{key}, or raise stream.initial)",
                    field=f"stream.{key}",
                )
        deletes = _draw_with_relevant(rng, old, n_del, rel_set)
        left = [d for d in old if d not in set(deletes)]
        if n_upd > len(left):
            raise InputError(
                f"step {step + 1} would update {n_upd} documents but only {len(left)} are visible and not deleted",
                field="stream.update",
            )
        updates = _draw_with_relevant(rng, left, n_upd, rel_set)
        for op in (Op("insert", tuple(fresh)), Op("delete", tuple(deletes)), Op("update", tuple(updates))):
            if op.ids:
                visible.apply(op)
                ops.append(op)
        ops.append(Op("checkpoint"))
    if spec.settle and spec.steps:
        ops += [Op("settle"), Op("checkpoint")]
    empty = first_empty(ops)
    if empty is not None:
        raise InputError("a step's delete leaves no document visible: every retriever would search an index of "
                         "none (lower stream.delete, or raise stream.initial)", field="stream.delete")  # fmt: skip
    return ops


def _draw_with_relevant(rng: np.random.Generator, pool: Sequence[str], n: int, relevant: set[str]) -> list[str]:
    """``n`` of ``pool`` at random, one of them relevant where the pool holds one (sorted back)."""
    if n <= 0:
        return []
    rel = [d for d in pool if d in relevant]
    first = [rel[int(rng.integers(len(rel)))]] if rel else []
    others = [d for d in pool if d not in set(first)]
    picked = [others[i] for i in rng.choice(len(others), size=n - len(first), replace=False)] if n > len(first) else []
    order = {d: i for i, d in enumerate(pool)}
    return sorted(first + picked, key=order.__getitem__)


def format_runbook(ops: Iterable[Op]) -> str:
    return "".join(op.to_line() for op in ops)


def read_runbook(path: str | os.PathLike[str], corpus_ids: Iterable[str]) -> list[Op]:
    """A team's runbook, every line checked before any work: JSON, ``op``, ``ids`` (strings naming
    documents of the corpus), and that every write can happen (no id inserted while visible, deleted
    or updated while not: deleting twice is an error). Errors name the file, line and field."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the runbook ({getattr(e, 'strerror', None) or e})", path=p) from None
    known = set(corpus_ids)
    ops: list[Op] = []
    visible = Visible()
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError as e:
            raise InputError(f"not JSON ({e.msg})", path=p, line=lineno) from None
        op = _op(row, p, lineno, known)
        if op.op in WRITES:
            visible.apply(op, str(p))
        ops.append(op)
    check_shape(ops, str(p))
    return ops


def _op(row: object, p: Path, lineno: int, known: set[str]) -> Op:
    if not isinstance(row, Mapping):
        raise InputError('a line must be a JSON object such as {"op": "insert", "ids": [...]}', path=p, line=lineno)
    extra = sorted(set(row) - {"op", "ids"})
    if extra:
        raise InputError(f"unknown key (valid keys: op, ids); got {extra[0]!r}", path=p, line=lineno, field=extra[0])
    kind = row.get("op")
    if kind not in OPS:
        raise InputError(f"must be one of {', '.join(OPS)}; got {kind!r:.40}", path=p, line=lineno, field="op")
    if kind not in WRITES:
        if "ids" in row:
            raise InputError(f"a {kind} takes no ids", path=p, line=lineno, field="ids")
        return Op(kind, line=lineno)
    ids = row.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InputError("must be a list of document ids (strings)", path=p, line=lineno, field="ids")
    unknown = [i for i in ids if i not in known]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise InputError(f"{unknown[0]!r:.80} is not a document of the corpus{more}", path=p, line=lineno, field="ids")
    return Op(kind, tuple(ids), line=lineno)


def check_shape(ops: Sequence[Op], where: str) -> None:
    """A runbook starts with the initial ``insert`` and ends with a ``checkpoint`` (writes after the
    last checkpoint would be scored by nothing), and leaves at least one document visible after every
    write (:func:`first_empty`)."""
    if not ops or ops[0].op != "insert":
        raise InputError("the first line must be the initial insert", path=where, line=ops[0].line if ops else 1)
    if ops[-1].op != "checkpoint":
        raise InputError("the last line must be a checkpoint", path=where, line=ops[-1].line, field="op")
    empty = first_empty(ops)
    if empty is not None:
        first = empty is ops[0]
        what = "the initial insert names no document" if first else f"after this {empty.op} no document is visible"
        raise InputError(f"{what}: every retriever would search an index of none (an index of 0 documents has "
                         "nothing to build, encode or score; keep one visible)", path=where, line=empty.line,
                         field="ids")  # fmt: skip


def first_empty(ops: Sequence[Op]) -> Op | None:
    """The first write after which no document is visible (an empty initial insert included), or None.
    ``ops`` must already be valid writes (checked by :meth:`Visible.apply`)."""
    visible = Visible()
    for op in ops:
        if op.op in WRITES:
            visible.apply(op)
            if not visible.versions:
                return op
    return None
