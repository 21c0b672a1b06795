#!/usr/bin/env bash
# The core install alone (docs/install.md): a fresh venv with `pip install .` (no extras) and the test
# runner, then the tests marked `core`. Where no extra is installed, an import of one fails the test:
# this proves the core commands work, and need nothing heavy, on what `pip install retrieval-harness`
# installs. Called by .ci/run (`make test-core`); it downloads about 150 MB on a machine without a pip
# cache and runs in a few minutes. Usage: .ci/core_tests.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/harness-core.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$PYTHON" -m venv "$dir/venv"
py="$dir/venv/bin/python"
"$py" -m pip install --quiet --upgrade pip
"$py" -m pip install --quiet . "pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.5" "hypothesis>=6.100"
# the core carries none of the extras' packages (the list the tests check: tests/core_workflow.py)
# (-I: not this folder on the path, where datasets/ would pass for the package of that name)
"$py" -I - <<'PY'
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("core_workflow", "tests/core_workflow.py")
workflow = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workflow)
HEAVY = workflow.HEAVY

def present(name):
    try:  # a dotted name imports its parent first, which may itself be absent
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


found = [m for m in HEAVY if present(m)]
if found:
    sys.exit(f"the core install carries packages of extras: {', '.join(found)}")
print(f"core install: none of {len(HEAVY)} extra packages present")
PY
# only the files with core tests are collected: the others import what the core does not have
mapfile -t files < <(grep -l "pytest.mark.core" tests/test_*.py)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$py" -m pytest -m "core and not extra" -n auto -q "${files[@]}" "$@"
