"""Tests for harness.checkout and the editable install (pyproject.toml, hatch_build.py): the checkout's
``datasets/`` folder (the demo data) never passes for the ``datasets`` package, whichever way the checkout's
root reaches ``sys.path`` (LanceDB rows failed as "not installed" wherever Hugging Face ``datasets``
was not, once the embedding model was loaded)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = (
    "import importlib.util, sys\n"
    "{before}"
    "spec = importlib.util.find_spec('datasets')\n"
    "print('SPEC', None if spec is None else list(spec.submodule_search_locations or [spec.origin]))\n"
    "try:\n    import datasets\n    print('IMPORTED', getattr(datasets, '__file__', None))\n"
    "except ImportError:\n    print('IMPORTED none')\n"
)


def _probe(*flags: str, before: str = "import harness\n", cwd: Path = REPO) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, *flags, "-c", PROBE.format(before=before)], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


@pytest.mark.core
@pytest.mark.parametrize("where", ["PYTHONPATH", "working folder"])
def test_without_the_package_the_checkouts_folder_is_no_module(where, tmp_path):
    # -S: no site-packages, so no real `datasets` to find; the checkout's root is on the path by PYTHONPATH,
    # or as '' when python runs in the checkout (python -m harness from the root, as a newcomer does)
    cwd = tmp_path if where == "PYTHONPATH" else REPO
    assert _probe("-S", cwd=cwd) == ["SPEC None", "IMPORTED none"]


@pytest.mark.core
def test_a_shadowing_module_imported_before_harness_is_dropped():
    lines = _probe("-S", before="import datasets\nimport harness\n")
    assert lines == ["SPEC None", "IMPORTED none"]


def test_the_real_package_is_still_found_where_it_is_installed():
    pytest.importorskip("datasets")
    spec_line, imported = _probe()
    # the checkout's own data folder is never the package (a venv inside the checkout, as `make` builds
    # one, has its site-packages under the checkout: that is the real package)
    assert str(REPO / "datasets") + "'" not in spec_line and "site-packages" in spec_line
    assert imported.startswith("IMPORTED ") and "site-packages" in imported


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


@pytest.mark.slow
def test_an_editable_install_puts_no_data_folder_on_the_path(tmp_path):
    # a fresh core-only editable install (nothing but the project and the import hook hatchling's
    # dev-mode-exact needs): the checkout's root is not on sys.path, so `datasets` is found nowhere
    py = _venv(tmp_path / "venv")
    install = [str(py), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(REPO), "editables"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the install alone decides the path
    proc = subprocess.run(install, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    code = (
        "import importlib.util as u, sys\n"
        "print(u.find_spec('datasets'))\n"
        "print(u.find_spec('harness').origin)\n"
        "print(u.find_spec('retrievers').origin)\n"
        f"print({str(REPO)!r} in sys.path)\n"
    )
    out = subprocess.run([str(py), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == [
        "None", str(REPO / "harness" / "__init__.py"), str(REPO / "retrievers" / "__init__.py"), "False"
    ]
    site_packages = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    assert not (site_packages / "harness").exists()  # no bare folder to pass for a namespace `harness`


def _venv_without_datasets(tmp_path: Path) -> Path:
    """A venv with every package of this one but Hugging Face ``datasets`` (links to the installed ones),
    and none of this checkout's editable-install files: the venv `make` builds, plus the extra a row needs."""
    farm = tmp_path / "site"
    farm.mkdir()
    for root in site.getsitepackages():
        for entry in Path(root).iterdir():
            name = entry.name
            if name == "datasets" or name.startswith(("datasets-", "_editable_impl_", "__editable__", "__pycache__")):
                continue
            if not (farm / name).exists():
                (farm / name).symlink_to(entry)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=300)
    site_packages = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site_packages / "farm.pth").write_text(f"{farm}\n", encoding="utf-8")
    return tmp_path / "venv" / "bin" / "python"


@pytest.mark.slow
def test_a_lancedb_row_runs_with_a_cold_cache_where_datasets_is_not_installed(tmp_path):
    pytest.importorskip("lancedb")
    py = _venv_without_datasets(tmp_path)
    cfg = tmp_path / "lance.yaml"
    cfg.write_text("dataset: demo\nmetrics: [ndcg@10]\nretrievers:\n  lance: {type: lancedb}\n", encoding="utf-8")
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "HARNESS_CACHE_DIR": str(tmp_path / "cold-cache"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    }  # fmt: skip
    proc = subprocess.run(
        [str(py), "-m", "harness", "run", "--config", str(cfg), "--out", str(tmp_path / "out"), "--no-progress"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "FAILED" not in proc.stdout and "not installed" not in proc.stderr
    assert (tmp_path / "cold-cache").exists()  # the corpus was encoded here, not read from a warm cache
