"""A share as a percentage that never rounds a part to the whole: 299 of 300 reads "99.7%", not
"100%", and 1 of 1,000 "0.1%", not "0%" (a reader takes "100% solved" as "every one")."""

from __future__ import annotations

import math
from typing import Any


def percent(x: Any) -> str:
    """``x`` in 0..1 as a percentage: whole numbers where that is honest, one decimal where rounding
    to a whole would read 0% or 100% for a share that is neither, ``<0.1%`` / ``>99.9%`` below that;
    ``n/a`` for anything that is not a finite number."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return "n/a"
    p = 100.0 * x
    whole = f"{p:.0f}"
    if (whole == "0" and p > 0) or (whole == "100" and p < 100) or (whole == "-0"):
        one = f"{p:.1f}"
        if one == "0.0" and p > 0:
            return "<0.1%"
        if one == "100.0" and p < 100:
            return ">99.9%"
        return f"{one}%"
    return f"{whole}%"
