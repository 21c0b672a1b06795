"""What produced a result: versions, commit, machine, dataset fingerprint, resolved config.

Two results can only be compared when their manifests say they measured the same thing.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from harness import clock
from harness.model import GoldenDataset
from harness.registry import redact_value

LIBRARIES = [
    "retrieval-harness",
    "numpy",
    "scipy",
    "pandas",
    "pydantic",
    "bm25s",
    "rank-bm25",
    "PyStemmer",
    "faiss-cpu",
    "torch",
    "transformers",
    "sentence-transformers",
]


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            out[lib] = None
    return out


def git_commit(start: Path | None = None) -> dict[str, Any]:
    """The commit of the harness checkout (and whether it had local changes), when it is one."""
    where = start or Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            ).stdout.strip()
            != ""
        )
        return {"commit": sha, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:
        pass
    for var in ("OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "HF_HUB_OFFLINE"):
        if var in os.environ:
            info.setdefault("env", {})[var] = os.environ[var]
    return info


def build_manifest(
    *, dataset: GoldenDataset, config: dict[str, Any], seed: int, retrievers: dict[str, Any], latency_queries: int
) -> dict[str, Any]:
    # redacted once more here, whatever the caller passed: a secret (http header, ${ENV} value) never
    # reaches results.json or a baseline through the manifest
    return {
        "created": clock.stamp(),
        "command": redact_value(list(sys.argv)),
        "versions": library_versions(),
        "git": git_commit(),
        "machine": machine(),
        "seed": seed,
        "dataset": dataset.summary(),
        "config": redact_value(config),
        "retrievers": redact_value(retrievers),
        "latency_queries": latency_queries,
    }
