"""``runs/<stem>.json``, the record the harness writes beside each stored run: one reader, one rule.

A record says which retriever the run is (``name``), under which config (``config_hash``), whether
it finished (``status``), which file holds it and that file's sha256, and what it cost. Everything
that reads one (resuming a run, saving a folder again, the integrity check, ``evaluate`` naming a
stored run file, cleaning a folder) reads it here, so a record is valid or not in the same way for
all of them: a JSON object of at most 64 MiB naming its retriever, with a config hash and a status,
stored under the stem its name gives (:func:`run_stem`). Anything else is not the harness's record
(a user's file of the same name, a truncated write): :meth:`RunRecord.read` returns None.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.efficiency import Cost

#: a record is a few hundred bytes: anything this large is not one (and is not read into memory)
MAX_BYTES = 64 * 2**20
#: longest part of a run file name taken from the retriever name (file systems allow 255 bytes)
_NAME_CHARS = 80


def run_stem(name: str) -> str:
    """``runs/<stem>.trec``: the name made file-safe plus 8 hex of its sha256 (collision-free)."""
    safe = "".join(c if (c.isascii() and (c.isalnum() or c in "-_.")) else "_" for c in name)[:_NAME_CHARS]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe.strip('.') or 'run'}-{digest}"


@dataclass(frozen=True)
class RunRecord:
    """One stored run's record, as :meth:`read` found it (``data`` keeps every key, in order)."""

    path: Path
    data: dict[str, Any]

    @classmethod
    def read(cls, path: str | Path) -> RunRecord | None:
        """The record at ``path``, or None when the file is missing, unreadable or not a record."""
        p = Path(path)
        try:
            if p.stat().st_size > MAX_BYTES:
                return None
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        if not {"config_hash", "status"} <= data.keys() or run_stem(data["name"]) != p.stem:
            return None
        return cls(p, data)

    @classmethod
    def beside(cls, run_path: str | Path) -> RunRecord | None:
        """The record of the run file ``run_path`` (``runs/<stem>.trec``), when it names that file."""
        p = Path(run_path)
        rec = cls.read(p.with_suffix(".json"))
        return rec if rec is not None and rec.file is not None and rec.file.rsplit("/", 1)[-1] == p.name else None

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def config_hash(self) -> str | None:
        return self.data.get("config_hash")

    @property
    def ok(self) -> bool:
        return self.data.get("status") == "ok"

    @property
    def file(self) -> str | None:
        """The run file, relative to the results folder (``runs/<stem>.trec``); None for a failed run."""
        f = self.data.get("file")
        return f if isinstance(f, str) else None

    @property
    def sha256(self) -> str | None:
        s = self.data.get("sha256")
        return s if isinstance(s, str) else None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.data.get("params") or {})

    @property
    def seconds(self) -> float:
        return float(self.data.get("seconds") or 0)

    @property
    def cost(self) -> Cost | None:
        return Cost.from_json(self.data["cost"]) if self.data.get("cost") else None

    def ref(self) -> dict[str, Any]:
        """What ``results.json`` lists for this run under ``run_files``."""
        return {"file": self.data.get("file"), "sha256": self.data.get("sha256"), "config_hash": self.config_hash}


def run_names(paths: list[str]) -> list[str]:
    """Names for run files (``evaluate``, ``compare``): the retriever a run stored by the harness
    holds (its record beside it), else the file stem, or the file name (then the full path) where
    stems collide."""
    stems = [_stored_name(p) or Path(p).stem for p in paths]
    names = [Path(p).name for p in paths]
    return [
        s if stems.count(s) == 1 else (n if names.count(n) == 1 else str(p)) for p, s, n in zip(paths, stems, names)
    ]


def _stored_name(path: str) -> str | None:
    rec = RunRecord.beside(path)
    return rec.name if rec is not None else None
