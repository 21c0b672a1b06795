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

from harness import defaults
from harness.errors import InputError
from harness.io import staged
from harness.results.synthetic_set import BIAS_FILE, SYNTH_FILE, SYNTH_KIND, SYNTH_VERSION, SynthFile, write_bias

KIND, VERSION = SYNTH_KIND, SYNTH_VERSION


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


def read_synth(folder: str | os.PathLike[str]) -> SynthFile:
    """``synth.json`` of a synthetic set, typed (:meth:`SynthFile.read`)."""
    return SynthFile.read(folder)


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


__all__ = ["BIAS_FILE", "SYNTH_FILE", "corpus_path", "finish", "read_synth", "staging", "write_bias",
           "write_set"]  # fmt: skip
