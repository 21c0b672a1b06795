"""Significance levels the statistics can compute with.

An alpha is a probability in (0, 1), and more: below float64's resolution (``1e-250``, ``1e-300``)
``1 - alpha`` is exactly 1, so a two-sided critical value becomes infinite, a power root finder has
no bracket, and an interval ``mean +- inf`` would reach a JSON file as ``Infinity``. One check, used
by every command that takes an alpha (``--alpha``, ``--ni-alpha``, a tolerances file's ``alpha``),
refuses such a level with one line naming the option instead.
"""

from __future__ import annotations

import math

import numpy as np

from harness.errors import InputError

#: the smallest alpha accepted: float64's machine epsilon, about 2.2e-16 (below it 1 - alpha/2 == 1)
MIN_ALPHA = float(np.finfo(np.float64).eps)


def check_level(value: object, field: str = "alpha") -> float:
    """``value`` as a float in ``[MIN_ALPHA, 1)``, else :class:`InputError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise InputError(f"must be a number in (0, 1), got {value}", field=field)
    if not math.isfinite(value) or value < MIN_ALPHA:
        raise InputError(
            f"{value:g} is below float resolution: 1 - alpha rounds to 1 and no critical value is finite; "
            f"use an alpha of at least {MIN_ALPHA:.1e}",
            field=field,
        )
    return float(value)
