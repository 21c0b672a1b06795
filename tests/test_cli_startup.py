"""Start-up of the ``harness`` command (:mod:`harness.cli`): ``--version`` and ``--help`` build no
command's parser, so they import neither pandas nor the engine; a command imports its own module alone;
the lazy table's lines are the ones the modules register. Imports are asserted, not seconds
(benchmarks/startup.py measures the seconds; docs/install.md has the figures)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import COMMANDS, build_parser, command_module, command_of
from tests.conftest import REPO

pytestmark = pytest.mark.core

HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "pydantic", "harness.engine", "harness.results", "harness.chunking")

PROBE = (
    "import json, sys\n"
    "from harness.cli import main\n"
    "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)


def _modules_after(*args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], []])
def test_version_and_help_import_neither_pandas_nor_the_engine(args):
    loaded = _modules_after(*args)
    assert not [m for m in HEAVY if m in loaded]
    assert not [m for m in loaded if m.startswith("harness.cli.") and m not in ("harness.cli.args",)]


def test_a_command_imports_its_own_module_alone():
    loaded = _modules_after("retrievers", "--help")
    commands = {m for m in loaded if m.startswith("harness.cli.") and m[len("harness.cli.") :] in
                {n.replace("-", "_") for n in COMMANDS}}  # fmt: skip
    assert commands == {"harness.cli.retrievers"}


def test_the_table_lines_are_the_ones_each_module_registers():
    parser = build_parser()  # every module imported
    sub = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    registered = {c.dest: c.help for c in sub._choices_actions}
    assert registered == COMMANDS
    for name in COMMANDS:
        assert command_module(name) in sys.modules


def test_the_top_level_help_lists_every_command_and_every_judge_action(capsys):
    with pytest.raises(SystemExit):
        build_parser([]).parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name in COMMANDS:
        assert name in out
    for action in ("serve", "auto", "merge", "agree", "sample"):
        assert action in out.split("judge ", 1)[1].split(" load ")[0], action


@pytest.mark.parametrize(
    ("argv", "command"),
    [(["run", "--out", "x"], "run"), (["--debug", "check", "a"], "check"), (["--version"], None), ([], None),
     (["nosuch"], None), (["train-reranker"], "train-reranker")],
)  # fmt: skip
def test_command_of(argv, command):
    assert command_of(argv) == command


def test_a_command_still_parses_its_own_flags():
    args = build_parser(["evaluate"]).parse_args(["evaluate", "--qrels", "q.tsv", "--run", "r.trec"])
    assert args.command == "evaluate" and callable(args.func)


@given(
    vocab=st.lists(st.text(max_size=6), unique=True, max_size=30),
    names=st.lists(st.text(max_size=6), max_size=30),
)
@settings(max_examples=200, deadline=None)
def test_small_positions_without_pandas_are_the_factorized_ones(vocab, names):
    # harness evaluate on a small run no longer imports pandas for this lookup: the dict gives the same positions
    ev = importlib.import_module("harness.metrics.evaluate")

    arr = np.asarray(vocab, dtype=object)
    small = ev._positions(arr, names)
    saved = ev._SMALL_POSITIONS
    try:
        ev._SMALL_POSITIONS = 0
        large = ev._positions(arr, names)
    finally:
        ev._SMALL_POSITIONS = saved
    assert small.dtype == large.dtype and small.tolist() == large.tolist()


def test_small_positions_refuse_a_repeated_id():
    from harness.errors import InputError
    ev = importlib.import_module("harness.metrics.evaluate")

    with pytest.raises(InputError, match="same id twice"):
        ev._positions(np.asarray(["a", "b", "a"], dtype=object), ["a"])


def test_evaluate_on_a_small_run_imports_no_pandas(tmp_path):
    run = tmp_path / "small.trec"
    run.write_text("q01 Q0 d0002 1 1.0 small\nq01 Q0 d0004 2 0.5 small\n", encoding="utf-8")
    qrels = REPO / "datasets" / "demo" / "qrels" / "test.tsv"
    loaded = _modules_after("evaluate", "--qrels", str(qrels), "--run", str(run))
    assert "pandas" not in loaded and "harness.engine.session" not in loaded
