"""One way to write a folder the harness owns, and one way to read its envelope back.

Every command that writes a folder (``run``, ``stream``, ``synth generate``, ``traces import``) wrote
it its own way and read it back its own way, so the same guard ("is ``--out`` acceptable?"), the same
staging, the same sha256 check and the same bugs came back in each (two streams given one ``--out``
shared one fixed staging folder and lost the first one's work). Here, once:

- :func:`check_out`: is ``--out`` acceptable, before any work (``new``: must not exist;
  ``new_or_empty``; ``owned``: new, empty, or already the harness's, as the owner says);
- :func:`lock`: one process writes a given ``OUT`` at a time (a lock file beside it, released when
  the process ends however it ends); the second is refused in one line;
- :class:`Staged`: a hidden sibling folder of this process (``.OUT.<kind>-<pid>``) written file by file
  (:meth:`~Staged.write` records each file's sha256), closed by :meth:`~Staged.finish`, which writes one
  envelope file ``{"schema": "retrieval-harness/<kind>", "schema_version": N, ..., "complete": ...,
  "files": {name: sha256}}`` and renames the folder to ``OUT`` whole: ``OUT`` is never half-written;
- :func:`exchange`: two folders swapped in one step (``harness run`` replacing complete results);
- :func:`open_envelope`: the reading side: a bounded parse, the envelope checked (an older envelope
  upgraded by the owner's function), every listed file's sha256 checked, then the owner's pydantic
  model, every problem one located line (file, key) and exit 2.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from harness.errors import InputError
from harness.io import atomic

log = logging.getLogger("harness")

PREFIX = "retrieval-harness/"
#: a harness JSON file larger than this is not one the harness wrote (a parse would hold it all in memory)
MAX_BYTES = 256 << 20
_CHUNK = 1 << 20

Mode = Literal["new", "new_or_empty", "owned"]
M = TypeVar("M", bound=BaseModel)


def schema(kind: str) -> str:
    """The ``schema`` value of a ``kind`` file: ``retrieval-harness/<kind>``."""
    return PREFIX + kind


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- is --out acceptable


def check_out(
    out: str | os.PathLike[str],
    mode: Mode,
    *,
    owned_by: Callable[[Path], bool] | None = None,
    not_ours: str = "holds files the harness did not write; choose a new or empty folder (nothing there is touched)",
    field: str | None = "--out",
    file: bool = False,
) -> Path:
    """Refuse, before any work, an ``out`` the command may not write (nothing a user wrote is ever
    overwritten): ``new`` (it must not exist; a folder's parent must), ``new_or_empty`` (a new or empty
    folder), ``owned`` (new, empty apart from dot files, or ``owned_by(out)``: the owner's marker).
    ``file``: ``out`` is one file (a grade file, merged qrels), not a folder."""
    p = Path(out).expanduser()
    if file:
        if p.exists() and (mode == "new" or not (owned_by and owned_by(p))):
            raise InputError(not_ours if mode == "owned" else "exists; choose a new file (nothing is overwritten)",
                             path=p, field=field)  # fmt: skip
        return p
    if mode == "new":
        if p.exists() or p.is_symlink():
            raise InputError("already exists; choose a new folder (nothing is overwritten)", path=p, field=field)
        if not p.parent.is_dir():
            raise InputError("the folder it goes in does not exist", path=p.parent, field=field)
        return p
    if mode == "new_or_empty":
        if p.exists() and (not p.is_dir() or any(p.iterdir())):
            raise InputError("must be a new or empty folder (nothing there is touched)", path=p, field=field)
        return p
    if p.exists() and not p.is_dir():
        raise InputError("output path exists and is not a folder", path=p)
    if p.is_dir() and any(not e.name.startswith(".") for e in p.iterdir()) and not (owned_by and owned_by(p)):
        raise InputError(not_ours, path=p)
    probe_dir = p if p.is_dir() else _existing_parent(p)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".harness-probe-", dir=probe_dir)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise InputError(f"cannot write results here ({e.strerror or e})", path=probe_dir) from None
    return p


def _existing_parent(p: Path) -> Path:
    p = p.resolve()
    while not p.exists():
        p = p.parent
    return p


# ----------------------------------------------------------------------------- one writer per OUT


class FolderLocked(InputError):
    """Another process is writing this ``OUT``."""


@contextlib.contextmanager
def lock(out: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``.OUT.harness-lock`` (beside ``OUT``) for the block: a second command given the same
    ``OUT`` is refused at once, in one line naming the process holding it. The kernel drops the lock
    when the process ends, however it ends (``flock``)."""
    import fcntl

    target = Path(out).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.parent / f".{target.name}.harness-lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~atomic.umask())
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
        os.close(fd)
        if e.errno in (errno.EAGAIN, errno.EACCES):
            raise FolderLocked(
                f"another harness command (pid {holder}) is writing this folder; wait for it or choose another --out",
                path=target,
            ) from None
        raise
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _remove_stale(out: Path, kind: str) -> None:
    """Staging folders of earlier processes for ``out`` that are gone (a SIGKILL while writing)."""
    for old in out.parent.glob(f".{out.name}.{kind}-*"):
        pid = old.name.rsplit("-", 1)[-1]
        if not (pid.isascii() and pid.isdigit()) or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(old, ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


class Staged:
    """One folder being written: a hidden sibling of ``out`` owned by this process, renamed to ``out``
    whole by :meth:`finish` (a context manager: lock, check, stage; on leaving, the lock is released and
    a staging folder never finished is removed)."""

    def __init__(self, out: str | os.PathLike[str], kind: str, version: int, *, mode: Mode = "new") -> None:
        self.out = Path(out).expanduser().resolve()
        self.kind = kind
        self.version = version
        self.mode = mode
        self.dir = self.out.parent / f".{self.out.name}.{kind.replace('/', '-')}-{os.getpid()}"
        self.files: dict[str, str] = {}
        self._lock: contextlib.ExitStack | None = None
        self.published = False

    def __enter__(self) -> Staged:
        stack = contextlib.ExitStack()
        stack.enter_context(lock(self.out))
        try:
            check_out(self.out, self.mode)
            _remove_stale(self.out, self.kind.replace("/", "-"))
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir.mkdir()
            with contextlib.suppress(OSError):
                os.chmod(self.dir, 0o777 & ~atomic.umask())
        except BaseException:
            stack.close()
            raise
        self._lock = stack
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.published:
                shutil.rmtree(self.dir, ignore_errors=True)
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None

    def path(self, rel: str) -> Path:
        """Where ``rel`` goes (its folder made), for a writer that streams into it; :meth:`add` it after."""
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write(self, rel: str, data: bytes) -> Path:
        """``rel`` written atomically, its sha256 recorded for the envelope."""
        path = atomic.write_bytes(self.path(rel), data)
        self.files[rel] = hashlib.sha256(data).hexdigest()
        return path

    def link(self, rel: str, src: Path) -> str:
        """``rel`` a hard link to ``src`` where the filesystem allows (no copy of a large corpus), else a
        copy, its sha256 recorded; which it was."""
        how = link_or_copy(src, self.path(rel))
        self.add(rel)
        return how

    def add(self, rel: str) -> None:
        """Record the sha256 of ``rel``, written by the caller through :meth:`path`."""
        self.files[rel] = sha256_file(self.dir / rel)

    def envelope(self, doc: Mapping[str, Any], *, complete: bool) -> dict[str, Any]:
        """``doc`` in the common envelope (the schema first; ``complete`` and ``files`` last)."""
        body = {k: v for k, v in doc.items() if k not in ("schema", "schema_version", "complete", "files")}
        return {
            "schema": schema(self.kind),
            "schema_version": self.version,
            **body,
            "complete": complete,
            "files": dict(sorted(self.files.items())),
        }

    def finish(self, name: str, doc: Mapping[str, Any], *, complete: bool = True) -> Path:
        """Write the envelope file ``name`` last, then rename the folder to ``out`` in one step."""
        write_json(self.dir / name, self.envelope(doc, complete=complete))
        if self.out.is_dir() and self.mode != "new" and not any(self.out.iterdir()):
            self.out.rmdir()  # empty (checked before any work, and nobody else writes it: the lock)
        if self.out.exists() or self.out.is_symlink():
            raise InputError("appeared while it was being written; nothing was overwritten", path=self.out)
        os.rename(self.dir, self.out)
        self.published = True
        return self.out


def link_or_copy(src: Path, dst: Path) -> str:
    """``dst`` a hard link to ``src`` where the filesystem allows, else a copy; which it was."""
    try:
        os.link(src, dst)
        return "hard link"
    except OSError:
        shutil.copyfile(src, dst)
        return "copy"


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """A harness JSON file: indented, NaN refused, non-ASCII readable (a lone surrogate kept as an escape)."""
    text = json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=1, allow_nan=False)
    return atomic.write_text(path, text + "\n")


def exchange(staged: Path, target: Path) -> None:
    """Swap two folders in one step (Linux ``renameat2(RENAME_EXCHANGE)``); elsewhere three renames."""
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        fn = getattr(libc, "renameat2", None)
        if fn is not None:
            at_fdcwd, rename_exchange = -100, 2
            if fn(at_fdcwd, os.fsencode(staged), at_fdcwd, os.fsencode(target), rename_exchange) == 0:
                return
    old = target.with_name(f".{target.name}.harness-old")
    shutil.rmtree(old, ignore_errors=True)
    os.rename(target, old)
    os.rename(staged, target)
    os.rename(old, staged)


def publish(work: Path, target: Path) -> bool:
    """A finished folder renamed to ``target`` in one step; False (and ``work`` removed) when another
    process published a folder there first (a shared cache's store: theirs is as good as ours)."""
    try:
        os.replace(work, target)
        return True
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
        return False


def replace_dir(new: Path, target: Path) -> None:
    """``target`` replaced by the finished folder ``new``: the old one set aside, the new one renamed
    in, the old one removed (a kill in between leaves the old or the new one whole, beside)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def move_in(src: Path, dst: Path) -> bool:
    """A user's file or folder moved from a folder the harness is done with into the live one (never
    over anything: False when ``dst`` exists or the move fails)."""
    if os.path.lexists(dst):
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, dst)
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- reading


class Ordered(BaseModel):
    """A file's model (or a part of one) that writes back the bytes it was read from: the keys in the
    order the file had them (a key the model declares but the file lacked, at the end), and a key a
    later version adds kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    _order: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: Any) -> Any:
        obj = handler(data)
        if isinstance(data, dict) and isinstance(obj, Ordered):
            obj._order = [str(k) for k in data]
        return obj

    def to_json(self) -> dict[str, Any]:
        d = self.model_dump(mode="json", by_alias=True)
        for name, field in type(self).model_fields.items():
            key = field.alias or name
            if key in d:
                d[key] = _in_order(getattr(self, name), d[key])
        first = {k: d[k] for k in self._order if k in d}
        return {**first, **{k: v for k, v in d.items() if k not in first}}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """The file, as :func:`write_json` writes every harness file."""
        return write_json(path, self.to_json())


def _in_order(value: Any, dumped: Any) -> Any:
    """``dumped`` with every :class:`Ordered` model inside ``value`` in its file's key order."""
    if isinstance(value, Ordered):
        return value.to_json()
    if isinstance(value, list) and isinstance(dumped, list):
        return [_in_order(v, x) for v, x in zip(value, dumped)]
    if isinstance(value, dict) and isinstance(dumped, dict):
        return {k: _in_order(value.get(k), x) for k, x in dumped.items()}
    return dumped


def read_json(path: str | os.PathLike[str], *, what: str = "") -> Any:
    """A harness JSON file, parsed within :data:`MAX_BYTES`: missing, unreadable, too large or not JSON
    is one located line."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"missing{f' (not {what})' if what else ''}", path=p) from None
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=p) from None
    if len(data) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES >> 20} MiB: not a file the harness wrote", path=p)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", path=p) from None
    except json.JSONDecodeError as e:
        cut = " (cut short?)" if e.pos >= len(data.rstrip()) else ""
        raise InputError(f"not valid JSON: {e.msg}{cut}", path=p, line=e.lineno) from None


#: pydantic's error types in the words a user reads (the value found is added)
_WANTED = {
    "missing": "missing",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "greater_than_equal": "must be >= {ge}",
}


def located(e: ValidationError, path: Path) -> InputError:
    """A pydantic error as one line naming the file and the key (``a.b[2].c``), in a user's words."""
    err = e.errors()[0]
    key = ""
    for part in err["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    wanted = _WANTED.get(err["type"])
    if wanted is None:
        msg = err["msg"].removeprefix("Value error, ")
    elif err["type"] == "missing":
        msg = "missing (the harness always writes it)"
    else:
        found = json.dumps(err.get("input"), ensure_ascii=False, default=str)
        msg = f"{wanted.format(**(err.get('ctx') or {}))}, not {found[:60]}"
    return InputError(msg, path=path, field=key or None)


def validate(model: type[M], doc: Any, path: Path) -> M:
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise located(e, path) from None


def file_problems(
    folder: Path, files: Mapping[str, str], listed_in: str, *, by: str = "the harness"
) -> list[InputError]:
    """Each file of ``files`` (name -> sha256) missing from ``folder`` or changed since it was written."""
    problems: list[InputError] = []
    for rel, sha in files.items():
        f = folder / rel
        if not f.resolve().is_relative_to(folder.resolve()):
            problems.append(InputError(f"{listed_in} names a file outside its folder", path=f))
        elif not f.is_file():
            problems.append(InputError(f"listed in {listed_in} but missing", path=f))
        elif sha and sha256_file(f) != sha:
            problems.append(InputError(f"changed since {by} wrote it (sha256 differs)", path=f))
    return problems


def open_envelope(
    path: str | os.PathLike[str],
    kind: str,
    model: type[M],
    *,
    version: int,
    upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    allow_incomplete: bool = False,
    check_files: bool = True,
    incomplete: str = "incomplete: the command that wrote it was interrupted",
    by: str = "the harness",
) -> M:
    """``path`` read as a ``kind`` envelope: parsed (bounded), ``upgrade`` applied to an older envelope
    (it returns the current shape, or None when the file is not a ``kind`` file at all), the schema
    and version checked, then the owner's ``model``; an interrupted folder or a listed file missing or
    changed is refused (exit 2) unless ``allow_incomplete`` (then each is a warning)."""
    p = Path(path)
    doc = read_json(p)
    if isinstance(doc, dict) and doc.get("schema") != schema(kind) and upgrade is not None:
        doc = upgrade(doc)
    if not isinstance(doc, dict) or doc.get("schema") != schema(kind):
        raise InputError(f"not a {kind} file (schema {schema(kind)!r} expected)", path=p, field="schema")
    v = doc.get("schema_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError("must be a whole number >= 1", path=p, field="schema_version")
    if v > version:
        raise InputError(
            f"{v} is newer than this harness reads ({version}); upgrade retrieval-harness", path=p,
            field="schema_version",
        )  # fmt: skip
    obj = validate(model, doc, p)
    problems: list[InputError] = []
    if doc.get("complete") is False:
        problems.append(InputError(incomplete, path=p))
    files = doc.get("files")
    if check_files and isinstance(files, dict):
        problems += file_problems(p.parent, {str(k): str(v) for k, v in files.items()}, p.name, by=by)
    if problems and not allow_incomplete:
        raise problems[0]
    for e in problems:
        log.warning("%s", e)
    return obj


__all__ = [
    "MAX_BYTES",
    "FolderLocked",
    "Ordered",
    "Staged",
    "check_out",
    "exchange",
    "file_problems",
    "link_or_copy",
    "located",
    "lock",
    "move_in",
    "open_envelope",
    "publish",
    "read_json",
    "replace_dir",
    "schema",
    "sha256_file",
    "validate",
    "write_json",
]
