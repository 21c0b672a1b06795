"""ranx's JSON run and qrels: ``OUT/<retriever>.json`` (``{query: {doc: score}}``, what
``ranx.Run.from_file`` reads) and ``OUT/qrels.json`` (``{query: {doc: grade}}``, ``ranx.Qrels.from_file``);
inside a suite, one folder per dataset. The scores are the stored run's, written with Python's
shortest round-tripping repr, so ranx reads back the very floats the harness scored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.export.mteb import safe
from harness.export.source import Source, put, stored_runs
from harness.io.trec import read_run


def files(sources: Sequence[Source]) -> tuple[dict[str, Any], list[str]]:
    """``{relative path: JSON object}`` and a note per thing the folder could not give."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    for _, base, retriever, path in stored_runs(sources, notes):
        put(out, f"{base}{safe(retriever)}.json", read_run(path, name=retriever).to_dict(), f"run {retriever!r}")
    for s in sources:
        base = f"{s.dataset}/" if s.dataset else ""
        qrels = s.qrels()
        if qrels is None:
            notes.append(f"{base}qrels.json: the folder holds no qrels.tsv, not exported")
        else:
            out[f"{base}qrels.json"] = {q: dict(d) for q, d in qrels.items()}
    return out, notes
