"""A team's own retriever, named by import path: ``{type: python, class: "pkg.module:Class", params: {...}}``
or a plain search function ``{type: python, function: "module:search"}``.

The team's code needs nothing from us: any object with ``index(corpus)`` and ``search(queries, k)``
fits (the protocol is structural, as MTEB v2's). Import paths are resolved by the harness's one rule
(:mod:`harness.imports`): the config file's folder first, then the working folder, then ``PYTHONPATH``, so a
config next to ``my_retriever.py`` just works; they are resolved while the config is checked, so a wrong
one stops the run before any retriever runs.

Team code fails only its own row:

- In-process (the default), a ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit`` raised inside
  its ``__init__``/``index``/``search`` becomes a :class:`~harness.errors.RetrieverError` instead of
  ending the run. A real Ctrl-C still stops the run: a SIGINT received in the last few seconds
  makes the ``KeyboardInterrupt`` the user's, and it propagates.
- With ``isolation: process`` the object lives in a child process (started with a fresh interpreter;
  documents and queries go over a socket), so ``os.abort()``, a segfault, ``os._exit`` or a hang take
  down only the child: the row fails naming the exit code or signal, ``timeout_s`` bounds each call,
  and :meth:`IsolatedRetriever.cancel` kills the child.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import inspect
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from harness.errors import InputError, RetrieverError
from harness.imports import NoAttribute, first_on_path, import_target, search_folders, split_target, where_looked
from harness.model import Document, Query
from harness.protocol import Retriever, SearchResult
from harness.registry import BuildContext, SpecBase, redact_value


class PythonSpec(SpecBase):
    """Your own Python class (class: module:Class, params: {...}) or search function (function: module:fn)."""

    model_config = ConfigDict(serialize_by_alias=True)

    type: Literal["python"] = "python"
    class_: str | None = Field(
        None, alias="class", description="'package.module:ClassName', instantiated as ClassName(**params)"
    )
    function: str | None = Field(None, description="'package.module:function', called as function(queries, k)")
    params: dict[str, Any] = Field(default_factory=dict, description="keyword arguments for the class")
    allow_unknown_docs: bool = Field(False, description="score doc ids that are not in the corpus (as non-relevant)")
    isolation: Literal["none", "process"] = Field(
        "none", description="'process': run it in a child process, so a crash or hang fails only this row"
    )
    timeout_s: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="with isolation: process, the most one index/search call may take"
    )

    @model_validator(mode="after")
    def _one_target(self) -> PythonSpec:
        if (self.class_ is None) == (self.function is None):
            raise ValueError("give exactly one of 'class' (module:Class) or 'function' (module:function)")
        if self.function is not None and self.params:
            raise ValueError("'params' goes with 'class'; a function is called as function(queries, k)")
        for target in (self.class_, self.function):
            if target is not None:
                split_target(target)
        if self.timeout_s is not None and self.isolation != "process":
            raise ValueError("timeout_s needs isolation: process (a thread running team code cannot be stopped)")
        return self

    def preflight(self, config_dir: Path) -> None:
        """Resolve the import while the config is checked. In-process: import it and look the name up.
        Isolated: only find the module (importing it here could crash this process, the reason to isolate)."""
        field = "class" if self.class_ is not None else "function"
        target = self.class_ or self.function or ""
        if self.isolation == "process":
            find_module(target, config_dir, field=field)
            return
        obj = load_object(target, config_dir, field=field)
        if field == "function" and not callable(obj):
            raise InputError(f"{target} is a {type(obj).__name__}, not a function", field=field)
        if field == "class" and not callable(obj):
            raise InputError(f"{target} is a {type(obj).__name__}, not a class", field=field)

    def build(self, ctx: BuildContext) -> Any:
        if self.isolation == "process":
            kind = "class" if self.class_ is not None else "function"
            return IsolatedRetriever(
                self.class_ or self.function or "", kind, self.params, ctx.config_dir, timeout_s=self.timeout_s
            )
        if self.class_ is not None:
            cls = load_object(self.class_, ctx.config_dir, field="class")
            return Guarded(instantiate(cls, self.params, self.class_))
        fn = load_object(self.function or "", ctx.config_dir, field="function")
        if not callable(fn):
            raise InputError(f"{self.function} is a {type(fn).__name__}, not a function", field="function")
        return Guarded(FunctionRetriever(fn))


@contextmanager
def _importable_from(config_dir: Path) -> Iterator[None]:
    """The config's folder, then the working folder, first on ``sys.path`` while importing (then restored:
    nothing leaks): :func:`harness.imports.search_folders`."""
    with first_on_path(search_folders(config_dir)):
        yield


def _not_found(module_name: str, target: str, missing: str, config_dir: Path) -> str:
    where = where_looked(search_folders(config_dir), config_dir)
    return f"cannot import {module_name!r} for {target!r}: no module named {missing!r} in {where}"


def _split(target: str, field: str) -> tuple[str, str]:
    try:
        return split_target(target)
    except ValueError as e:
        raise InputError(str(e), field=field) from None


def find_module(target: str, config_dir: Path, *, field: str = "class") -> None:
    """Check ``module`` of ``module:attr`` can be found from ``config_dir``, the working folder or
    ``PYTHONPATH``, without running it."""
    module_name, _ = _split(target, field)
    with _importable_from(config_dir):
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            found = None
        except BaseException as e:  # a parent package's __init__ failed
            raise InputError(f"finding {module_name!r} failed: {type(e).__name__}: {e}", field=field) from None
    if found is None:
        raise InputError(_not_found(module_name, target, module_name, config_dir), field=field)


def load_object(target: str, config_dir: Path, *, field: str = "class") -> Any:
    """Import ``module:attr`` (``attr`` may be dotted: ``module:Outer.Inner``) with ``config_dir`` and the
    working folder first on the path."""
    module_name, attr = _split(target, field)
    with _importable_from(config_dir):
        try:
            return import_target(target)
        except NoAttribute:
            module = sys.modules[module_name]
            where = getattr(module, "__file__", module_name)
            names = sorted(n for n in vars(module) if not n.startswith("_") and n[:1].isupper())
            hint = f" (names there: {', '.join(names[:10])})" if names and field == "class" else ""
            raise InputError(f"{module_name!r} ({where}) has no attribute {attr!r}{hint}", field=field) from None
        except ModuleNotFoundError as e:
            missing = e.name or module_name
            if module_name == missing or module_name.startswith(missing + "."):
                raise InputError(_not_found(module_name, target, missing, config_dir), field=field) from None
            raise InputError(
                f"importing {module_name!r} failed: it needs {missing!r}, which is not installed", field=field
            ) from None
        except BaseException as e:  # SystemExit / KeyboardInterrupt at import time too: a config error
            if isinstance(e, KeyboardInterrupt) and _sigint_pending():
                raise
            raise InputError(f"importing {module_name!r} failed: {type(e).__name__}: {e}", field=field) from None


def instantiate(cls: Any, params: dict[str, Any], target: str) -> Any:
    """``cls(**params)``, then check the result has ``index`` and ``search``."""
    if not callable(cls):
        raise InputError(f"{target} is a {type(cls).__name__}, not a class", field="class")
    try:
        obj = cls(**params)
    except _ESCAPES as e:
        if isinstance(e, KeyboardInterrupt) and _sigint_pending():
            raise
        raise RetrieverError(f"{target}(**params) raised {_describe(e)}") from None
    except TypeError as e:
        try:
            signature = f"{getattr(cls, '__name__', target)}{inspect.signature(cls)}"
        except (TypeError, ValueError):
            signature = target
        raise InputError(
            f"{target}(**params) failed: {e} (signature: {signature}; params: {params})", field="params"
        ) from None
    if not isinstance(obj, Retriever):
        missing = [m for m in ("index", "search") if not callable(getattr(obj, m, None))]
        raise InputError(
            f"{target} made a {type(obj).__name__} without {' and '.join(missing)}(); a retriever needs "
            "index(corpus) and search(queries, k) (for a search function alone use 'function:')",
            field="class",
        )
    return obj


class FunctionRetriever:
    """A plain ``search(queries, k)`` function as a retriever (the function indexes nothing)."""

    def __init__(self, fn: Callable[[Sequence[Query], int], SearchResult]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "function")

    def index(self, corpus: Sequence[Document]) -> None:
        return None

    def search(self, queries: Sequence[Query], k: int) -> SearchResult:
        return self.fn(queries, k)

    def params(self) -> dict[str, Any]:
        return {"function": f"{getattr(self.fn, '__module__', '?')}:{getattr(self.fn, '__qualname__', self.name)}"}


# ---------------------------------------------------------------------------- team code in-process
#: Exceptions that are not ``Exception``s, so a plain ``except Exception`` up the stack would let them
#: end the whole run; inside team code they are this retriever's failure.
_ESCAPES = (SystemExit, KeyboardInterrupt, GeneratorExit)


#: When this process last received SIGINT (a real Ctrl-C), so a ``KeyboardInterrupt`` the *user* caused
#: still stops the run while one a team's code raises itself fails only its row.
_SIGINT_AT = [-1e9]
#: A KeyboardInterrupt within this many seconds of a SIGINT is the user's.
SIGINT_WINDOW_S = 5.0


def _install_sigint_probe() -> None:
    """Wrap Python's default SIGINT handler with one that notes the time, then does the same thing.
    Only from the main thread and only over the default handler (never over an application's own)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return
    if previous is not signal.default_int_handler:
        return

    def probe(signum: int, frame: Any) -> Any:
        _SIGINT_AT[0] = time.monotonic()
        return signal.default_int_handler(signum, frame)

    with suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, probe)


def _sigint_pending() -> bool:
    return time.monotonic() - _SIGINT_AT[0] < SIGINT_WINDOW_S


_install_sigint_probe()


def _describe(e: BaseException) -> str:
    """``SystemExit(3) (at my_retriever.py:12)``: what was raised and where in the team's code."""
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    args = ", ".join(repr(a) for a in e.args)
    return f"{type(e).__name__}({args}){where}"


class Guarded:
    """A team's retriever with its ``SystemExit``/``KeyboardInterrupt``/``GeneratorExit`` turned into a
    :class:`RetrieverError`, so they fail its row instead of the run. Everything else is the object's own."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def inner(self) -> Any:
        return self._inner

    def params(self) -> dict[str, Any]:
        """The object's own ``params()``, with secrets and ``${ENV}`` values redacted (they are written)."""
        got = self._inner.params() if callable(getattr(self._inner, "params", None)) else {}
        return redact_value(dict(got)) if isinstance(got, Mapping) else {}

    def index(self, corpus: Sequence[Document]) -> None:
        try:
            return self._inner.index(corpus)
        except _ESCAPES as e:
            if isinstance(e, KeyboardInterrupt) and _sigint_pending():
                raise  # the user pressed Ctrl-C: stop the run, not just this row
            raise RetrieverError(f"index() raised {_describe(e)}") from None

    def search(self, queries: Sequence[Query], k: int) -> SearchResult:
        try:
            return self._inner.search(queries, k)
        except _ESCAPES as e:
            if isinstance(e, KeyboardInterrupt) and _sigint_pending():
                raise
            raise RetrieverError(f"search() raised {_describe(e)}") from None


# ---------------------------------------------------------------------------- team code in a child
#: Children still running; killed when this interpreter exits (they are not daemons, so team code may
#: start processes of its own, and so multiprocessing's exit hook would otherwise wait for them).
_CHILDREN: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()


@atexit.register
def _kill_children() -> None:
    for proc in list(_CHILDREN):
        with suppress(Exception):
            proc.kill()
            proc.wait(5)


def exit_description(code: int | None) -> str:
    """``exit code 3`` / ``signal SIGSEGV (segmentation fault)``: how a child ended, in words."""
    if code is None:
        return "still running"
    if code >= 0:
        return f"exit code {code}"
    try:
        sig = signal.Signals(-code)
    except ValueError:
        return f"signal {-code}"
    text = signal.strsignal(sig) or ""
    return f"signal {sig.name}" + (f" ({text.lower()})" if text else "")


class IsolatedRetriever:
    """A team's retriever living in a child process: a crash, an abort or a hang there fails this row.

    The child is a fresh interpreter (``python -c``, not ``multiprocessing``: a script that calls
    ``benchmark()`` without an ``if __name__ == "__main__"`` guard is not re-run), talks over a socket
    pair with pickled messages, and is killed by :meth:`cancel`, by ``timeout_s``, on :meth:`close`
    and at interpreter exit.
    """

    def __init__(
        self,
        target: str,
        kind: str,
        params: Mapping[str, Any],
        config_dir: Path,
        *,
        timeout_s: float | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        self.target, self.kind, self.timeout_s = target, kind, timeout_s
        self.name = target.rpartition(":")[2]
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        ours, theirs = socket.socketpair()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from retrievers.custom import _child_main; _child_main()", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        _CHILDREN.add(self._proc)
        self._conn = Connection(ours.detach())
        weakref.finalize(self, _stop, self._proc, self._conn)
        reply = self._call(("init", target, kind, dict(params), str(config_dir), list(sys.path)), start_timeout_s)
        self._params = reply.get("params") or {}
        self.name = reply.get("name") or self.name

    def params(self) -> dict[str, Any]:
        return redact_value({"isolation": "process", "target": self.target, **self._params})

    def index(self, corpus: Sequence[Document]) -> None:
        self._call(("index", list(corpus)), self.timeout_s)

    def search(self, queries: Sequence[Query], k: int) -> SearchResult:
        return self._call(("search", list(queries), k), self.timeout_s)

    def cancel(self) -> None:
        """Kill the child: a call in flight fails at once, and so does every later one."""
        self._cancelled.set()
        _stop(self._proc, None)

    def close(self) -> None:
        _stop(self._proc, self._conn)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _call(self, message: tuple[Any, ...], timeout_s: float | None) -> Any:
        what = f"{message[0]}()" if message[0] != "init" else f"starting {self.target}"
        with self._lock:
            self._check_alive(what)
            try:
                self._conn.send(message)
            except (OSError, ValueError):
                self._check_alive(what, waited=True)
                raise RetrieverError(f"{self.target}: the retriever process stopped taking requests") from None
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while True:
                try:
                    if self._conn.poll(0.05):
                        status, value = self._conn.recv()
                        break
                except (EOFError, OSError):
                    self._check_alive(what, waited=True)
                    raise RetrieverError(f"{self.target}: the retriever process closed its end during {what}") from None
                self._check_alive(what)
                if deadline is not None and time.monotonic() > deadline:
                    _stop(self._proc, None)
                    raise RetrieverError(
                        f"{self.target}: {what} did not finish within {timeout_s:g} s (timeout_s); "
                        f"the retriever process (pid {self._proc.pid}) was killed"
                    )
        if status == "ok":
            return value
        raise RetrieverError(f"{self.target}: {value}")

    def _check_alive(self, what: str, waited: bool = False) -> None:
        if self._cancelled.is_set():
            _stop(self._proc, None)  # the cancelling thread may still be at it: gone before we report
            raise RetrieverError(f"{self.target}: cancelled (the retriever process was killed)")
        code = self._proc.poll()
        if code is None and waited:
            with suppress(subprocess.TimeoutExpired):
                code = self._proc.wait(2)
        if code is not None:
            raise RetrieverError(
                f"{self.target}: the retriever process (isolation: process) died during {what} "
                f"with {exit_description(code)}"
            )


def _stop(proc: subprocess.Popen[bytes], conn: Connection | None) -> None:
    with suppress(Exception):
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)
    if conn is not None:
        with suppress(Exception):
            conn.close()


def _child_main() -> None:  # pragma: no cover - runs in the child (its effects are tested)
    """The child's loop: build the object, then answer ``index``/``search`` until the socket closes."""
    conn = Connection(int(sys.argv[1]))
    obj: Any = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        op = message[0]
        try:
            if op == "init":
                _, target, kind, params, config_dir, path = message
                for entry in reversed(path):
                    if entry not in sys.path:
                        sys.path.insert(0, entry)
                field = "class" if kind == "class" else "function"
                loaded = load_object(target, Path(config_dir), field=field)
                obj = instantiate(loaded, params, target) if kind == "class" else FunctionRetriever(loaded)
                got = obj.params() if callable(getattr(obj, "params", None)) else {}
                reply: Any = {"name": getattr(obj, "name", None), "params": got if isinstance(got, dict) else {}}
            elif op == "index":
                obj.index(message[1])
                reply = None
            elif op == "search":
                reply = _sendable(obj.search(message[1], message[2]))
            else:
                raise RuntimeError(f"unknown request {op!r}")
            payload = pickle.dumps(("ok", reply))
        except BaseException as e:  # SystemExit, KeyboardInterrupt, ...: this call's failure
            text = e.message if isinstance(e, InputError) else f"{op}() raised {_describe(e)}"
            payload = pickle.dumps(("error", text))
        try:
            conn.send_bytes(payload)
        except (OSError, ValueError):
            return


def _sendable(result: Any) -> Any:
    """Rankings made picklable (a generator is read here), everything else as returned."""
    if isinstance(result, Mapping):
        return {
            q: (dict(r) if isinstance(r, Mapping) else list(r) if not isinstance(r, (str, bytes)) else r)
            for q, r in result.items()
        }
    return result
