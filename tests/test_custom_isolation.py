""":mod:`retrievers.custom` with ``isolation: process``: a team retriever that exits, aborts,
segfaults, hangs or raises a BaseException fails only its own row. Real child processes and real
``harness run`` processes beside bm25; asserted only on the exit code, bm25's row in ``summary``
and the message in ``failures`` (what survives any runner rewrite)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from harness.config import load_config
from harness.errors import InputError, RetrieverError
from harness.model import Document, Query
from harness.registry import BuildContext
from retrievers.custom import Guarded, IsolatedRetriever, PythonSpec, exit_description
from tests.conftest import default_sigint, run_harness

REPO = Path(__file__).resolve().parent.parent

TEAM = """
import ctypes, os, sys, time

class Team:
    '''Behaves as MODE says, in search() (or in index() when WHEN == "index").'''
    def __init__(self, mode="ok", when="search"):
        self.mode, self.when = mode, when

    def _act(self):
        m = self.mode
        if m == "exit":
            sys.exit(3)
        if m == "kbd":
            raise KeyboardInterrupt
        if m == "genexit":
            raise GeneratorExit
        if m == "segfault":
            ctypes.string_at(0)
        if m == "abort":
            os.abort()
        if m == "os_exit":
            os._exit(7)
        if m == "hang":
            time.sleep(3600)

    def index(self, corpus):
        self.ids = [d.id for d in corpus]
        if self.when == "index":
            self._act()

    def search(self, queries, k):
        if self.when == "search":
            self._act()
        return {q.id: [(d, 1.0 / (i + 1)) for i, d in enumerate(self.ids[:k])] for q in queries}

def search(queries, k):
    sys.exit("bye")
"""

CORPUS = [Document(id=f"d{i}", text=f"text {i}") for i in range(5)]
QUERIES = [Query(id="q1", text="text"), Query(id="q2", text="other")]


@pytest.fixture
def team(tmp_path: Path) -> tuple[str, Path]:
    name = f"team_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TEAM)
    return name, tmp_path


def build(team: tuple[str, Path], **raw: object) -> object:
    name, folder = team
    spec = PythonSpec.model_validate({"type": "python", "class": f"{name}:Team", **raw})
    return spec.build(BuildContext(cache_dir=folder / "cache", config_dir=folder, show_progress=False))


# --------------------------------------------------------------------------- in process
@pytest.mark.parametrize(
    ("mode", "raised"), [("exit", r"SystemExit\(3\)"), ("kbd", "KeyboardInterrupt"), ("genexit", "GeneratorExit")]
)
@pytest.mark.parametrize("when", ["index", "search"])
def test_base_exceptions_become_retriever_errors(team, mode: str, raised: str, when: str) -> None:
    obj = build(team, params={"mode": mode, "when": when})
    assert isinstance(obj, Guarded)
    with pytest.raises(RetrieverError, match=rf"{when}\(\) raised {raised}.*\(at team_\w+\.py:\d+\)"):
        obj.index(CORPUS)
        obj.search(QUERIES, 3)


def test_system_exit_in_a_search_function(team) -> None:
    name, folder = team
    spec = PythonSpec.model_validate({"type": "python", "function": f"{name}:search"})
    obj = spec.build(BuildContext(cache_dir=folder, config_dir=folder, show_progress=False))
    with pytest.raises(RetrieverError, match=r"SystemExit\('bye'\)"):
        obj.search(QUERIES, 3)


def test_system_exit_in_constructor_is_a_retriever_error(tmp_path: Path) -> None:
    name = f"team_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("import sys\nclass T:\n    def __init__(self):\n        sys.exit(5)\n")
    spec = PythonSpec.model_validate({"type": "python", "class": f"{name}:T"})
    with pytest.raises(RetrieverError, match=r"raised SystemExit\(5\)"):
        spec.build(BuildContext(cache_dir=tmp_path, config_dir=tmp_path, show_progress=False))


# --------------------------------------------------------------------------- in a child process
def test_isolated_retriever_answers_like_the_object(team) -> None:
    iso = build(team, isolation="process")
    local = build(team)
    try:
        assert isinstance(iso, IsolatedRetriever)
        iso.index(CORPUS)
        local.index(CORPUS)
        assert iso.search(QUERIES, 3) == local.search(QUERIES, 3)
        assert iso.params()["isolation"] == "process"
    finally:
        iso.close()


@pytest.mark.parametrize(
    ("mode", "pattern"),
    [
        ("segfault", r"died during search\(\) with signal SIGSEGV"),
        ("abort", r"died during search\(\) with signal SIGABRT"),
        ("os_exit", r"died during search\(\) with exit code 7"),
        ("exit", r"search\(\) raised SystemExit\(3\)"),
        ("kbd", r"search\(\) raised KeyboardInterrupt"),
    ],
)
def test_isolated_crashes_fail_the_call_with_the_signal_named(team, mode: str, pattern: str) -> None:
    obj = build(team, isolation="process", params={"mode": mode})
    try:
        obj.index(CORPUS)
        with pytest.raises(RetrieverError, match=pattern):
            obj.search(QUERIES, 3)
    finally:
        obj.close()


def test_isolated_hang_is_killed_at_timeout(team) -> None:
    obj = build(team, isolation="process", timeout_s=1, params={"mode": "hang"})
    obj.index(CORPUS)
    with pytest.raises(RetrieverError, match=r"did not finish within 1 s \(timeout_s\).*was killed"):
        obj.search(QUERIES, 3)
    assert obj._proc.poll() is not None, "the child is gone"


def test_cancel_kills_the_child_and_fails_the_call_in_flight(team) -> None:
    obj = build(team, isolation="process", params={"mode": "hang"})
    obj.index(CORPUS)
    threading.Timer(0.5, obj.cancel).start()
    with pytest.raises(RetrieverError, match="cancelled"):
        obj.search(QUERIES, 3)
    with pytest.raises(RetrieverError, match="cancelled"):
        obj.search(QUERIES, 3)
    assert obj._proc.poll() is not None


def test_timeout_needs_isolation() -> None:
    with pytest.raises(ValueError, match="timeout_s needs isolation: process"):
        PythonSpec.model_validate({"type": "python", "class": "m:C", "timeout_s": 3})


def test_exit_descriptions() -> None:
    assert exit_description(3) == "exit code 3"
    assert exit_description(-11).startswith("signal SIGSEGV")
    assert exit_description(-6).startswith("signal SIGABRT")


def test_a_hung_isolated_child_does_not_keep_the_interpreter_alive(team, tmp_path: Path) -> None:
    """The process exits although a child is hung inside search (killed at exit)."""
    name, folder = team
    script = textwrap.dedent(f"""
        import threading
        from harness.model import Document, Query
        from harness.registry import BuildContext
        from retrievers.custom import PythonSpec
        spec = PythonSpec.model_validate({{"type": "python", "class": "{name}:Team", "isolation": "process",
                                           "params": {{"mode": "hang"}}}})
        obj = spec.build(BuildContext(cache_dir={str(folder)!r}, config_dir={str(folder)!r}))
        obj.index([Document(id="d1", text="x")])
        threading.Thread(target=obj.search, args=([Query(id="q", text="x")], 3), daemon=True).start()
        print("child", obj.pid, flush=True)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.split()[-1])
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the hung child was killed at exit (reaped: no such process)


# --------------------------------------------------------------------------- at config check
def test_isolated_import_is_resolved_without_running_it(tmp_path: Path) -> None:
    (tmp_path / "crashes_on_import.py").write_text("import os\nos.abort()\nclass T: pass\n")
    (tmp_path / "c.yaml").write_text(
        "retrievers:\n  t:\n    type: python\n    class: crashes_on_import:T\n    isolation: process\n"
    )
    load_config(tmp_path / "c.yaml")  # found, not imported: this process is still here
    (tmp_path / "d.yaml").write_text(
        "retrievers:\n  t:\n    type: python\n    class: nowhere_mod:T\n    isolation: process\n"
    )
    with pytest.raises(InputError, match=r"d.yaml:4: retrievers.t.class: cannot import 'nowhere_mod'"):
        load_config(tmp_path / "d.yaml")


# --------------------------------------------------------------------------- whole runs, beside bm25
def harness_run(folder: Path, config: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    (folder / "c.yaml").write_text(textwrap.dedent(config))
    return run_harness("run", "--config", "c.yaml", "--out", "out", "--no-progress", cwd=folder, timeout=timeout)


#: a run config whose team retriever (the line a test adds) runs beside bm25
BESIDE_BM25 = "dataset: demo\nlatency_queries: 2\nretrievers:\n  bm25: {type: bm25}\n"

RUN_MODES = [
    ("exit", "none", "SystemExit(3)"),
    ("kbd", "none", "KeyboardInterrupt"),
    ("genexit", "none", "GeneratorExit"),
    ("segfault", "process", "signal SIGSEGV"),
    ("abort", "process", "signal SIGABRT"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "isolation", "needle"), RUN_MODES)
def test_harness_run_keeps_bm25_when_the_team_retriever_dies(team, mode: str, isolation: str, needle: str) -> None:
    name, folder = team
    proc = harness_run(
        folder,
        BESIDE_BM25
        + f'  team: {{type: python, class: "{name}:Team", isolation: {isolation}, params: {{mode: {mode}}}}}\n',
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    res = json.loads((folder / "out" / "results.json").read_text())
    assert "bm25" in res["summary"]
    assert needle in res["failures"]["team"], res["failures"]


@pytest.mark.slow
def test_harness_run_kills_a_hung_isolated_retriever_at_its_timeout(team) -> None:
    name, folder = team
    proc = harness_run(
        folder,
        BESIDE_BM25
        + f'  team: {{type: python, class: "{name}:Team", isolation: process, timeout_s: 2, params: {{mode: hang}}}}\n',
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    res = json.loads((folder / "out" / "results.json").read_text())
    assert "bm25" in res["summary"]
    assert "timeout_s" in res["failures"]["team"]


def test_a_real_ctrl_c_inside_team_code_still_stops(team) -> None:
    """A KeyboardInterrupt the team's code raises fails its row; a SIGINT from the user stops the run."""
    name, folder = team
    script = textwrap.dedent(f"""
        import sys
        from harness.errors import RetrieverError
        from harness.model import Document, Query
        from harness.registry import BuildContext
        from retrievers.custom import PythonSpec
        spec = PythonSpec.model_validate({{"type": "python", "class": "{name}:Team", "params": {{"mode": "hang"}}}})
        obj = spec.build(BuildContext(cache_dir={str(folder)!r}, config_dir={str(folder)!r}))
        obj.index([Document(id="d1", text="x")])
        print("ready", flush=True)
        try:
            obj.search([Query(id="q", text="x")], 3)
        except RetrieverError as e:
            print("converted", e, flush=True)
            sys.exit(0)
        except KeyboardInterrupt:
            print("stopped by the user", flush=True)
            sys.exit(130)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=default_sigint,  # a test runner's worker may ignore SIGINT (conftest.default_sigint)
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        # on a loaded machine the first Ctrl-C can land before the search has started; a user
        # presses it again, so does this test (at most a few times)
        for _ in range(10):
            try:
                out, err = proc.communicate(timeout=6)
                break
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        else:
            out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "stopped by the user" in out
