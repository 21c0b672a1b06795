"""Rows from the tabular files golden sets and corpora come in: JSONL, CSV/TSV, Parquet, a folder of
Parquet files, or a Hugging Face ``datasets`` folder written by ``save_to_disk``.

Every row comes with its location (``path``, 1-based line or row number), so a bad value anywhere
downstream is reported as ``FILE:LINE: column: what is wrong``. The format is detected from the file
name (``.jsonl``/``.ndjson``/``.json``, ``.csv``, ``.tsv``, ``.parquet``) or the folder's contents;
``fmt`` overrides the detection.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import extras
from harness.errors import InputError
from harness.io import jsontext
from harness.io.lines import MAX_LINE_BYTES, iter_lines, json_object, open_checked

FORMATS = ("jsonl", "csv", "tsv", "parquet", "hf")
_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}


@dataclass(frozen=True)
class Row:
    """One record and where it came from; ``cells`` are the file's values as parsed (strings for
    CSV, JSON values for JSONL, Python values for Parquet / Arrow)."""

    path: Path
    line: int
    cells: dict[str, Any]
    #: True when every cell is a string that still needs decoding (CSV/TSV)
    text_cells: bool = False


def check_id(value: str, row: Row, column: str, what: str = "id ") -> str:
    """An id as TREC files can hold it (not empty, no whitespace); else a located error."""
    if not value or any(c.isspace() for c in value):
        msg = f"{what}{value!r} is empty or contains whitespace (TREC files could not hold it)"
        raise InputError(msg, path=row.path, line=row.line, field=column)
    return value


def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` when given, else from the suffix or the folder's contents."""
    p = Path(path).expanduser()
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})", path=p, field="format")
        return fmt
    if p.is_dir():
        if (p / "dataset_dict.json").is_file() or (p / "state.json").is_file():
            return "hf"
        if any(p.glob("*.parquet")):
            return "parquet"
        raise InputError(
            "folder is neither a Hugging Face datasets folder (save_to_disk) nor a folder of .parquet files", path=p
        )
    if not p.exists():
        raise InputError("file not found", path=p)
    found = _SUFFIX.get(p.suffix.lower())
    if found is None:
        raise InputError(
            f"cannot tell the format from the name (known suffixes: {', '.join(sorted(_SUFFIX))}); "
            "name the format explicitly",
            path=p,
        )
    return found


def read_rows(
    path: str | os.PathLike[str], what: str, *, fmt: str | None = None, split: str | None = None
) -> tuple[list[str], Iterator[Row]]:
    """``(columns, rows)`` of a tabular file; ``what`` names the file in errors (e.g. "golden set")."""
    p = Path(path).expanduser()
    kind = detect_format(p, fmt)
    if kind == "jsonl":
        return _jsonl(p, what)
    if kind in ("csv", "tsv"):
        return _csv(p, what, "\t" if kind == "tsv" else ",")
    if kind == "parquet":
        return _parquet(p, what)
    return _hf(p, what, split)


def _jsonl(p: Path, what: str) -> tuple[list[str], Iterator[Row]]:
    open_checked(p, what)
    first = _first_char(p)
    if first == "[":
        # a .json file holding one array of objects: rows are numbered, not lines
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as e:
            line = p.read_bytes()[: e.start].count(b"\n") + 1
            raise InputError(f"not valid UTF-8 (byte {e.start})", path=p, line=line) from None
        data = jsontext.loads(text, path=p)
        if not isinstance(data, list):
            raise InputError(f"expected a JSON array of objects, got {type(data).__name__}", path=p, line=1)
        for i, obj in enumerate(data, start=1):
            if not isinstance(obj, dict):
                raise InputError(f"row {i}: expected a JSON object, got {type(obj).__name__}", path=p)
        columns = list(dict.fromkeys(k for obj in data for k in obj))
        return columns, (Row(p, i, obj) for i, obj in enumerate(data, start=1))

    def rows() -> Iterator[Row]:
        for lineno, line in iter_lines(p, what, skip_comments=False):
            yield Row(p, lineno, json_object(p, lineno, line))

    # columns: the union over the file (JSONL rows may omit optional keys)
    materialised = list(rows())
    columns = list(dict.fromkeys(k for r in materialised for k in r.cells))
    return columns, iter(materialised)


def _first_char(p: Path) -> str:
    with p.open("rb") as fh:
        head = fh.read(4096).decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    return head[:1]


def _csv(p: Path, what: str, delimiter: str) -> tuple[list[str], Iterator[Row]]:
    open_checked(p, what)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte {e.start})", path=p, line=line) from None
    import io

    # a cell may be as long as a line may be (16 MiB): the csv module's default limit is 128 KiB
    if csv.field_size_limit() < MAX_LINE_BYTES:
        csv.field_size_limit(MAX_LINE_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"empty {what}: no header row", path=p, line=1) from None
    except csv.Error as e:
        raise InputError(f"cannot parse the header ({e})", path=p, line=1) from None
    columns = [h.strip() for h in header]
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise InputError(f"column {dupes[0]!r} appears twice in the header", path=p, line=1)

    def rows() -> Iterator[Row]:
        start = reader.line_num + 1
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise InputError(f"cannot parse CSV ({e})", path=p, line=reader.line_num) from None
            line = start
            start = reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(columns):
                raise InputError(
                    f"{len(cells)} fields, the header has {len(columns)} ({', '.join(columns)}); "
                    "quote fields that contain the delimiter",
                    path=p,
                    line=line,
                )
            yield Row(p, line, dict(zip(columns, cells)), text_cells=True)

    return columns, rows()


def _parquet(p: Path, what: str) -> tuple[list[str], Iterator[Row]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        hint = f"reading Parquet needs pyarrow: pip install 'retrieval-harness[golden]' (or pyarrow) [{what}]"
        raise InputError(extras.import_problem(e, "pyarrow.parquet", hint), path=p) from None
    files = sorted(p.glob("*.parquet")) if p.is_dir() else [p]
    tables = []
    for f in files:
        try:
            tables.append((f, pq.read_table(f)))
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise InputError(f"cannot read Parquet ({e})", path=f) from None
    columns = list(dict.fromkeys(c for _, t in tables for c in t.column_names))

    def rows() -> Iterator[Row]:
        for f, t in tables:
            for i, rec in enumerate(t.to_pylist(), start=1):
                yield Row(f, i, rec)

    return columns, rows()


def _hf(p: Path, what: str, split: str | None) -> tuple[list[str], Iterator[Row]]:
    try:
        import datasets
    except ImportError as e:
        hint = f"reading a Hugging Face datasets folder needs `datasets`: {extras.install_command('golden')} [{what}]"
        raise InputError(extras.import_problem(e, "datasets", hint), path=p) from None
    try:
        ds = datasets.load_from_disk(str(p))
    except Exception as e:  # datasets raises FileNotFoundError / ValueError variants
        raise InputError(f"cannot load the datasets folder ({e})", path=p) from None
    where = p
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds)
        if split is not None and split in ds:
            chosen = split
        elif len(names) == 1:
            chosen = names[0]
        else:
            raise InputError(
                f"the folder holds splits {', '.join(names)}; name one (dataset split: ...)", path=p, field="split"
            )
        ds = ds[chosen]
        where = p / chosen
    columns = list(ds.column_names)
    return columns, (Row(where, i, rec) for i, rec in enumerate(ds, start=1))
