"""What an export reads: each dataset's :class:`~harness.results.Results`, opened as every command
opens a results folder (:meth:`Results.open`: an interrupted run, a missing or edited run file is
exit 2 unless ``allow_incomplete``), and the run files and qrels stored beside it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.io.trec import read_qrels
from harness.model import Qrels
from harness.results import Manifest, Results
from harness.results.folder import run_file
from harness.results.suite import SuiteResults, is_suite


@dataclass(frozen=True)
class Source:
    """One dataset's results: ``dataset`` None for a results folder, its name inside a suite."""

    dataset: str | None
    results: Results

    @property
    def folder(self) -> Path:
        assert self.results.folder is not None
        return self.results.folder

    @property
    def manifest(self) -> Manifest:
        return Manifest.of(self.results)

    @property
    def dataset_name(self) -> str:
        return self.manifest.dataset.name or self.dataset or self.folder.name

    def run_path(self, retriever: str) -> Path | None:
        """The stored run file of ``retriever`` (inside the folder, as results.json names it), or None."""
        ref = self.results.run_files.get(retriever)
        if not isinstance(ref, dict) or not ref.get("file"):
            return None
        path = run_file(self.folder, ref["file"], retriever)
        return path if path.is_file() else None

    def qrels(self) -> Qrels | None:
        path = self.folder / "qrels.tsv"
        return read_qrels(path) if path.is_file() else None

    def spec(self, retriever: str) -> dict[str, Any]:
        entry = self.manifest.retrievers.get(retriever)
        return dict(entry.get("spec") or {}) if isinstance(entry, dict) else {}

    def revision(self, retriever: str) -> str:
        """The retriever's config hash: sha256 of its spec and, for a stage, its inputs' specs (the
        same across the datasets of a suite, unlike the run's own hash, which covers the data too)."""

        def tree(name: str, seen: frozenset[str]) -> Any:
            entry = self.manifest.retrievers.get(name)
            inputs = entry.get("inputs") if isinstance(entry, dict) else None
            kids = [tree(i, seen | {name}) for i in inputs or [] if isinstance(i, str) and i not in seen]
            return {"spec": self.spec(name), "inputs": kids}

        text = json.dumps(tree(retriever, frozenset()), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def put(files: dict[str, Any], path: str, value: Any, what: str) -> None:
    """``files[path] = value``, refusing a second value for one path (two names made file-safe alike:
    ``a/b`` and ``a__b``) rather than dropping one of them silently."""
    if path in files:
        raise InputError(f"{what} would be written to {path!r} as well as another: rename one of them")
    files[path] = value


def stored_runs(sources: Sequence[Source], notes: list[str]) -> Iterator[tuple[Source, str, str, Path]]:
    """``(source, prefix, retriever, run file)`` for every stored run, ``prefix`` the dataset's folder
    inside an export of a suite (``""`` for one folder); a run not found is a note instead."""
    for s in sources:
        base = f"{s.dataset}/" if s.dataset else ""
        for retriever in s.results.run_files:
            path = s.run_path(retriever)
            if path is None:
                notes.append(f"{base}{retriever}: no stored run file, not exported")
                continue
            yield s, base, retriever, path


def open_sources(path: str | os.PathLike[str], *, allow_incomplete: bool = False) -> list[Source]:
    """A results folder (one source) or a suite folder (one per dataset, in the suite's order)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError("no such folder (a results folder or a suite folder)", path=p)
    if is_suite(p):
        suite = SuiteResults.load(p)
        if not suite.complete and not allow_incomplete:
            raise InputError("the suite is incomplete (a run was interrupted); pass --allow-incomplete", path=p)
        return [Source(d, Results.open(p / d, allow_incomplete=allow_incomplete)) for d in suite.datasets]
    return [Source(None, Results.open(p, allow_incomplete=allow_incomplete))]
