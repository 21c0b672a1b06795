"""The synthetic set's folder: a BEIR folder every command reads, plus ``synth.json``.

It is written whole or not at all (:class:`harness.io.staged.Staged`): everything goes into a hidden
folder beside ``OUT`` and is renamed to ``OUT`` at the end, so an error, Ctrl-C or a kill leaves no
half-written ``OUT`` (at most the hidden folder, removed on every exit this process sees, and by the
next run for the same ``OUT`` after a SIGKILL). An existing ``OUT`` is refused before any work. The
corpus is hard-linked from the source folder where the filesystem allows (no copy of a large
corpus), else copied. ``synth.json`` is the folder's envelope (each file's sha256); ``bias.json`` is
not listed there: ``synth bias`` writes it again whenever asked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness import defaults
from harness.errors import InputError
from harness.io import staged

#: the provenance file of a synthetic set
SYNTH_FILE = "synth.json"
#: the bias figures ``synth bias`` (and ``synth generate``) leave in the folder; report.html reads them
BIAS_FILE = "bias.json"
KIND = "synth"
#: 2: the common envelope (``schema: retrieval-harness/synth``, ``files``, ``complete``); 1 was
#: ``format: harness-synth``, ``version: 1``
VERSION = 2


def check_out(out: str | os.PathLike[str]) -> Path:
    """``OUT`` must not exist (nothing a user wrote is overwritten) and its parent must."""
    return staged.check_out(out, "new")


def staging(out: Path) -> staged.Staged:
    """The set's folder being written (:class:`~harness.io.staged.Staged`): renamed to ``out`` by
    :func:`write_set`'s ``synth.json``, removed if the block ends first."""
    return staged.Staged(out, KIND, VERSION, mode="new")


def _line(rec: dict[str, Any]) -> str:
    text = json.dumps(rec, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes keep the line valid JSON
        text = json.dumps(rec)
    return text


def write_set(
    folder: staged.Staged,
    corpus_file: Path,
    queries: Sequence[tuple[str, str, str, dict[str, Any]]],
) -> str:
    """``corpus.jsonl`` (linked), ``queries.jsonl`` and ``qrels/test.tsv`` (each question's source,
    grade 1) in ``folder``; ``synth.json`` is written by :func:`finish`. ``queries``: ``(id, text,
    source id, metadata)``. Returns how the corpus got there."""
    how = folder.link("corpus.jsonl", corpus_file)
    lines = [_line({"_id": qid, "text": text, "metadata": meta}) for qid, text, _, meta in queries]
    folder.write("queries.jsonl", "".join(line + "\n" for line in lines).encode("utf-8"))
    rows = ["query-id\tcorpus-id\tscore", *(f"{qid}\t{src}\t1" for qid, _, src, _ in queries)]
    folder.write(f"qrels/{defaults.SPLIT}.tsv", ("\n".join(rows) + "\n").encode("utf-8"))
    return how


def finish(folder: staged.Staged, provenance: dict[str, Any]) -> Path:
    """``synth.json`` (the provenance, in the envelope) last; the folder moved into place."""
    return folder.finish(SYNTH_FILE, provenance)


def write_json(path: Path, obj: Any) -> None:
    """JSON written atomically; a lone surrogate in a string is kept as an escape."""
    staged.write_json(path, obj)


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A synth.json written before the common envelope (``format: harness-synth``, ``version: 1``)
    as schema version 1 (no ``files``: nothing to check)."""
    if doc.get("format") == "harness-synth" and doc.get("version") == 1:
        rest = {k: v for k, v in doc.items() if k not in ("format", "version")}
        return {"schema": staged.schema(KIND), "schema_version": 1, **rest}
    return doc


def read_synth(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``synth.json`` of a synthetic set; a located error when it is missing or not ours."""
    p = Path(folder).expanduser() / SYNTH_FILE
    if not p.is_file():
        raise InputError(f"no {SYNTH_FILE}: not a folder `harness synth generate` wrote", path=p.parent)
    doc = staged.open_envelope(p, KIND, _Loose, version=VERSION, upgrade=upgrade).model_dump()
    check_synth(doc, p)
    return doc


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_synth(data: dict[str, Any], path: Path) -> None:
    """The parts of ``synth.json`` the commands read have the shape ``synth generate`` writes: a
    hand-edited file is one located line (the field named), never a crash halfway through."""

    def bad(field: str, what: str) -> InputError:
        return InputError(f"must be {what} (as `harness synth generate` writes it)", path=path, field=field)

    draw = data.get("draw")
    if not isinstance(draw, dict):
        raise bad("draw", "an object")
    strata = draw.get("strata")
    if not _int(strata) or strata < 1:
        raise bad("draw.strata", "a whole number >= 1")
    filtered = data.get("filtered", {})
    if not isinstance(filtered, dict):
        raise bad("filtered", "an object of counts")
    for k, v in filtered.items():
        if not _int(v) or v < 0:
            raise bad(f"filtered.{k}", "a count (a whole number >= 0)")
    for k in ("settings", "requests"):
        if not isinstance(data.get(k, {}), dict):
            raise bad(k, "an object")
    if not isinstance(data.get("generator"), (str, type(None))):
        raise bad("generator", "a string")
    queries = data.get("queries")
    if not isinstance(queries, list):
        raise bad("queries", "a list of the questions")
    for i, q in enumerate(queries):
        if not isinstance(q, dict):
            raise bad(f"queries[{i}]", "an object")
        if not isinstance(q.get("kept"), bool):
            raise bad(f"queries[{i}].kept", "true or false")
        if q["kept"] and not isinstance(q.get("id"), str):
            raise bad(f"queries[{i}].id", "a string (a kept question's id)")
        if "stratum" in q and (not _int(q["stratum"]) or not 0 <= q["stratum"] < strata):
            raise bad(f"queries[{i}].stratum", f"a stratum 0..{strata - 1} (draw.strata is {strata})")


def corpus_path(dataset: str) -> Path:
    """The corpus file of ``--dataset``: ``demo`` or a folder holding ``corpus.jsonl`` (queries and
    qrels are not needed: a corpus is all a team has)."""
    from harness.datasets import DEMO, demo_path

    root = demo_path() if dataset == DEMO else Path(dataset).expanduser()
    if not root.is_dir():
        raise InputError("not a folder (a BEIR folder with corpus.jsonl, or demo)", path=root, field="--dataset")
    f = root / "corpus.jsonl"
    if not f.is_file():
        raise InputError("no corpus.jsonl in the folder", path=root, field="--dataset")
    return f
