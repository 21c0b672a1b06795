"""``harness`` command line: one module per subcommand, dispatched here.

Errors the user can fix print one line, ``error: ...``, and exit 2 (bad input) or 1 (a retriever
failed, a regression was found); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from harness import __version__, cleanup
from harness.errors import HarnessError, ScrubFilter
from harness.printable import printable
from harness.progress import quiet_third_party

#: Subcommand modules under ``harness.cli``; each defines ``register(subparsers)``.
COMMANDS = [
    "run",
    "evaluate",
    "compare",
    "report",
    "check",
    "power",
    "baseline",
    "history",
    "sweep",
    "convert",
    "train_reranker",
    "retrievers",
    "pool",
    "judge",
    "nuggets",
    "load",
    "inspect",
    "synth",
    "traces",
    "stream",
    "ci",
    "export",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Benchmark retrievers for RAG: trec_eval-exact metrics, significance, cost, regressions.",
    )
    parser.add_argument("--version", action="version", version=f"retrieval-harness {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"harness.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"harness.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        return f"harness: {level}{printable(record.getMessage(), lines=True)}"


def _setup_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    handler.addFilter(ScrubFilter())  # a secret (an expanded ${TOKEN}) never reaches a log
    root = logging.getLogger("harness")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(args.debug or os.environ.get("HARNESS_DEBUG"))
    _setup_logging(debug)
    cleanup.install_signal_handlers()  # SIGTERM/SIGHUP: stop a private PostgreSQL, drop owned tables first
    # the harness's own display is the only progress a command shows: a library's bar ("Loading
    # weights: 0%|") written into a CI log before or beside it says nothing about the run
    quiet_third_party()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from harness.cli.args import check_argv

        check_argv(sys.argv[1:] if argv is None else argv)
        return int(args.func(args) or 0)
    except HarnessError as e:
        if debug:
            raise
        print(f"error: {printable(str(e), lines=True)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except Exception as e:
        if debug:
            raise
        from harness.cli.failure import describe

        print(f"error: {printable(describe(e), lines=True)}", file=sys.stderr)
        return 2


def _interrupted(e: KeyboardInterrupt) -> int:
    """Ctrl-C: one line (what was kept, how to go on), exit 130. A worker thread may still be inside
    native code (torch encoding): the process ends with ``os._exit`` after flushing, not through
    interpreter shutdown, whose C++ destructors would abort it (SIGABRT, exit 134)."""
    import signal
    import threading

    with contextlib.suppress(ValueError):  # a second Ctrl-C while this line is written changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(f"error: interrupted{': ' + str(e) if str(e) else ''}", file=sys.stderr)
    cleanup.run_all()  # os._exit below skips atexit: a private PostgreSQL, a table of ours, go now
    if any(t.is_alive() and t is not threading.main_thread() for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        os._exit(130)
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
