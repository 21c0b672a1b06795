"""Benchmark scripts run as the docs write them, ``python benchmarks/NAME.py``, from a checkout whose
editable install does not put the checkout root on the path: a script that imports the tests'
helpers puts the root there itself (report_page.py stopped with ``No module named
'tests.test_judging_browser'``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_report_page_runs_as_written(tmp_path):
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Chromium (/usr/bin/chromium)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "benchmarks/report_page.py", "--queries", "30", "--docs", "60"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "explorer ready" in proc.stdout, proc.stdout[-2000:]


def test_scale_ray_encode_fails_loudly(tmp_path, capfd):
    """scale.py --ray-encode passes the encode script's output through as it comes and returns its
    exit code: before, it held an hour's output until the end and a failed run still exited 0."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import scale
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    script = tmp_path / "fake_ray_encode.py"
    script.write_text("import sys\nprint('phase one', flush=True)\nsys.exit(3)\n")
    assert scale.ray_encode_throughput(10, script=script) == 3
    assert "phase one" in capfd.readouterr().out
