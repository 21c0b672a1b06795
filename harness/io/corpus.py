"""Corpora in the shapes people have: a JSONL of ``{_id|id, text, title?}`` (BEIR's
``corpus.jsonl``), a Parquet file or folder of Parquet files, a Hugging Face ``datasets`` folder, or
a folder of ``.txt`` / ``.md`` files.

A folder of text files is one document per file; the id is the path relative to the folder with
forward slashes (``guides/setup.md``), whitespace and ``%`` percent-encoded (``my%20notes.md``) so
the id fits a TREC file; the text is the file's exact content (CRLF kept, a UTF-8 BOM dropped), so a
chunk's character span points into the file as it is on disk. Hidden files and folders are skipped.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import InputError
from harness.io.beir import read_corpus as read_corpus_jsonl
from harness.io.tabular import check_id, detect_format, read_rows
from harness.model import Document

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
_DOC_KEYS = {"_id", "id", "doc_id", "title", "text", "metadata"}

log = logging.getLogger("harness")


def _is_text_folder(p: Path) -> bool:
    if not p.is_dir():
        return False
    return not ((p / "dataset_dict.json").is_file() or (p / "state.json").is_file() or any(p.glob("*.parquet")))


def text_file_id(relative: Path) -> str:
    """The document id of a file in a text folder: its relative posix path, whitespace and ``%``
    percent-encoded (reversible, and a TREC file can hold it)."""
    out = []
    for ch in relative.as_posix():
        if ch == "%" or ch.isspace():
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def _inside(f: Path, real_root: Path) -> bool:
    """Whether ``f`` (a symlink, possibly through others) resolves to a file inside ``real_root``."""
    try:
        target = f.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, or a symlink loop
        return False
    return target == real_root or real_root in target.parents


def text_files(root: Path) -> tuple[list[Path], list[Path]]:
    """``(files, outside)``: the ``.txt`` / ``.md`` files under ``root`` (hidden ones skipped), and the
    symlinks (to such files, or to folders) that point outside ``root`` (or nowhere), which are never
    read: a corpus folder must not pull ``/etc/passwd`` into an index or a converted corpus.jsonl. File
    symlinks that stay inside the folder are read; folder symlinks are never descended into."""
    real_root = root.resolve()
    files: list[Path] = []
    outside: list[Path] = []
    for f in root.rglob("*"):
        if any(part.startswith(".") for part in f.relative_to(root).parts):
            continue
        if f.is_symlink() and not _inside(f, real_root):  # rglob does not descend into folder symlinks
            if f.suffix.lower() in TEXT_SUFFIXES or f.is_dir():
                outside.append(f)
            continue
        if f.suffix.lower() in TEXT_SUFFIXES and f.is_file():
            files.append(f)
    return sorted(files), sorted(outside)


def read_text_folder(folder: str | os.PathLike[str]) -> list[Document]:
    """One document per ``.txt`` / ``.md`` file under ``folder`` (recursive, sorted by id); file
    symlinks pointing outside the folder are skipped with a warning that counts them."""
    root = Path(folder).expanduser()
    files, outside = text_files(root)
    if outside:
        log.warning(
            "%s: skipped %d symlink%s pointing outside the corpus folder (never followed), e.g. %s",
            root,
            len(outside),
            "" if len(outside) == 1 else "s",
            outside[0].relative_to(root).as_posix(),
        )
    if not files:
        raise InputError(f"no {'/'.join(TEXT_SUFFIXES)} files in the corpus folder", path=root)
    docs = []
    for f in files:
        rel_name = f.relative_to(root).as_posix()
        try:
            rel_name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InputError(
                f"file name is not valid UTF-8 (byte {ord(rel_name[e.start]) - 0xDC00:#x} at character {e.start}); "
                "a document id must be text: rename the file",
                path=f,
            ) from None
        raw = f.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            raise InputError(f"not valid UTF-8 (byte {e.start})", path=f, line=line) from None
        if text.startswith("\ufeff"):
            text = text[1:]
        rel = f.relative_to(root)
        docs.append(Document(id=text_file_id(rel), text=text, metadata={"path": rel.as_posix()}))
    return docs


def read_tabular_corpus(path: str | os.PathLike[str], *, fmt: str | None = None) -> list[Document]:
    """Documents from Parquet / HF / CSV rows with ``_id`` (or ``id``, ``doc_id``), ``text`` and an
    optional ``title``; other columns go to ``metadata``."""
    p = Path(path).expanduser()
    columns, rows = read_rows(p, "corpus", fmt=fmt)
    id_col = next((c for c in ("_id", "id", "doc_id") if c in columns), None)
    if id_col is None:
        raise InputError(f"no id column (expected '_id' or 'id'; found: {', '.join(columns)})", path=p, field="_id")
    if "text" not in columns:
        raise InputError(f"no 'text' column (found: {', '.join(columns)})", path=p, field="text")
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for row in rows:
        cells = row.cells
        raw = cells.get(id_col)
        if raw is None or isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise InputError(f"must be a string, got {raw!r}", path=row.path, line=row.line, field=id_col)
        doc_id = check_id(str(raw).strip() if row.text_cells else str(raw), row, id_col, what="")
        if doc_id in seen:
            raise InputError(
                f"duplicate document id {doc_id!r} (first at line {seen[doc_id]})",
                path=row.path,
                line=row.line,
                field=id_col,
            )
        seen[doc_id] = row.line
        text = cells.get("text")
        title = cells.get("title")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise InputError(f"must be a string, got {type(text).__name__}", path=row.path, line=row.line, field="text")
        if title is not None and not isinstance(title, str):
            raise InputError(
                f"must be a string, got {type(title).__name__}", path=row.path, line=row.line, field="title"
            )
        meta: dict[str, Any] = {}
        if isinstance(cells.get("metadata"), dict):
            meta.update(cells["metadata"])
        meta.update({k: v for k, v in cells.items() if k not in _DOC_KEYS and v is not None})
        try:
            docs.append(Document(id=doc_id, text=text, title=title or "", metadata=_jsonable(meta)))
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(err["msg"], path=row.path, line=row.line, field=str(err["loc"][0])) from None
    if not docs:
        raise InputError("corpus has no documents", path=p)
    return docs


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def read_any_corpus(path: str | os.PathLike[str], *, fmt: str | None = None) -> list[Document]:
    """A corpus in any supported shape (see the module docstring); ``fmt`` overrides detection
    (``jsonl``, ``csv``, ``tsv``, ``parquet``, ``hf``, ``text``)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError("corpus not found", path=p)
    if fmt == "text" or (fmt is None and _is_text_folder(p)):
        if not p.is_dir():
            raise InputError("format 'text' expects a folder of .txt/.md files", path=p)
        return read_text_folder(p)
    kind = detect_format(p, fmt)
    if kind == "jsonl":
        docs = read_corpus_jsonl(p)
        if not docs:
            raise InputError("corpus has no documents", path=p)
        return docs
    return read_tabular_corpus(p, fmt=kind)
