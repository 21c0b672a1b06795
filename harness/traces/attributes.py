"""OTLP attribute values to Python values, and nested attributes to one flat mapping.

OTLP JSON (the protobuf JSON mapping) wraps every value in a typed object: ``{"stringValue": "x"}``,
``{"intValue": "3"}`` (a 64-bit integer is a JSON *string*), ``{"doubleValue": 0.5}`` (or ``"NaN"``,
``"Infinity"``), ``{"boolValue": true}``, ``{"arrayValue": {"values": [...]}}``,
``{"kvlistValue": {"values": [{"key": k, "value": v}]}}``, ``{"bytesValue": base64}``. A value that
does not fit its type (an ``intValue`` of ``"abc"``, an array that is not a list) decodes to
:data:`BAD`, so the caller can count it rather than crash on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: a value that did not decode (wrong type for its tag)
BAD = object()

_MAX_NESTING = 32


def any_value(v: Any, depth: int = 0) -> Any:
    """The Python value of one OTLP ``AnyValue`` object, :data:`BAD` if malformed, None if empty."""
    if not isinstance(v, dict) or depth > _MAX_NESTING:
        return BAD
    if not v:
        return None
    if "stringValue" in v:
        s = v["stringValue"]
        return s if isinstance(s, str) else BAD
    if "intValue" in v:
        return _int(v["intValue"])
    if "doubleValue" in v:
        return _double(v["doubleValue"])
    if "boolValue" in v:
        b = v["boolValue"]
        return b if isinstance(b, bool) else BAD
    if "arrayValue" in v:
        arr = v["arrayValue"]
        values = arr.get("values", []) if isinstance(arr, dict) else BAD
        if not isinstance(values, list):
            return BAD
        return [any_value(x, depth + 1) for x in values]
    if "kvlistValue" in v:
        kv = v["kvlistValue"]
        values = kv.get("values", []) if isinstance(kv, dict) else BAD
        return key_values(values, depth + 1) if isinstance(values, list) else BAD
    if "bytesValue" in v:
        b = v["bytesValue"]
        return b if isinstance(b, str) else BAD
    return BAD


def key_values(items: Any, depth: int = 0) -> dict[str, Any]:
    """``[{"key": k, "value": AnyValue}, ...]`` as a dict (entries without a string key are left out)."""
    out: dict[str, Any] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value", {}), depth)
    return out


def _int(raw: Any) -> Any:
    if isinstance(raw, bool):
        return BAD
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and len(raw) <= 24:
        try:
            return int(raw)
        except ValueError:
            return BAD
    return BAD


def _double(raw: Any) -> Any:
    if isinstance(raw, bool):
        return BAD
    if isinstance(raw, (int, float)):
        return float(raw)
    if raw in ("NaN", "Infinity", "-Infinity"):
        return float(raw.replace("inity", ""))  # float("Inf"), float("-Inf"), float("NaN")
    return BAD


def flatten(attrs: Mapping[str, Any], prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested dicts as one level of dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``): Phoenix
    exports write OpenInference attributes nested, the OTLP wire writes them flat; lists are kept."""
    out = {} if out is None else out
    stack: list[tuple[str, Mapping[str, Any], int]] = [(prefix, attrs, 0)]
    while stack:
        pre, m, depth = stack.pop()
        for k, v in m.items():
            key = f"{pre}{k}"
            if isinstance(v, dict) and depth < _MAX_NESTING:
                stack.append((key + ".", v, depth + 1))
            else:
                out[key] = v
    return out


def finite(x: Any) -> float | None:
    """``x`` as a finite float, None when it is missing, NaN, infinite or not a number."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        if isinstance(x, str) and len(x) <= 40:
            try:
                x = float(x)
            except ValueError:
                return None
        else:
            return None
    f = float(x)
    return f if math.isfinite(f) else None
