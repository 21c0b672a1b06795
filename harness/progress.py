"""One progress display for the whole harness: retriever i/n, stage, done/total and ETA.

Deep code (an encoder, a BM25 indexer, the scorer) reports through :func:`current` without knowing
who listens, and passes ``show_progress=False`` to third-party libraries, so a run shows one display
instead of a stack of unrelated tqdm bars (``Batches 35/81`` says nothing about *what* is encoded).

Who listens is decided once, at the edge, with :func:`for_stream`:

- on a terminal, :class:`RichProgress`: a live line (``[2/5] dense: encoding 5183 docs``, a bar,
  done/total, ETA) with finished retrievers printed above it;
- not on a terminal (``make bench``, CI logs) and asked for, :class:`PlainProgress`: timestamped
  lines at every stage change and a heartbeat line every 30 s while a stage is open, so a 20-minute
  encode is never a silent log;
- otherwise :class:`NullProgress`, which does nothing: the Python API prints nothing into a pipe
  unless the caller asks.

The active reporter is a module-level stack (:func:`use` pushes, leaving pops), not a
``contextvars.ContextVar``: a worker thread started inside ``use()`` does not inherit a context
variable, but it must report to the same display. :func:`session` makes, uses and closes one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

__all__ = [
    "HEARTBEAT_SECONDS",
    "NullProgress",
    "PlainProgress",
    "Progress",
    "RichProgress",
    "current",
    "for_stream",
    "quiet_third_party",
    "session",
    "use",
]

#: Seconds between two heartbeat lines of :class:`PlainProgress` while a stage is open.
HEARTBEAT_SECONDS = 30.0


class Progress:
    """The reporter interface, and its no-op: every method may be called from any thread.

    ``start(total_nodes)`` once per run; ``node(i, n, name)`` when retriever ``i`` of ``n`` starts;
    ``phase(name, total)`` for each stage of it (``total`` when the amount of work is known, for
    done/total and an ETA); ``advance(n)`` as work is done; ``note(msg)`` for a line worth reading;
    ``node_done(name, ok, seconds)`` when it finishes; ``close()`` at the end.
    """

    #: False for the no-op: callers may skip work that only feeds a display (quieting tqdm).
    active = False

    def start(self, total_nodes: int) -> None:
        """A run of ``total_nodes`` retrievers begins."""

    def node(self, index: int, total: int, name: str) -> None:
        """Retriever ``index`` (1-based) of ``total``, called ``name``, starts."""

    def phase(self, name: str, total: int | None = None) -> None:
        """A stage starts (``"encoding 5183 docs"``, ``"searching"``); ``total`` units of work, if known."""

    def advance(self, n: int = 1) -> None:
        """``n`` more units of the current stage are done."""

    def current_phase(self) -> str | None:
        """The name of the stage open now, if any: a caller whose work may open stages of its own (a
        rerank stage scoring pairs inside "searching") counts into its stage only while it is open."""
        return None

    def note(self, msg: str) -> None:
        """A message for the reader, shown without disturbing the display."""

    def detail(self, text: str) -> None:
        """A live figure of the current stage (``812 docs/s, model waited 3%``), shown after its
        counts until the next stage; empty clears it."""

    def node_done(self, name: str, ok: bool, seconds: float) -> None:
        """Retriever ``name`` finished (``ok`` False when it failed) after ``seconds``."""

    def close(self) -> None:
        """The run is over: stop timers, clear live displays. Safe to call twice."""

    def numbered(self, index: int, total: int) -> tuple[int, int]:
        """``(index, total)`` as this display numbers retriever ``index`` of ``total`` (for log lines)."""
        return index, total


class NullProgress(Progress):
    """The no-op reporter, current when nobody asked for a display."""


class Numbered(Progress):
    """``inner``, with retrievers numbered ``before + i`` of ``total``: a run made of several graphs
    (one per chunking) counts its retrievers once, ``[3/6]`` rather than ``[1/2]`` twice."""

    def __init__(self, inner: Progress, before: int, total: int) -> None:
        self.inner, self.before, self.total_nodes = inner, before, total
        self.active = inner.active

    def start(self, total_nodes: int) -> None:
        if self.before == 0:
            self.inner.start(self.total_nodes)

    def node(self, index: int, total: int, name: str) -> None:
        self.inner.node(self.before + index, self.total_nodes, name)

    def phase(self, name: str, total: int | None = None) -> None:
        self.inner.phase(name, total)

    def advance(self, n: int = 1) -> None:
        self.inner.advance(n)

    def current_phase(self) -> str | None:
        return self.inner.current_phase()

    def note(self, msg: str) -> None:
        self.inner.note(msg)

    def detail(self, text: str) -> None:
        self.inner.detail(text)

    def node_done(self, name: str, ok: bool, seconds: float) -> None:
        self.inner.node_done(name, ok, seconds)

    def close(self) -> None:
        """Closing stays with whoever made ``inner``."""

    def numbered(self, index: int, total: int) -> tuple[int, int]:
        return self.before + index, self.total_nodes


# ---------------------------------------------------------------------- the current reporter
_NULL = NullProgress()
_stack: list[Progress] = []
_stack_lock = threading.Lock()


def current() -> Progress:
    """The reporter deep code reports to: the innermost :func:`use`, or a no-op."""
    with _stack_lock:
        return _stack[-1] if _stack else _NULL


@contextlib.contextmanager
def use(reporter: Progress, *, quiet: bool = True) -> Iterator[Progress]:
    """Make ``reporter`` current (for every thread) while the block runs.

    It does not close the reporter: whoever made it does (see :func:`session`), because a worker
    thread re-enters ``use()`` with the reporter it inherited, and leaving that block must not end
    the display. With an active reporter and ``quiet`` (the default), third-party progress bars are
    silenced while it is current (:func:`quiet_third_party`), from its outermost ``use()`` to the
    end of it.
    """
    with _stack_lock:
        outermost = not any(r is reporter for r in _stack)
        _stack.append(reporter)
    restore: Callable[[], None] = _noop
    if quiet and reporter.active and outermost:
        restore = quiet_third_party()
    try:
        yield reporter
    finally:
        with _stack_lock:
            # remove this entry, wherever it is (a misnested exit must not pop someone else's)
            for i in range(len(_stack) - 1, -1, -1):
                if _stack[i] is reporter:
                    del _stack[i]
                    break
        restore()


@contextlib.contextmanager
def session(stream: IO[str] | None = None, enabled: bool | None = None, **kwargs: Any) -> Iterator[Progress]:
    """The display for ``stream`` (:func:`for_stream`), current for the block and closed after it:
    what ``harness run`` and ``harness.benchmark`` wrap a run in."""
    reporter = for_stream(stream, enabled, **kwargs)
    try:
        with use(reporter):
            yield reporter
    finally:
        reporter.close()


def _noop() -> None:
    return None


def for_stream(stream: IO[str] | None = None, enabled: bool | None = None, **kwargs: Any) -> Progress:
    """The reporter that suits ``stream`` (default ``sys.stderr``).

    ``enabled=False``: nothing. A terminal: :class:`RichProgress` unless ``enabled`` is False. Not a
    terminal (a pipe, a file, a notebook's captured stream): :class:`PlainProgress` only when
    ``enabled=True`` says so explicitly, else nothing, so library use never writes into a pipe
    unasked. ``kwargs`` go to the reporter (``interval=`` for the plain one's heartbeat).
    """
    stream = stream if stream is not None else sys.stderr
    if enabled is False:
        return NullProgress()
    if _isatty(stream):
        return RichProgress(stream, **{k: v for k, v in kwargs.items() if k != "interval"})
    if enabled:
        return PlainProgress(stream, **kwargs)
    return NullProgress()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed or not a file
        return False


# ---------------------------------------------------------------------- shared state
class _State(Progress):
    """Where the run is: node i/n, stage, done/total, and the arithmetic of an ETA."""

    active = True

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self.total_nodes: int | None = None
        self.index: int | None = None
        self.name: str | None = None
        self.stage: str | None = None
        self.total: int | None = None
        self.done = 0
        self.stage_started = clock()
        self.detail_text = ""

    # callers' API -------------------------------------------------------
    def start(self, total_nodes: int) -> None:
        with self._lock:
            self.total_nodes = total_nodes

    def node(self, index: int, total: int, name: str) -> None:
        with self._lock:
            self.index, self.total_nodes, self.name = index, total, name
            self.stage, self.total, self.done = None, None, 0

    def phase(self, name: str, total: int | None = None) -> None:
        with self._lock:
            self.stage, self.total, self.done = name, total, 0
            self.stage_started = self._clock()
            self.detail_text = ""

    def detail(self, text: str) -> None:
        with self._lock:
            self.detail_text = text

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n

    def current_phase(self) -> str | None:
        with self._lock:
            return self.stage

    # rendering helpers --------------------------------------------------
    def where(self) -> str:
        """``[2/5] dense: encoding 5183 docs`` (the parts that are known)."""
        parts = []
        if self.index is not None:
            parts.append(f"[{self.index}/{self.total_nodes}]" if self.total_nodes else f"[{self.index}]")
        if self.name:
            parts.append(f"{self.name}:" if self.stage else self.name)
        if self.stage:
            parts.append(self.stage)
        return " ".join(parts)

    def eta_seconds(self) -> float | None:
        """Time left in the current stage at the rate so far; None while nothing is done."""
        if not self.total or self.done <= 0:
            return None
        elapsed = self._clock() - self.stage_started
        left = max(self.total - self.done, 0)
        return elapsed / self.done * left

    def counts(self) -> str:
        """``1,200/5,183 (23%) ETA 3m12s``, ``1,200 done``, or empty; then the stage's
        :meth:`detail`, if any."""
        extra = f", {self.detail_text}" if self.detail_text else ""
        if self.total:
            pct = 100.0 * min(self.done, self.total) / self.total
            text = f"{self.done:,}/{self.total:,} ({pct:.0f}%)"
            eta = self.eta_seconds()
            return (f"{text} ETA {fmt_duration(eta)}" if eta is not None else text) + extra
        return (f"{self.done:,} done" if self.done else "") + extra


def fmt_duration(seconds: float) -> str:
    """``42s``, ``3m12s``, ``1h05m``: short enough for a status line."""
    s = round(max(float(seconds), 0.0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


# ---------------------------------------------------------------------- plain lines (logs, CI)
class PlainProgress(_State):
    """Timestamped lines for a log: one per node and stage change, one per note and finished node,
    and a heartbeat (``[2/5] dense: encoding 5183 docs ... still going, 1,200/5,183 (23%) ETA 3m12s``)
    every ``interval`` seconds while a retriever or a stage runs, so a long stage is visibly alive.

    The heartbeat comes from a daemon timer thread started with the first stage and stopped by
    :meth:`close`; it never keeps the process alive.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        interval: float = HEARTBEAT_SECONDS,
        prefix: str = "harness",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock)
        self.stream = stream if stream is not None else sys.stderr
        self.interval = float(interval)
        self.prefix = prefix
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._open = False  # a node or a stage is running: heartbeats are due

    def _write(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {self.prefix}: {text}\n"
        with self._lock:
            try:
                self.stream.write(line)
                self.stream.flush()
            except (ValueError, OSError):  # the stream was closed under us: drop the line
                pass

    def _ensure_timer(self) -> None:
        if self._thread is None and self.interval > 0:
            self._thread = threading.Thread(target=self._beat, name="harness-progress", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if not self._open:
                    continue
                counts = self.counts()
                self._write(f"{self.where()} ... still going" + (f", {counts}" if counts else ""))

    def start(self, total_nodes: int) -> None:
        super().start(total_nodes)
        self._write(f"running {total_nodes} retriever{'s' if total_nodes != 1 else ''}")

    def node(self, index: int, total: int, name: str) -> None:
        with self._lock:
            super().node(index, total, name)
            self._open = True  # a retriever that reports no stage (an HTTP service) still gets heartbeats
            self._write(f"[{index}/{total}] {name}")
        self._ensure_timer()

    def phase(self, name: str, total: int | None = None) -> None:
        with self._lock:
            self._end_stage()
            super().phase(name, total)
            self._open = True
            self._write(self.where() + (f" (0/{total:,})" if total else ""))
        self._ensure_timer()

    def _end_stage(self) -> None:
        """The closing line of a counted stage (``... encoding docs: 187/187 (100%) in 3s``): a log that
        saw only ``(0/187)`` could not tell a finished stage from one that hung or lost work."""
        if self.stage is not None and self.done:
            took = fmt_duration(self._clock() - self.stage_started)
            done = f"{self.done:,}/{self.total:,}" if self.total else f"{self.done:,}"
            pct = f" ({100.0 * min(self.done, self.total) / self.total:.0f}%)" if self.total else ""
            extra = f", {self.detail_text}" if self.detail_text else ""
            self._write(f"{self.where()}: {done}{pct} in {took}{extra}")
        self.stage, self.total, self.done = None, None, 0

    def note(self, msg: str) -> None:
        self._write(msg)

    def node_done(self, name: str, ok: bool, seconds: float) -> None:
        with self._lock:
            self._end_stage()
            self._open = False
            where = f"[{self.index}/{self.total_nodes}] " if self.index is not None and self.name == name else ""
            self._write(f"{where}{name} {'done' if ok else 'FAILED'} in {fmt_duration(seconds)}")

    def close(self) -> None:
        with self._lock:
            if self._open:
                self._end_stage()
            self._open = False
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(self.interval, 1.0) + 1.0)


# ---------------------------------------------------------------------- the terminal (rich)
class RichProgress(_State):
    """A live status line on a terminal: ``[2/5] dense: encoding 5183 docs`` with a bar,
    done/total, elapsed time and ETA; finished retrievers and notes print above it."""

    def __init__(self, stream: IO[str] | None = None, *, transient: bool = True) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as _RichBar

        self.console = Console(file=stream if stream is not None else sys.stderr)
        self._bar = _RichBar(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=transient,
        )
        self._task: Any = None
        self._started = False

    def _ensure(self) -> None:
        if not self._started:
            self._bar.start()
            self._task = self._bar.add_task("starting", total=None)
            self._started = True

    def _new_task(self, total: int | None) -> None:
        """A fresh task per stage: its own clock (for the ETA) and its own total (None: no bar)."""
        self._ensure()
        self._bar.remove_task(self._task)
        self._task = self._bar.add_task(self.where(), total=total)

    def start(self, total_nodes: int) -> None:
        with self._lock:
            super().start(total_nodes)
            self._ensure()

    def node(self, index: int, total: int, name: str) -> None:
        with self._lock:
            super().node(index, total, name)
            self._new_task(None)

    def phase(self, name: str, total: int | None = None) -> None:
        with self._lock:
            super().phase(name, total)
            self._new_task(total)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            super().advance(n)
            if self._started:
                self._bar.advance(self._task, n)

    def note(self, msg: str) -> None:
        self.console.print(msg, markup=False, highlight=False)

    def detail(self, text: str) -> None:
        with self._lock:
            super().detail(text)
            if self._started:
                self._bar.update(self._task, description=self.where() + (f" ({text})" if text else ""))

    def node_done(self, name: str, ok: bool, seconds: float) -> None:
        with self._lock:
            where = f"[{self.index}/{self.total_nodes}] " if self.index is not None and self.name == name else ""
            mark = "[green]done[/]" if ok else "[red]FAILED[/]"
            self.console.print(f"{where}{_escape(name)} {mark} in {fmt_duration(seconds)}", highlight=False)
            if self._started:  # the live line must not go on showing the finished stage
                self.stage, self.total, self.done = None, None, 0
                self._bar.remove_task(self._task)
                self._task = self._bar.add_task(f"{where}{name} finished", total=None)

    def close(self) -> None:
        with self._lock:
            if self._started:
                self._bar.stop()
                self._started = False


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# ---------------------------------------------------------------------- third-party bars
#: environment switches read by libraries when they import (and by subprocesses)
_QUIET_ENV = {
    "TQDM_DISABLE": "1",  # tqdm >= 4.66 reads TQDM_* defaults when it is imported
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub downloads / loading bars
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
#: loggers whose INFO chatter (and, for some, tqdm bars) would interleave with the display
_QUIET_LOGGERS = ("sentence_transformers", "transformers", "bm25s", "huggingface_hub", "faiss")


def quiet_third_party() -> Callable[[], None]:
    """Silence third-party progress bars so the harness display is the only one; returns a function
    that restores what was changed (environment, logger levels, library switches).

    tqdm reads ``TQDM_DISABLE`` when it is first imported, so this works for libraries imported
    afterwards and for subprocesses; bars of an already imported tqdm that a library enables
    explicitly are stopped only by that library's ``show_progress=False``, which adapters pass.
    """
    saved_env = {k: os.environ.get(k) for k in _QUIET_ENV}
    os.environ.update(_QUIET_ENV)
    saved_levels = {}
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        saved_levels[name] = logger.level
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    undo: list[Callable[[], None]] = []
    # only libraries already imported: importing transformers here would cost seconds
    hf = sys.modules.get("huggingface_hub.utils")
    if hf is not None and hasattr(hf, "disable_progress_bars"):
        was = hf.are_progress_bars_disabled() if hasattr(hf, "are_progress_bars_disabled") else False
        hf.disable_progress_bars()
        if not was and hasattr(hf, "enable_progress_bars"):
            undo.append(hf.enable_progress_bars)
    tf = sys.modules.get("transformers.utils.logging")
    if tf is not None and hasattr(tf, "disable_progress_bar"):
        was_on = tf.is_progress_bar_enabled() if hasattr(tf, "is_progress_bar_enabled") else True
        tf.disable_progress_bar()
        if was_on and hasattr(tf, "enable_progress_bar"):
            undo.append(tf.enable_progress_bar)

    def restore() -> None:
        for fn in undo:
            with contextlib.suppress(Exception):
                fn()
        for name, level in saved_levels.items():
            logging.getLogger(name).setLevel(level)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return restore
