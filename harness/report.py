"""Deprecated: the renderings of a result moved to :mod:`harness.results` (``harness.results.render``
and the modules beside it). These names stay one release, each with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from typing import Any

# given by __getattr__ below, each with a warning
__all__ = ["TABLE_FILES", "ComparisonTable", "build_table", "comparison_frame", "render_table", "to_markdown"]  # noqa: F822


def __getattr__(name: str) -> Any:
    """Each name of :data:`__all__` from :mod:`harness.results.render`, with a warning."""
    if name not in __all__:
        raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
    warnings.warn(f"harness.report.{name} moved to harness.results.render.{name}", DeprecationWarning, stacklevel=2)
    from harness.results import render

    return getattr(render, name)
