"""Resolve a dataset argument (``demo``, a BEIR folder, an ``irds:`` id, or a corpus + golden set)
to a :class:`GoldenDataset`."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from harness.io.beir import load_beir
from harness.io.golden import assemble_golden, resolve_dataset_section
from harness.io.irds import is_irds, load_irds
from harness.model import GoldenDataset

DEMO = "demo"


def demo_path() -> Path:
    """The embedded demo dataset: inside the installed wheel, or ``datasets/demo`` in a checkout."""
    packaged = resources.files("harness") / "_data" / "demo"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "datasets" / "demo"


def load_dataset(
    path: str | os.PathLike[str] | GoldenDataset = DEMO, split: str = "test", *, name: str | None = None
) -> GoldenDataset:
    """``"demo"``, a BEIR folder, or an already built :class:`GoldenDataset` (returned as is)."""
    if isinstance(path, GoldenDataset):
        return path
    if str(path) == DEMO:
        return load_beir(demo_path(), split, name=name or DEMO)
    if is_irds(path):
        return load_irds(str(path), name=name)
    return load_beir(path, split, name=name)


def load_golden(
    corpus: str | os.PathLike[str],
    golden: str | os.PathLike[str],
    *,
    name: str | None = None,
    split: str | None = None,
    judge_by: str = "auto",
    corpus_format: str | None = None,
    golden_format: str | None = None,
) -> GoldenDataset:
    """A corpus and a golden set given separately, in the shapes RAG teams hold them (see
    :mod:`harness.io.golden` and :mod:`harness.io.corpus`), as one :class:`GoldenDataset`.

    Answer-judged rows are resolved against the corpus by :func:`harness.model.keyword_judgments`
    (the mechanism the demo's keyword queries use); id-judged rows keep their ids. ``split`` picks a
    split of a Hugging Face ``DatasetDict`` folder. Judged ids that are not in the corpus are kept
    (they count as relevant, so recall is honest about what the corpus lacks) and warned about, as
    for BEIR folders.
    """
    return assemble_golden(
        corpus,
        golden,
        name=name,
        split=split,
        judge_by=judge_by,
        corpus_format=corpus_format,
        golden_format=golden_format,
    )


def load_from_config(dataset_section: object, base_dir: str | os.PathLike[str] | None = None) -> GoldenDataset:
    """The ``dataset:`` section of a config, resolved: a string (``demo``, a BEIR folder, an
    ``irds:`` id), ``{path, split?, name?}``, or ``{corpus, golden, split?, name?, judge_by?,
    corpus_format?, golden_format?}``. Relative paths are relative to ``base_dir`` (the config's
    folder)."""
    return resolve_dataset_section(dataset_section, base_dir, load_dataset)
