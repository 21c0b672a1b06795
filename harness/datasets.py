"""Resolve a dataset argument (``demo``, a BEIR folder, an ``irds:`` id, or a corpus + golden set)
to a :class:`GoldenDataset`."""

from __future__ import annotations

import math
import os
from importlib import resources
from pathlib import Path

from harness import defaults
from harness.errors import InputError
from harness.io.beir import load_beir
from harness.io.golden import assemble_golden, resolve_dataset_section
from harness.io.irds import is_irds, load_irds
from harness.model import GoldenDataset

DEMO = defaults.DATASET


def demo_path() -> Path:
    """The embedded demo dataset: inside the installed wheel, or ``datasets/demo`` in a checkout."""
    packaged = resources.files("harness") / "_data" / "demo"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "datasets" / "demo"


def load_dataset(
    path: str | os.PathLike[str] | GoldenDataset = DEMO, split: str = defaults.SPLIT, *, name: str | None = None
) -> GoldenDataset:
    """``"demo"``, a BEIR folder, or an already built :class:`GoldenDataset` (returned as is)."""
    if isinstance(path, GoldenDataset):
        return path
    if str(path) == DEMO:
        return load_beir(demo_path(), split, name=name or DEMO)
    if is_irds(path):
        return load_irds(str(path), name=name)
    return load_beir(path, split, name=name)


#: A corpus and a golden set given separately, as one dataset (:func:`harness.io.golden.assemble_golden`)
load_golden = assemble_golden


def load_from_config(dataset_section: object, base_dir: str | os.PathLike[str] | None = None) -> GoldenDataset:
    """The ``dataset:`` section of a config, resolved: a string (``demo``, a BEIR folder, an
    ``irds:`` id), ``{path, split?, name?}``, or ``{corpus, golden, split?, name?, judge_by?,
    corpus_format?, golden_format?}``. Relative paths are relative to ``base_dir`` (the config's
    folder)."""
    return resolve_dataset_section(dataset_section, base_dir, load_dataset)


def query_weights(dataset: GoldenDataset, field: str) -> dict[str, float]:
    """``dataset: {weights: FIELD}``: each query's weight, the numeric ``FIELD`` of its queries.jsonl
    record (kept in the query's metadata by the BEIR reader). A query without it, or with a value
    that is not a finite number >= 0, is an error naming the query."""
    out: dict[str, float] = {}
    for q in dataset.queries:
        v = q.metadata.get(field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            where = f"query {q.id!r}"
            got = "missing" if v is None else f"{v!r:.40}"
            raise InputError(
                f"{where}: weight field {field!r} must be a number >= 0, got {got}", field="dataset.weights"
            )
        out[q.id] = float(v)
    if out and not any(out.values()):
        raise InputError(f"every query's {field!r} is 0: nothing to weigh by", field="dataset.weights")
    return out
