"""Where the harness keeps things on disk that outlive a run (embedding and score caches)."""

from __future__ import annotations

import os
from pathlib import Path

from harness import defaults

DEFAULT_CACHE_DIR = defaults.CACHE_DIR


def cache_dir_of(value: str | os.PathLike[str] | None) -> Path:
    """``HARNESS_CACHE_DIR`` overrides the configured cache folder (CI and tests point it elsewhere)."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env or value or DEFAULT_CACHE_DIR).expanduser()
