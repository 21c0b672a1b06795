"""The synthetic set's folder: a BEIR folder every command reads, plus ``synth.json``.

It is written whole or not at all: everything goes into a hidden folder beside ``OUT`` and is
renamed to ``OUT`` at the end, so an error, Ctrl-C or a kill leaves no half-written ``OUT`` (at most
the hidden folder, removed on every exit this process sees, and by the next run for the same ``OUT``
after a SIGKILL). An existing ``OUT`` is refused before
any work. The corpus is hard-linked from the source folder where the filesystem allows (no copy of
a large corpus), else copied.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness import defaults
from harness.errors import InputError
from harness.io import atomic

#: the provenance file of a synthetic set
SYNTH_FILE = "synth.json"
#: the bias figures ``synth bias`` (and ``synth generate``) leave in the folder; report.html reads them
BIAS_FILE = "bias.json"
FORMAT = "harness-synth"
VERSION = 1


def check_out(out: str | os.PathLike[str]) -> Path:
    """``OUT`` must not exist (nothing a user wrote is overwritten) and its parent must."""
    p = Path(out).expanduser()
    if p.exists() or p.is_symlink():
        raise InputError("already exists; choose a new folder (nothing is overwritten)", path=p, field="--out")
    if not p.parent.is_dir():
        raise InputError("the folder it goes in does not exist", path=p.parent, field="--out")
    return p


@contextlib.contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A hidden folder beside ``out`` to write into; renamed to ``out`` when the block ends without
    an exception, removed otherwise."""
    _remove_stale(out)
    tmp = out.parent / f".{out.name}.synth-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        if out.exists():
            raise InputError("appeared while the set was being made; nothing was overwritten", path=out)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale(out: Path) -> None:
    """Hidden folders of earlier runs for ``out`` whose process is gone (a SIGKILL while writing)."""
    for old in out.parent.glob(f".{out.name}.synth-*"):
        pid = old.name.rsplit("-", 1)[-1]
        if not (pid.isascii() and pid.isdigit()) or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


def link_or_copy(src: Path, dst: Path) -> str:
    """``dst`` a hard link to ``src`` where the filesystem allows, else a copy; which it was."""
    try:
        os.link(src, dst)
        return "hard link"
    except OSError:
        shutil.copyfile(src, dst)
        return "copy"


def _line(rec: dict[str, Any]) -> str:
    text = json.dumps(rec, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes keep the line valid JSON
        text = json.dumps(rec)
    return text


def write_set(
    folder: Path,
    corpus_file: Path,
    queries: Sequence[tuple[str, str, str, dict[str, Any]]],
    provenance: dict[str, Any],
) -> str:
    """``corpus.jsonl`` (linked), ``queries.jsonl``, ``qrels/test.tsv`` (each question's source,
    grade 1) and ``synth.json`` under ``folder``. ``queries``: ``(id, text, source id, metadata)``.
    Returns how the corpus got there (also ``provenance["corpus"]["how"]``)."""
    how = provenance.setdefault("corpus", {})["how"] = link_or_copy(corpus_file, folder / "corpus.jsonl")
    lines = [_line({"_id": qid, "text": text, "metadata": meta}) for qid, text, _, meta in queries]
    atomic.write_text(folder / "queries.jsonl", "".join(line + "\n" for line in lines))
    rows = ["query-id\tcorpus-id\tscore", *(f"{qid}\t{src}\t1" for qid, _, src, _ in queries)]
    atomic.write_text(folder / "qrels" / f"{defaults.SPLIT}.tsv", "\n".join(rows) + "\n")
    write_json(folder / SYNTH_FILE, provenance)
    return how


def write_json(path: Path, obj: Any) -> None:
    """JSON written atomically; a lone surrogate in a string is kept as an escape."""
    text = json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=1, allow_nan=False)
    atomic.write_text(path, text + "\n")


def read_synth(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``synth.json`` of a synthetic set; a located error when it is missing or not ours."""
    p = Path(folder).expanduser() / SYNTH_FILE
    if not p.is_file():
        raise InputError(f"no {SYNTH_FILE}: not a folder `harness synth generate` wrote", path=p.parent)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"not valid JSON ({e})", path=p) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} file (format: {FORMAT!r} expected)", path=p, field="format")
    check_synth(data, p)
    return data


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
