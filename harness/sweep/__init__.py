"""Parameter sweeps with honest selection: choose on selection queries, report on test.

``harness sweep --config FILE --out DIR`` reads a run config with a ``sweep:`` block
(:mod:`harness.sweep.spec`), runs every grid point once over selection and test queries together
(:mod:`harness.sweep.plan`), chooses per retriever and reports the choice against the default on
the test queries alone (:mod:`harness.sweep.core`), and renders it (:mod:`harness.sweep.render`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.config import RunConfig, parse_config, read_config_file
from harness.errors import InputError
from harness.io import atomic, staged
from harness.sweep.core import SweepResult, run_sweep
from harness.sweep.spec import DEFAULT_MAX_POINTS, SweepSpec, parse_sweep
from harness.sweep.validate import validate_plan

__all__ = [
    "SweepResult",
    "SweepSpec",
    "check_sweep_folder",
    "load_sweep_config",
    "parse_sweep",
    "run_sweep",
    "validate_sweep_folder",
    "write_sweep",
]

#: What ``write_sweep`` puts in its folder (a folder holding only these may be written again).
SWEEP_FILES = ("sweep.json", "sweep.md")


def load_sweep_config(
    path: str | os.PathLike[str], *, max_points: int = DEFAULT_MAX_POINTS
) -> tuple[RunConfig, SweepSpec]:
    """A run config and its ``sweep:`` block, both validated (at most ``max_points`` points); errors
    name file, line and key."""
    p, text, data = read_config_file(path)
    if not isinstance(data, dict):
        raise InputError("a config must be a YAML mapping (key: value)", path=p, line=1)
    data = dict(data)
    block: Any = data.pop("sweep", None)
    config = parse_config(data, source=str(p), yaml_text=text, config_dir=p.resolve().parent)
    sweep = parse_sweep(block, config, source=str(p), yaml_text=text, max_points=max_points)
    validate_plan(config, sweep, source=str(p), yaml_text=text)
    return config, sweep


def write_sweep(result: SweepResult, folder: str | os.PathLike[str]) -> list[Path]:
    """Under the lock of ``folder`` (:func:`harness.io.staged.lock`): a second command given the same
    folder while this one writes is refused in one line, never mixed in. See :func:`_write_sweep`."""
    with staged.lock(folder):
        return _write_sweep(result, folder)


def _write_sweep(result: SweepResult, folder: str | os.PathLike[str]) -> list[Path]:
    """``sweep.json`` (everything), ``sweep.md`` (the tables) and a heatmap per 2-D grid.

    A folder that holds anything else is refused: nothing the user wrote is overwritten.
    """
    from harness.sweep.render import heatmap_file, to_markdown, write_heatmap

    out = validate_sweep_folder(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        atomic.write_json(out / "sweep.json", result.model_dump(mode="json")),
        atomic.write_text(out / "sweep.md", to_markdown(result)),
    ]
    for section in result.sections:
        png = write_heatmap(result, section, out / heatmap_file(section))
        if png is not None:
            written.append(png)
    return written


def validate_sweep_folder(folder: str | os.PathLike[str]) -> Path:
    """Refuse (before any work) a folder holding anything but an earlier sweep's files."""
    out = Path(folder).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError("output path exists and is not a folder", path=out)
    if out.is_dir():
        others = [e.name for e in out.iterdir() if e.name not in SWEEP_FILES and not e.name.startswith("heatmap_")]
        if others:
            raise InputError(
                f"output folder holds other files ({', '.join(sorted(others)[:3])}); choose a new folder "
                "(nothing there is overwritten)",
                path=out,
            )
    return out


def check_sweep_folder(folder: str | os.PathLike[str]) -> Path:
    """Deprecated (one release): :func:`validate_sweep_folder` (``check`` is the gate's word)."""
    import warnings

    warnings.warn(
        "harness.sweep.check_sweep_folder is deprecated; use validate_sweep_folder", DeprecationWarning, stacklevel=2
    )
    return validate_sweep_folder(folder)
