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
from collections.abc import Iterable, Sequence

from harness import __version__, cleanup
from harness.errors import HarnessError, ScrubFilter
from harness.printable import printable
from harness.progress import quiet_third_party

#: Subcommand -> the line ``harness --help`` shows for it. Its module (``harness.cli.<name>``, ``-`` as ``_``)
#: defines ``register(subparsers)`` and is imported only when that command runs: building every command's
#: parser imported pandas, the engine and chunking, and ``harness --version`` took 1.5 s. The
#: lines here are the ones each module registers (tests/test_cli_startup.py keeps the two the same).
COMMANDS: dict[str, str] = {
    "run": "run the retrievers of a config and write a results folder",
    "evaluate": "score TREC run files against judgments",
    "compare": "comparison table (significance, CIs) for TREC run files produced elsewhere",
    "report": "print a results folder's table; --worst N lists the queries that lose most",
    "check": "compare results with a stored baseline; exit 1 on a significant drop beyond tolerance",
    "power": "how many queries are enough: minimum detectable effect and queries needed",
    "baseline": "save results as a baseline file for `harness check`",
    "history": "plot the nightly history written by `harness check --history` (PNG per metric, HTML page)",
    "sweep": "try a grid of retriever options; choose on selection queries, report the choice on test queries",
    "convert": "write a golden set (JSONL/CSV/Parquet/HF folder + corpus, irds: id, BEIR) as a BEIR folder",
    "train-reranker": "fine-tune a cross-encoder reranker on a dataset's judgments (offline)",
    "retrievers": "list the retriever types you can use in a config",
    "pool": "list the unjudged documents in the retrievers' top k, to judge",
    "judge": "grade a pool: on a page (serve), by a judge (auto), merge into qrels (merge), agree, sample, status",
    "load": "serve retrievers under load: QPS and p50/p95/p99 per concurrency or arrival rate, recall vs QPS, cost",
    "inspect": "check a golden set (and its results) for defects that decide comparisons",
    "synth": "generate a golden set from a corpus (generate), and measure its bias (bias)",
    "traces": "production retrieval spans as a golden set (import), and what to grade of it (pool)",
    "stream": "score retrievers while documents are inserted, deleted and updated (a report.html of it)",
    "nuggets": "assign nuggets to retrieved passages with a judge (assign)",
    "ci": "CI helpers: post the pull request comment (docs/nightly.md)",
    "export": "write a results folder in the formats other tools read",
}


def command_module(name: str) -> str:
    """``train-reranker`` -> ``harness.cli.train_reranker``."""
    return f"harness.cli.{name.replace('-', '_')}"


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``harness`` parser. Each command in ``commands`` (all of them when ``None``) gets its full parser,
    its module imported; every other command is listed by its :data:`COMMANDS` line alone, nothing imported."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Benchmark retrievers for RAG: trec_eval-exact metrics, significance, cost, regressions.",
    )
    parser.add_argument("--version", action="version", version=f"retrieval-harness {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    full = set(COMMANDS) if commands is None else set(commands)
    for name, summary in COMMANDS.items():
        if name not in full:
            sub.add_parser(name, help=summary)
            continue
        try:
            module = importlib.import_module(command_module(name))
        except ModuleNotFoundError as e:
            if e.name == command_module(name):
                continue
            raise
        module.register(sub)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the top-level options take no
    value), or ``None`` (``--version``, ``--help``, nothing)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


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
    words = sys.argv[1:] if argv is None else list(argv)
    command = command_of(words)
    parser = build_parser([command] if command else [])
    args = parser.parse_args(words)
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
