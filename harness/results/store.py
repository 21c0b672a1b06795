"""The results folder as durable storage: each finished run is on disk the moment it finishes.

Layout of ``DIR``:
- ``results.json``: the summary, derived from the runs below; written after them, atomically, so it
  never names a run it was not scored from (``complete: false`` while a run is still going);
- ``runs/<name>-<hash>.trec`` + ``.json``: one retriever's ranking (TREC) and its record (config
  hash, cost, params, the run file's sha256), written atomically as that retriever finishes. The file
  name is the retriever name made safe plus a hash of the exact name, so ``a/b`` and ``a_b`` never
  share a file;
- ``qrels.tsv``, tables, plots: so the folder re-scores and re-renders on its own.

Writing into a folder that already holds results (a fresh run, or a ``--resume`` of complete
results) goes to a staging folder beside it (``.DIR.harness-next``), swapped in when the run completes
(one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux, :func:`harness.io.staged.exchange`): until then
the old results stay whole, however
the process dies, and a killed run's finished retrievers wait in the staging folder for ``--resume``.
The user's files in the folder are carried over (:mod:`harness.results.folder`): a re-run replaces
only what the harness wrote, which ``results.json`` lists under ``files``.

Ownership: a folder is the harness's when it is new or empty, or when its ``results.json`` carries the
harness's schema marker (or is a schema 1 results file). Anything else is refused and left as it is.
A lock file beside the folder (:func:`harness.io.staged.lock`, the one every folder-writing command
takes) stops two commands writing it at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.efficiency import Cost
from harness.errors import InputError
from harness.io import atomic, staged
from harness.io.trec import format_run, read_qrels, read_run, write_qrels
from harness.model import Qrels
from harness.outcome import Outcome
from harness.results import SCHEMA, Results, is_results_file
from harness.results.folder import (
    carry_user_files,
    relative,
    rescue_then_remove,
    results_object,
    run_file,
    run_records,
    run_stem,
)
from harness.results.record import RunRecord
from harness.run import Run

log = logging.getLogger("harness")

RUNS = "runs"
RESULTS = "results.json"


def check_out_dir(out: Path) -> None:
    """Refuse, before any work, a ``--out`` that is not ours or cannot be written."""
    staged.check_out(
        out, "owned", owned_by=owned, field=None,
        not_ours="output folder is not empty and holds files the harness did not write (no results.json with the "
        "harness's schema marker); choose a new or empty folder (nothing there is touched)",
    )  # fmt: skip


def owned(folder: Path) -> bool:
    """New, empty (dot files aside), or holding a results.json the harness wrote."""
    if not folder.exists():
        return True
    entries = [e for e in folder.iterdir() if not e.name.startswith(".")]
    if not entries:
        return True
    return (folder / RESULTS).is_file() and is_results_file(folder / RESULTS)


FolderLocked = staged.FolderLocked


class RunStore:
    """One results folder being written by one run (a context manager: lock, stage, publish)."""

    def __init__(self, out: str | os.PathLike[str], *, resume: bool = False) -> None:
        # absolute and with links resolved: ``--out .`` has a name and a parent, and the exchange
        # swaps the real folder, not a link to it
        self.out = Path(out).expanduser().resolve()
        self.resume = resume
        self._lock: contextlib.ExitStack | None = None
        self.staged = False
        self.dir = self.out
        self._qrels_written = False
        self._extras: list[str] = []

    # ------------------------------------------------------------------ open / close
    def __enter__(self) -> RunStore:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._lock_out()
        try:
            check_out_dir(self.out)
            has_results = (self.out / RESULTS).is_file()
            staging = self.out.parent / f".{self.out.name}.harness-next"
            if self.resume and staging.is_dir():
                # resuming a run that was interrupted before its swap: continue in its staging
                self.staged = True
                self.dir = staging
            elif has_results and (not self.resume or _complete(self.out / RESULTS)):
                # complete results are replaced only once the new ones are complete, however this
                # process ends: a resume of them is staged too
                self.staged = True
                self.dir = staging
                if self.dir.exists():
                    n = len(run_records(self.dir))
                    log.warning(
                        "discarding %d finished runs of an interrupted run into %s (--resume keeps them)", n, self.out
                    )
                    rescue_then_remove(self.dir, self.out)
            self.dir.mkdir(parents=True, exist_ok=True)
            _chmod_dir(self.dir)
            (self.dir / RUNS).mkdir(exist_ok=True)
            _chmod_dir(self.dir / RUNS)
            if not (self.dir / RESULTS).exists():
                # the marker first: a folder killed before its first run finished is still ours
                atomic.write_json(self.dir / RESULTS, Results(complete=False).to_json())
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._unlock()

    def _lock_out(self) -> None:
        stack = contextlib.ExitStack()
        stack.enter_context(staged.lock(self.out))
        self._lock = stack

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # ------------------------------------------------------------------ runs
    def save(self, outcome: Outcome, *, config_hash: str | None, spec: Mapping[str, Any], inputs: list[str]) -> None:
        """Store one finished node: its run file first, then its record (both atomic)."""
        stem = run_stem(outcome.name)
        record: dict[str, Any] = {
            "name": outcome.name,
            "config_hash": config_hash,
            "status": "ok" if outcome.ok else "failed",
            "error": outcome.error,
            "spec": dict(spec),
            "inputs": list(inputs),
            "params": outcome.params,
            "seconds": outcome.seconds,
        }
        if outcome.ok and outcome.run is not None:
            text = format_run(outcome.run, tag=stem)
            data = text.encode("utf-8", "surrogatepass")
            atomic.write_bytes(self.dir / RUNS / f"{stem}.trec", data)
            record.update(
                file=f"{RUNS}/{stem}.trec",
                sha256=hashlib.sha256(data).hexdigest(),
                cost=outcome.cost.to_json() if outcome.cost else None,
            )
        atomic.write_json(self.dir / RUNS / f"{stem}.json", _jsonable(record))

    def holds(self, name: str, config_hash: str | None) -> bool:
        """This folder (not a staging one's source) already stores ``name``'s run for this config."""
        return config_hash is not None and _read_stored(self.dir, name, config_hash, load=False) is not None

    def stored(self, hashes: Mapping[str, str | None]) -> dict[str, Outcome]:
        """Finished runs on disk whose config hash matches (``--resume``), read back exactly."""
        found: dict[str, Outcome] = {}
        folders = [self.dir] + ([self.out] if self.staged and self.dir != self.out else [])
        for name, h in hashes.items():
            if h is None:
                continue
            for folder in folders:
                out = _read_stored(folder, name, h)
                if out is not None:
                    found[name] = out
                    break
        return found

    def write_results(self, results: Results, qrels: Qrels | None = None) -> None:
        """The summary of what is stored so far (or, at the end, of everything): after the runs."""
        if qrels is not None and not self._qrels_written:
            write_qrels(self.dir / "qrels.tsv", qrels)
            self._qrels_written = True
        results.run_files = {
            name: self._record_ref(name)
            for name in results.summary
            if (self.dir / RUNS / f"{run_stem(name)}.json").is_file()
        }
        results.files = self._files(results)
        atomic.write_json(self.dir / RESULTS, results.to_json())

    def _files(self, results: Results) -> list[str]:
        """What the harness wrote here (so a re-run replaces exactly these)."""
        files = {RESULTS, *self._extras}
        if (self.dir / "qrels.tsv").is_file():
            files.add("qrels.tsv")
        for name in [*results.summary, *results.failures]:
            stem = run_stem(name)
            if (self.dir / RUNS / f"{stem}.json").is_file():
                files.add(f"{RUNS}/{stem}.json")
            if (self.dir / RUNS / f"{stem}.trec").is_file():
                files.add(f"{RUNS}/{stem}.trec")
        return sorted(files)

    def _record_ref(self, name: str) -> dict[str, Any]:
        rec = RunRecord.read(self.dir / RUNS / f"{run_stem(name)}.json")
        if rec is None:  # written by this store a moment ago: unreadable now is a broken disk, not input
            raise OSError(f"the run record of {name!r} in {self.dir / RUNS} cannot be read back")
        return rec.ref()

    def publish(self, results: Results, *, renderings: bool = True) -> Path:
        """Final results.json (and, with ``renderings``, its tables and plots), drop run files no
        result names, and, for a staged run, swap the new folder in atomically."""
        if renderings:
            from harness.results.render import write_renderings

            self._extras = relative(write_renderings(results, self.dir), self.dir)
        keep = {run_stem(n) for n in results.summary} | {run_stem(n) for n in results.failures}
        # runs this folder stored earlier that no result names: only the harness's records and the
        # run files they name (a user's own runs/x.trec stays)
        for rel, rec in run_records(self.dir).items():
            if Path(rel).stem in keep:
                continue
            file = rec.get("file")
            if isinstance(file, str) and file == f"{RUNS}/{Path(rel).stem}.trec":
                (self.dir / file).unlink(missing_ok=True)
            (self.dir / rel).unlink(missing_ok=True)
        self.write_results(results)
        if self.staged:
            carry_user_files(self.out, self.dir)
            staged.exchange(self.dir, self.out)
            rescue_then_remove(self.dir, self.out)  # now the previous results
            self.dir = self.out
            self.staged = False
        results._folder = self.out
        return self.out


def _complete(path: Path) -> bool:
    """``results.json`` says its folder is complete (an unreadable one is treated as complete:
    it is replaced only through staging)."""
    data = results_object(path)
    return not (data is not None and data.get("complete") is False)


def _read_stored(folder: Path, name: str, config_hash: str, *, load: bool = True) -> Outcome | None:
    rec = RunRecord.read(folder / RUNS / f"{run_stem(name)}.json")
    if rec is None or rec.name != name or rec.config_hash != config_hash or not rec.ok:
        return None
    try:
        run_path = run_file(folder, rec.file, name)  # a record naming a file elsewhere: not reused
    except InputError:
        return None
    try:
        data = run_path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != rec.sha256:
        log.warning("%s: the stored run of %r does not match its record; running it again", run_path, name)
        return None
    if not load:
        return Outcome(name)
    return Outcome(name, run=read_run(run_path, name=name), cost=rec.cost, params=rec.params, seconds=rec.seconds)


def _jsonable(obj: Any) -> Any:
    """Costs hold numpy scalars and maybe NaN: make them JSON (NaN -> None)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _chmod_dir(path: Path) -> None:
    """mkdtemp-style folders are 0700; a results folder is as readable as any other."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o777 & ~atomic.umask())


__all__ = ["SCHEMA", "FolderLocked", "RunStore", "check_out_dir", "owned", "read_runs", "run_stem", "save"]


def save(results: Results, folder: str | os.PathLike[str]) -> Path:
    """Write ``results`` as the folder ``harness run --out DIR`` writes (runs, qrels, results.json,
    tables, plots); an existing results folder is replaced as one step. The runs are the ones
    attached to ``results`` (a run's), else the ones its own folder stores (a loaded folder's)."""
    runs, qrels, costs = results.runs, results.qrels, dict(results.costs)
    if not runs and results.folder is not None:
        runs = read_runs(results)
        qrels_file = results.folder / "qrels.tsv"
        qrels = read_qrels(qrels_file) if qrels_file.is_file() else None
        costs = {**_stored_costs(results), **costs}
    from harness.results.manifest import Manifest

    meta = Manifest.of(results).retrievers
    with RunStore(folder) as store:
        for name, run in runs.items():
            m = meta.get(name) or {}
            out = Outcome(name, run=run, cost=costs.get(name), params=dict(m.get("params") or {}))
            store.save(out, config_hash=m.get("config_hash"), spec=m.get("spec") or {}, inputs=m.get("inputs") or [])
        if qrels is not None:
            store.write_results(results, qrels)
        return store.publish(results)


def _stored_costs(results: Results) -> dict[str, Cost]:
    """Each stored run's cost, from its record beside the run file."""
    costs: dict[str, Cost] = {}
    for name, ref in results.run_files.items():
        file = ref.get("file") if isinstance(ref, dict) else None
        if results.folder is None or not file:
            continue
        rec = RunRecord.read(run_file(results.folder, file, name).with_suffix(".json"))
        cost = rec.cost if rec is not None else None
        if cost is not None:
            costs[name] = cost
    return costs


def read_runs(results: Results) -> dict[str, Run]:
    """The runs a results folder's summary was scored from (schema 2: ``run_files``; schema 1:
    ``runs/<safe name>.trec``)."""
    folder = results.folder
    runs: dict[str, Run] = {}
    if folder is None:
        return runs
    for name in results.summary:
        ref = results.run_files.get(name) or {}
        path = run_file(folder, ref["file"], name) if ref.get("file") else folder / RUNS / f"{_v1_name(name)}.trec"
        if path.is_file():
            runs[name] = read_run(path, name=name)
    return runs


def _v1_name(name: str) -> str:
    """Schema 1's run file name (collisions possible: why schema 2 adds a hash)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "run"
