"""Who owns what in a results folder, and how a new one replaces an old one without losing anything.

A results folder holds the harness's files and may hold the user's (``notes.txt``, a ``check.md``
written beside the results, a ``nights.jsonl``, their own ``runs/x.trec``). The harness's files are
the ones its ``results.json`` lists under ``files`` (plus, for a folder still being written or one
from before that list, ``results.json``, ``qrels.tsv``, the tables and plots a report writes, and the
run records in ``runs/`` with the run files they name). Everything else is the user's: a re-run or a
resume never deletes or replaces it.

A finished folder is replaced as one step: the new results are written to a staging folder beside
it, the user's files are hard-linked into the staging folder (same inode: nothing is copied, a file
appended to meanwhile keeps its appends), then the two folders are exchanged with one
``renameat2(RENAME_EXCHANGE)``. The old folder, now at the staging path, is emptied of what the
harness wrote; a user's file that appeared there in the instant before the exchange is moved into the
new folder first, never deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from harness.io import staged
from harness.results.record import RunRecord
from harness.results.record import run_stem as run_stem  # where the folder's other readers import it from

log = logging.getLogger("harness")

RUNS = "runs"
RESULTS = "results.json"
#: what a report writes at the top of a results folder (folders from before ``files`` was recorded)
REPORT_FILES = frozenset(
    {
        "results.json",
        "qrels.tsv",
        "table.md",
        "table.csv",
        "table.html",
        "table.tex",
        "metric_at_k.png",
        "quality_latency.png",
    }
)
#: a temp file of :mod:`harness.io.atomic` (``.<name>.<random>.tmp``) or the probe of the out check
_OURS_TRANSIENT = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$|^\.harness-probe-")


def results_object(path: Path) -> dict | None:
    """``results.json`` at ``path`` as a JSON object, for the folder's own bookkeeping (which files
    are ours, whether the run finished); None when it is missing, unreadable, nested past the bound
    (:data:`harness.io.jsontext.MAX_JSON_DEPTH`) or not an object. Reading results is
    :meth:`Results.open <harness.results.Results.open>`'s job."""
    from harness.errors import InputError
    from harness.io import jsontext

    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"), path=path)
    except (OSError, ValueError, InputError):
        return None
    return data if isinstance(data, dict) else None


def listed_files(folder: Path) -> list[str] | None:
    """The ``files`` list of ``folder/results.json`` (None: no list, or no readable results.json)."""
    data = results_object(folder / RESULTS)
    files = data.get("files") if data is not None else None
    if not isinstance(files, list):
        return None
    return [f for f in files if isinstance(f, str)]


def run_records(folder: Path) -> dict[str, dict]:
    """``runs/<stem>.json`` files that are the harness's run records: ``{relative path: record}``."""
    out: dict[str, dict] = {}
    runs = folder / RUNS
    if not runs.is_dir() or runs.is_symlink():
        return out
    for f in runs.iterdir():
        if f.suffix != ".json" or not f.is_file() or f.is_symlink():
            continue
        rec = RunRecord.read(f)
        if rec is not None:
            out[f"{RUNS}/{f.name}"] = rec.data
    return out


def run_file(folder: Path, file: object, name: str) -> Path:
    """The path of the run file ``results.json`` names for retriever ``name``, which must lie inside
    ``folder`` (after ``..`` and symbolic links are resolved): a results.json edited or written by
    another tool must not make a report read, and put into report.html, a file from anywhere else.
    An :class:`InputError` naming the key otherwise, whatever ``--allow-incomplete`` says."""
    from harness.errors import InputError

    where = folder / RESULTS
    if not isinstance(file, str) or not file or "\x00" in file:
        raise InputError(f"must be a relative path inside the folder, got {file!r}", path=where,
                         field=f"run_files.{name}.file")  # fmt: skip
    path = folder / file
    root = folder.resolve()
    target = path.resolve()
    if Path(file).is_absolute() or (target != root and root not in target.parents):
        raise InputError(
            f"{file!r} lies outside the results folder: a run file named in results.json must be inside it "
            f"(runs/<name>.trec)",
            path=where,
            field=f"run_files.{name}.file",
        )
    return path


def harness_files(folder: Path) -> set[str]:
    """Relative paths (``/``-separated) in ``folder`` that the harness wrote; see the module doc."""
    owned: set[str] = set(listed_files(folder) or ())
    owned.update({RESULTS, "qrels.tsv"})
    if listed_files(folder) is None:
        owned.update(REPORT_FILES)
    for rel, rec in run_records(folder).items():
        owned.add(rel)
        file = rec.get("file")
        if isinstance(file, str) and file.startswith(f"{RUNS}/") and "/" not in file[len(RUNS) + 1 :]:
            owned.add(file)
    return owned


def user_files(folder: Path) -> list[str]:
    """Relative paths of everything in ``folder`` the harness did not write (files, links and empty
    folders; folders are walked, links are not followed)."""
    ours = harness_files(folder)
    found: list[str] = []

    def walk(d: Path, prefix: str) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            rel = f"{prefix}{e.name}"
            if rel in ours or _OURS_TRANSIENT.match(e.name):
                continue
            if e.is_dir(follow_symlinks=False):
                before = len(found)
                walk(Path(e.path), rel + "/")
                if len(found) == before and not any(o.startswith(rel + "/") for o in ours):
                    found.append(rel + "/")  # an empty folder of the user's
            else:
                found.append(rel)

    if folder.is_dir():
        walk(folder, "")
    return found


def carry_user_files(src: Path, dst: Path) -> int:
    """Hard-link (or, across file systems, copy) the user's files of ``src`` into ``dst`` where
    ``dst`` has nothing at that path; returns how many."""
    n = 0
    for rel in user_files(src):
        if rel.endswith("/"):
            (dst / rel).mkdir(parents=True, exist_ok=True)
            continue
        target = dst / rel
        if os.path.lexists(target):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = src / rel
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError:
            if source.is_symlink():
                os.symlink(os.readlink(source), target)
            else:
                shutil.copy2(source, target)
        n += 1
    return n


def rescue_then_remove(old: Path, live: Path) -> None:
    """Remove a folder the harness is done with (a stale staging folder, or the previous results
    after the exchange): any user file in it that ``live`` lacks is moved into ``live`` first."""
    if not old.is_dir() or old.is_symlink():
        return
    moved = 0
    if live.is_dir():
        for rel in user_files(old):
            moved += staged.move_in(old / rel.rstrip("/"), live / rel.rstrip("/"))
    if moved:
        log.info("moved %d of your files from %s into %s", moved, old, live)
    shutil.rmtree(old, ignore_errors=True)


def relative(paths: Iterable[Path], folder: Path) -> list[str]:
    """``paths`` inside ``folder`` as sorted ``/``-separated relative paths."""
    out = set()
    for p in paths:
        with contextlib.suppress(ValueError):
            out.add(Path(p).relative_to(folder).as_posix())
    return sorted(out)


def interrupted_note(out: Path, argv: list[str]) -> str:
    """One line for an interrupted ``harness run``: what is kept and how ``--resume`` goes on."""
    import shlex

    out = Path(out).expanduser().resolve()
    staging = out.parent / f".{out.name}.harness-next"
    kept = 0
    for folder in (staging, out):
        ok = [r for r in run_records(folder).values() if r.get("status") == "ok"]
        kept = max(kept, len(ok))
    complete = (out / RESULTS).is_file()
    args = [a for a in argv if a != "--resume"]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    resume = "harness " + " ".join(shlex.quote(a) for a in [*args, "--resume"])
    where = f"{out}" + (" (the previous results there are untouched)" if complete and staging.is_dir() else "")
    return (
        f"{kept} finished retriever(s) kept in {where}, with the embeddings encoded so far; "
        f"`{resume}` continues without redoing them"
    )


def default_out_dir(dataset_name: str) -> Path:
    """``results/<local time>-<dataset>/`` (``-2``, ``-3``, ... where taken): ``harness run`` without ``--out``."""
    from harness import clock

    stamp = clock.local_stamp()
    # the name is cut to 100 characters: a folder name may have at most 255 bytes
    base = Path("results") / f"{stamp}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', dataset_name)[:100]}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out
