"""The plots' PNG files: a matplotlib figure with fixed margins, and its PNG bytes written atomically.

Every plot (a run's curves, ``harness inspect``, the sweep's heatmaps, the nightly trend) is made and
written this one way, so a killed process never leaves half a PNG and each plot module keeps only
its drawing. matplotlib is imported when a figure is made, not when this module is: most commands
draw nothing.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.io import atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figure(width: float, height: float, dpi: int, margins: tuple[float, float, float, float]) -> Figure:
    """A ``width`` x ``height`` inch figure whose subplots sit ``margins`` inches (left, right,
    bottom, top) inside its edges. Fixed margins, not ``layout="constrained"``: the constrained
    solver measures every tick label several times, a large share of the time of writing a plot."""
    from matplotlib.figure import Figure

    left, right, bottom, top = margins
    fig = Figure(figsize=(width, height), dpi=dpi)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)
    return fig


def png_bytes(fig: Figure, **savefig: Any) -> bytes:
    """``fig`` as PNG bytes (``savefig`` passes on, e.g. ``metadata``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig)
    return buf.getvalue()


def write_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as a PNG, atomically (all of the new file or the old one)."""
    return atomic.write_bytes(path, png_bytes(fig))
