"""``ir_datasets`` ids (``irds:beir/scifact/test``) whose files are already on disk.

The harness never downloads at run time: while the dataset is read, every download
:mod:`ir_datasets` would start is refused with an error that says which file is missing and how to
fetch it once, ahead of time (``python -c "import ir_datasets; ir_datasets.load('ID').docs_iter()..."``
on a machine with network, then copy ``~/.ir_datasets`` or set ``IR_DATASETS_HOME``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from harness import extras
from harness.errors import InputError
from harness.model import Document, GoldenDataset, Query

PREFIXES = ("irds:", "ir_datasets:")


def is_irds(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIXES)


def irds_id(value: str) -> str:
    for p in PREFIXES:
        if value.startswith(p):
            return value[len(p) :]
    return value


class _WouldDownload(Exception):
    pass


@contextlib.contextmanager
def _no_downloads() -> Iterator[None]:
    """Make every ir_datasets download raise instead of touching the network; files already on
    disk (their cache path exists) are read as usual."""
    from ir_datasets.util import download

    orig_path, orig_stream = download.Download.path, download.Download.stream

    def path(self, force=True):
        cached = self._cache_path
        if self._path is None and force and not (cached is not None and os.path.exists(cached)):
            urls = [getattr(m, "url", getattr(m, "uri", repr(m))) for m in self.mirrors]
            raise _WouldDownload(
                f"{cached or 'a temporary file'} is not on disk (would download {urls[0] if urls else '?'})"
            )
        return orig_path(self, force)

    @contextlib.contextmanager
    def stream(self):
        if self._stream:
            urls = [getattr(m, "url", repr(m)) for m in self.mirrors]
            raise _WouldDownload(f"streamed file not on disk (would download {urls[0] if urls else '?'})")
        with orig_stream(self) as s:
            yield s

    download.Download.path, download.Download.stream = path, stream
    try:
        yield
    finally:
        download.Download.path, download.Download.stream = orig_path, orig_stream


@contextlib.contextmanager
def _library_warnings_only() -> Iterator[None]:
    """ir_datasets' own INFO lines (``[INFO] [starting] opening zip file``, its tqdm bars) would reach
    the terminal raw, beside the harness's display: only its warnings and errors do while it reads."""
    # a filter, not a level: ir_datasets sets its logger's level to INFO when it first logs
    logger = logging.getLogger("ir_datasets")
    below_warning = logging.Filter()
    below_warning.filter = lambda record: record.levelno >= logging.WARNING  # type: ignore[method-assign]
    logger.addFilter(below_warning)
    try:
        yield
    finally:
        logger.removeFilter(below_warning)


def load_irds(value: str, *, name: str | None = None) -> GoldenDataset:
    """A :class:`GoldenDataset` from an ``ir_datasets`` id with docs, queries and qrels on disk."""
    ident = irds_id(value)
    try:
        import ir_datasets
    except ImportError as e:
        hint = "ir_datasets ids need the ir_datasets package: pip install 'retrieval-harness[golden]'"
        raise InputError(extras.import_problem(e, "ir_datasets", hint), path=value) from None
    try:
        ds = ir_datasets.load(ident)
    except KeyError:
        raise InputError(f"unknown ir_datasets id {ident!r}", path=value) from None
    for part in ("docs", "queries", "qrels"):
        if not getattr(ds, f"has_{part}")():
            raise InputError(f"ir_datasets {ident!r} has no {part}; name a subset that has (e.g. .../test)", path=value)
    home = Path(os.environ.get("IR_DATASETS_HOME", Path.home() / ".ir_datasets"))
    try:
        with _no_downloads(), _library_warnings_only():
            corpus = [_document(d) for d in ds.docs_iter()]
            queries = [_query(q) for q in ds.queries_iter()]
            qrels: dict[str, dict[str, int]] = {}
            for r in ds.qrels_iter():
                qrels.setdefault(str(r.query_id), {})[str(r.doc_id)] = int(r.relevance)
    except _WouldDownload as e:
        raise InputError(
            f"ir_datasets {ident!r} is not on disk and the harness does not download at run time: {e}. "
            f"Fetch it once where there is network (ir_datasets.load({ident!r}).docs_iter()...) and copy "
            f"{home} here, or set IR_DATASETS_HOME",
            path=value,
        ) from None
    known = {q.id for q in queries}
    qrels = {q: d for q, d in qrels.items() if q in known}
    selected = [q for q in queries if q.id in qrels]
    dataset = GoldenDataset.build(name or ident.replace("/", "-"), corpus, selected, qrels, source=f"irds:{ident}")
    if not dataset.queries:
        raise InputError(f"ir_datasets {ident!r} has no judged queries", path=value)
    return dataset


def _document(d) -> Document:
    text = getattr(d, "text", None)
    if text is None:
        text = getattr(d, "default_text", lambda: "")()
    return Document(id=str(d.doc_id), text=text, title=getattr(d, "title", "") or "")


def _query(q) -> Query:
    text = getattr(q, "text", None)
    if text is None:
        text = q.default_text()
    return Query(id=str(q.query_id), text=text)
