"""One write of a runbook handed to a retriever through the mutable protocol (:class:`harness.protocol.Mutable`).

One place decides how an ``insert``, ``delete`` or ``update`` reaches an object, so a row (:mod:`.engines`)
and each part of a composed row (:mod:`.composed`) are written alike: an update is ``update(docs)`` where the
object has it, else a delete then an add (the protocol's documented fallback).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.model import Document
from harness.protocol import Mutable, Updatable

#: ``call(what, fn)``: runs ``fn`` (one call into the object, named ``what``: ``add()``...) as the caller
#: runs its calls (under a lock and a deadline, or naming the part that failed)
Call = Callable[[str, Callable[[], Any]], Any]


def apply(obj: Any, op: str, docs: Sequence[Document], call: Call) -> None:
    """Write ``docs`` to ``obj`` as the runbook's ``op`` (``insert``, ``delete`` or ``update``)."""
    if op == "insert":
        call("add()", lambda: obj.add(docs))
    elif op == "delete":
        call("delete()", lambda: obj.delete([d.id for d in docs]))
    elif isinstance(obj, Updatable):
        call("update()", lambda: obj.update(docs))
    else:
        call("delete()", lambda: obj.delete([d.id for d in docs]))
        call("add()", lambda: obj.add(docs))


def unwritable(name: str, type_name: str, obj: Any) -> str | None:
    """``'ro' (python: SearchOnly)``, naming a built retriever the stream cannot write (no ``add(docs)`` and
    ``delete(ids)``) for the one line that refuses it, or None when it can be written."""
    if isinstance(obj, Mutable):
        return None
    inner = getattr(obj, "inner", obj)  # a Guarded team retriever holds the object as .inner
    return f"{name!r} ({type_name}: {type(inner).__qualname__})"
