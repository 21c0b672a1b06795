"""Tests for the Makefile's install: torch's CPU build comes from torch's CPU index first, and only
where that index cannot be reached from the default one, with a line saying so (README, "The truth
about torch"). Real `make`; the venv's pip is a stand-in that records what it was asked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

PIP = """#!/bin/sh
echo "$*" >> "$PIP_LOG"
case "$*" in
  *download.pytorch.org*) [ -n "$CPU_INDEX_DOWN" ] && { echo "pip: network unreachable" >&2; exit 1; } ;;
esac
exit 0
"""


def _make_install(tmp_path: Path, cpu_index_down: bool) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, body in (("python", "#!/bin/sh\nexit 0\n"), ("pip", PIP)):
        (venv / "bin" / name).write_text(body)
        (venv / "bin" / name).chmod(0o755)
    log = tmp_path / "pip.log"
    env = {**os.environ, "PIP_LOG": str(log), **({"CPU_INDEX_DOWN": "1"} if cpu_index_down else {})}
    env.pop("TORCH_INDEX", None)
    proc = subprocess.run(
        ["make", "-C", str(REPO), "--no-print-directory", "install", f"VENV={venv}"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    return proc, log.read_text().splitlines()


def test_make_install_takes_torch_from_the_cpu_index_first(tmp_path):
    proc, calls = _make_install(tmp_path, cpu_index_down=False)
    assert proc.returncode == 0, proc.stderr
    assert calls[0].split() == [
        "install",
        "--index-url",
        CPU_INDEX,
        "--retries",
        "1",
        "--timeout",
        "30",
        "torch==2.13.0",
    ]
    assert calls[1:] == ["install -e .[dense,rerank]"]
    assert "default index" not in proc.stderr


def test_make_install_falls_back_to_the_default_index_and_says_so(tmp_path):
    proc, calls = _make_install(tmp_path, cpu_index_down=True)
    assert proc.returncode == 0, proc.stderr
    assert CPU_INDEX in calls[0] and calls[1:] == ["install torch==2.13.0", "install -e .[dense,rerank]"]
    said = [line for line in proc.stderr.splitlines() if "default index" in line]
    assert len(said) == 1 and CPU_INDEX in said[0] and "CUDA" in said[0]
