"""Deprecated: the renderings of a result moved to :mod:`harness.results` (``harness.results.render``
and the modules beside it). These names stay one release, each with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from typing import Any

_MOVED = {
    "TABLE_FILES": "harness.results.render",
    "ComparisonTable": "harness.results.render",
    "build_table": "harness.results.render",
    "comparison_frame": "harness.results.render",
    "render_table": "harness.results.render",
    "to_markdown": "harness.results.render",
}

__all__ = sorted(_MOVED)


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
    warnings.warn(f"harness.report.{name} moved to {module}.{name}", DeprecationWarning, stacklevel=2)
    from harness.results import render

    return getattr(render, name)
