"""Text that goes inside the page: data that cannot end its ``<script>`` block, HTML that cannot
become markup, and the hashes the Content-Security-Policy allows scripts and styles by.

Why every one of ``<``, ``>``, ``&``, U+2028 and U+2029 is written as a ``\\u`` escape in embedded
data: ``</script>`` (any case) or ``<!--`` inside a script element ends it or changes how the HTML
parser reads it, whatever the JSON means; ``&`` keeps an XHTML reading of the page from seeing
entities; U+2028/U+2029 end a line in older JavaScript parsers, which a side file is run by. Lone
surrogates (text decoded with ``surrogateescape``) are escaped too, so the page is valid UTF-8.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from typing import Any

_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _u(m: re.Match[str]) -> str:
    return f"\\u{ord(m[0]):04x}"


def script_json(obj: Any) -> str:
    """``obj`` as JSON safe inside a ``<script>`` element and as a JavaScript expression.

    The escapes are inside JSON strings or stand for characters JSON writes only there, so the
    value parsed back is ``obj`` unchanged (floats round-trip: Python writes the shortest repr).
    """
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _UNSAFE.sub(_u, text)


def text(value: Any) -> str:
    """``value`` as HTML text or an attribute value: escaped, lone surrogates replaced by U+FFFD."""
    s = str(value)
    return html.escape(re.sub("[\ud800-\udfff]", "\ufffd", s), quote=True)


def sha256_source(source: str) -> str:
    """A CSP hash source (``'sha256-...'``) for the exact text of an inline script or style."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def csp(scripts: list[str], styles: list[str], *, side_files: bool = False) -> str:
    """The page's policy: nothing by default; its own inline scripts and styles by hash; images only
    as ``data:`` URIs. ``side_files`` adds ``'self'`` to ``script-src`` (on ``file://`` Chromium has
    no other way to allow a classic ``<script src>`` from the folder: subresource integrity needs a
    CORS response, which a file never is)."""
    script_src = " ".join([*(sha256_source(s) for s in scripts), *(["'self'"] if side_files else [])]) or "'none'"
    style_src = " ".join(sha256_source(s) for s in styles)
    return (
        f"default-src 'none'; script-src {script_src}; style-src {style_src}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
