"""Read a results folder only when it is whole: complete, and every stored run as it was written.

``results.json`` records each run file's sha256 (``run_files``). A folder whose run was interrupted
(``complete: false``), whose run file is missing, or whose run file no longer hashes to what was
recorded (edited after the run) would give a report, a check or a baseline that silently disagrees
with its own summary. Every command that reads a results folder (``report``, ``check``, ``baseline
save``, ``power``; ``compare`` and ``evaluate`` for a run file stored in one) refuses it with exit 2
naming the file, unless told ``--allow-incomplete``, in which case each problem is a warning. A
suite folder (:func:`harness.results.suite.open_suite`) is read so too: ``suite.json`` and every dataset's folder.
"""

from __future__ import annotations

import logging
from pathlib import Path

from harness.errors import InputError
from harness.io.staged import sha256_file
from harness.results import Results
from harness.results.folder import run_file
from harness.results.record import RunRecord

log = logging.getLogger("harness")

ALLOW_FLAG = "--allow-incomplete"


def problems(results: Results) -> list[tuple[str, str]]:
    """``(path, what is wrong)`` for an incomplete folder and each missing or altered run file."""
    folder = results.folder
    where = str(folder / "results.json") if folder is not None else "results"
    found: list[tuple[str, str]] = []
    if not results.complete:
        found.append(
            (
                where,
                "incomplete results: the run that wrote them was interrupted (statistics and some retrievers may be "
                "missing); `harness run --resume --out DIR` completes them",
            )
        )
    if folder is None:
        return found
    for name, ref in results.run_files.items():
        if not isinstance(ref, dict) or not ref.get("file"):
            continue
        path = run_file(folder, ref["file"], name)  # outside the folder: an error, never a warning
        if not path.is_file():
            found.append((str(path), f"the run file of {name!r} named in results.json is missing"))
            continue
        want = ref.get("sha256")
        if want and sha256_file(path) != want:
            found.append(
                (
                    str(path),
                    f"the run file of {name!r} was changed after the run (its sha256 differs from the one in "
                    "results.json); re-run, or restore the file",
                )
            )
    return found


def check_results(results: Results, *, allow_incomplete: bool = False, what: str = "") -> Results:
    """Refuse (exit 2, naming the file) or, with ``allow_incomplete``, warn about every problem. A run
    file named outside the folder is refused either way (:func:`~harness.results.folder.run_file`)."""
    label = f"{what} " if what else ""
    try:
        found = problems(results)
    except InputError as e:
        raise InputError(e.message, path=f"{label}{e.path}", field=e.field) from None
    refuse_or_warn(found, allow_incomplete, label)
    return results


def refuse_or_warn(found: list[tuple[str, str]], allow_incomplete: bool, label: str) -> None:
    """The first problem as one error line (exit 2) naming its file, or with ``allow_incomplete`` a
    warning per problem."""
    if found and not allow_incomplete:
        path, msg = found[0]
        more = f" ({len(found) - 1} more problem(s))" if len(found) > 1 else ""
        raise InputError(f"{msg}{more}; pass {ALLOW_FLAG} to read it anyway", path=f"{label}{path}")
    for path, msg in found:
        log.warning("%s%s: %s (read anyway: %s)", label, path, msg, ALLOW_FLAG)


def check_stored_run(path: str | Path, *, allow_incomplete: bool = False) -> None:
    """A run file inside a results folder's ``runs/`` (a record beside it naming it) must still hash
    to the sha256 its record holds."""
    p = Path(path)
    rec = RunRecord.beside(p) if p.parent.name == "runs" else None
    if rec is None or rec.sha256 is None:
        return
    if sha256_file(p) != rec.sha256:
        msg = f"this stored run was changed after the run (its sha256 differs from the one in {rec.path.name})"
        if not allow_incomplete:
            raise InputError(f"{msg}; pass {ALLOW_FLAG} to read it anyway", path=p)
        log.warning("%s: %s (read anyway: %s)", p, msg, ALLOW_FLAG)
