"""``action.yml``: a composite action whose every ``harness`` command exists with the flags it passes.

Each ``run:`` step is read as bash would build its command lines: a line ``harness CMD "${args[@]}"``
takes every ``args=(...)``/``args+=(...)`` before it (each conditional append included, so every flag
the step can pass is checked), every ``$VAR`` becomes a value, and the harness's own argparse parser
(:func:`harness.cli.build_parser`) must accept the whole line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
_VAR = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def _words(text: str) -> list[str]:
    """Shell words, every variable replaced by a value argparse accepts for a path or a number."""
    return shlex.split(_VAR.sub("0.8", text.replace('"${args[@]}"', "ARGS")))


def invocations(script: str) -> list[list[str]]:
    """Each ``harness ...`` command line of a step script, ``"${args[@]}"`` expanded."""
    args: list[str] = []
    out = []
    for raw in script.splitlines():
        line = raw.strip()
        m = re.search(r"\bargs(\+?)=\((.*)\)", line)
        if m:
            args = ([] if not m.group(1) else args) + _words(m.group(2))
        m = re.search(r"(?:^|;\s*|then\s+)harness\s+(.*?)(?:;\s*(?:else|fi)\b.*)?$", line)
        if m:
            words = _words(m.group(1))
            out.append([w for word in words for w in (args if word == "ARGS" else [word])])
    return out


def steps_with_harness() -> list[tuple[str, list[str]]]:
    return [
        (step.get("name", "?"), argv)
        for step in ACTION["runs"]["steps"]
        if "run" in step
        for argv in invocations(step["run"])
    ]


def test_action_is_composite_with_the_inputs_and_outputs_the_docs_name():
    assert ACTION["runs"]["using"] == "composite"
    assert {"config", "baseline", "extras", "tolerances", "require-power", "comment", "python-version"} <= set(
        ACTION["inputs"]
    )
    assert ACTION["inputs"]["comment"]["default"] == "true"
    assert set(ACTION["outputs"]) == {"verdict", "regressions", "results"}
    for step in ACTION["runs"]["steps"]:
        assert "uses" in step or step.get("shell") == "bash", step.get("name")  # composite steps need a shell


def test_every_harness_command_in_the_action_parses_with_the_real_parser():
    found = steps_with_harness()
    commands = {tuple(argv[:1]) if argv[0].startswith("-") else tuple(argv[:2]) for _, argv in found}
    assert {("run", "--config"), ("check", "--baseline"), ("ci", "comment")} <= commands, found
    parser = build_parser()
    for name, argv in found:
        if argv == ["--version"]:
            continue
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # argparse's refusal: an unknown command or flag, a bad value
            raise AssertionError(f"step {name!r}: harness {' '.join(argv)} is refused by the parser") from e
        assert getattr(args, "func", None) is not None, (name, argv)


def test_the_check_step_passes_every_ci_output_flag():
    (check,) = [argv for _, argv in steps_with_harness() if argv[0] == "check"]
    for flag in ("--summary", "--junit", "--comment", "--annotations", "--tolerances", "--require-power"):
        assert flag in check
    args = build_parser().parse_args(check)
    assert args.annotations and args.require_power == 0.8


def test_the_parser_check_catches_a_flag_that_does_not_exist():
    script = 'args=(--baseline "$B" --current "$C")\nargs+=(--no-such-flag)\nharness check "${args[@]}"\n'
    (argv,) = invocations(script)
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)


def test_the_pre_commit_hook_is_harness_inspect_strict_on_golden_set_files():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "harness-inspect"]
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    entry = shlex.split(hook["entry"])
    assert entry[0] == "harness"
    args = build_parser().parse_args([*entry[1:], "--dataset", "datasets/demo"])  # the team's `args:`
    assert args.strict and args.func is not None
    files = re.compile(hook["files"])
    for changed in ("datasets/demo/corpus.jsonl", "datasets/demo/qrels/test.tsv", "golden/golden.csv", "queries.jsonl"):
        assert files.search(changed), changed
    for other in ("harness/cli/inspect.py", "docs/golden-sets.md", "results/nightly/results.json"):
        assert not files.search(other), other


def _step(name: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


@pytest.fixture
def harness_on_path(tmp_path) -> dict[str, str]:
    """A ``harness`` command on PATH running this checkout, as the action's install step leaves one."""
    import os
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "harness"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m harness "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize(
    ("current", "tolerances", "want"),
    [
        ("runB", "0.005", {"exit": "1", "verdict": "regression", "regressions": "1"}),
        ("runA", "", {"exit": "0", "verdict": "blind", "regressions": "0"}),
        ("missing", "", {"exit": "2", "verdict": "error", "regressions": "0"}),
    ],
)
def test_the_check_step_sets_the_outputs_from_the_gate(tmp_path, harness_on_path, current, tolerances, want):
    """The check step's own script, run by bash on two demo results folders: its outputs and the job
    summary, for a regression, a blind pass and bad input."""
    import shutil
    import subprocess

    inputs = ROOT / "tests" / "data" / "golden_outputs" / "inputs"
    for name in ("runA", "runB"):
        shutil.copytree(inputs / name, tmp_path / name)
    tol = tmp_path / "tol.yaml"
    tol.write_text(f"default: {tolerances}\n" if tolerances else "default: 0.01\n")
    output, summary = tmp_path / "output", tmp_path / "summary"
    summary.write_text("")
    step = _step("Check against the baseline")
    env = {**harness_on_path, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
    env |= {"BASELINE": str(tmp_path / "runA"), "RESULTS": str(tmp_path / current), "TOLERANCES": str(tol)}
    env |= {"REQUIRE_POWER": "", "RUNNER_TEMP": str(tmp_path)}
    done = subprocess.run(["bash", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr  # the step itself passes: the last step gives the gate's exit
    got = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert {k: got[k] for k in want} == want, (got, done.stdout[-2000:], done.stderr[-2000:])
    assert got["results"] == str(tmp_path / current)
    if want["exit"] != "2":
        assert "harness check" in summary.read_text() and (tmp_path / current / "check" / "junit.xml").is_file()
        assert ("::error title=regression" in done.stdout) == (want["verdict"] == "regression")
