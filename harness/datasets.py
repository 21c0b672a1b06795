"""Resolve a dataset argument (``demo`` or a BEIR folder) to a :class:`GoldenDataset`."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from harness.io.beir import load_beir
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
    return load_beir(path, split, name=name)
