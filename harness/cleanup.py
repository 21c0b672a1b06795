"""What must be undone however the process ends: a private PostgreSQL a retriever started, a table it
wrote in a team's database.

``atexit`` alone is not enough: Ctrl-C during a run ends the process with ``os._exit`` (a worker
thread may be inside native code, see :func:`harness.cli._interrupted`), which skips it, and SIGTERM
or SIGHUP kill the process without it. So an adapter registers its undo here (:func:`on_exit`), the
CLI runs :func:`run_all` before ``os._exit``, and :func:`install_signal_handlers` (called by the CLI
from the main thread) runs it on SIGTERM and SIGHUP before the process ends by that signal as it
would have. A SIGKILL runs nothing: the adapter's next start sweeps what it left (by pid file).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_UNDO: dict[int, Callable[[], None]] = {}
_IDS = itertools.count()


def on_exit(undo: Callable[[], None]) -> Callable[[], None]:
    """Run ``undo`` when the process ends (normally, by Ctrl-C, SIGTERM or SIGHUP), once; returns a
    function that forgets it (call it once the work is undone the ordinary way)."""
    key = next(_IDS)
    with _LOCK:
        _UNDO[key] = undo

    def forget() -> None:
        with _LOCK:
            _UNDO.pop(key, None)

    return forget


def run_all() -> None:
    """Run every registered undo, newest first, each once; one that fails does not stop the others."""
    while True:
        with _LOCK:
            if not _UNDO:
                return
            key = max(_UNDO)
            undo = _UNDO.pop(key)
        try:
            undo()
        except Exception as e:  # the process is ending: undo the rest regardless
            log.debug("cleanup %r failed: %s", undo, e)


atexit.register(run_all)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    run_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # end by the signal, as the process would have without this handler


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP run :func:`run_all` first (main thread only; a handler already set is kept)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)
