"""The header line of a page whose dataset is a synthetic set (``harness synth generate``).

A run over generated questions must say how far to trust them where its numbers are read, so the
page shows the set's bias figures beside its title. They are read from ``bias.json`` in the dataset
folder the manifest names (``synth generate`` writes it, ``synth bias`` rewrites it with a human
set's figures); nothing is shown for any other dataset. The results layer reads the file only: it
imports nothing of ``harness.synth``, which sits above it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.results.page.embed import text

if TYPE_CHECKING:
    from harness.results import Results

BIAS_FILE = "bias.json"


def bias_of(results: Results) -> dict[str, Any] | None:
    """The dataset folder's ``bias.json`` (a synthetic set's figures), or None."""
    source = (results.manifest.get("dataset") or {}).get("source")
    if not source:
        return None
    path = Path(source) / BIAS_FILE
    if not (Path(source) / "synth.json").is_file() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("source_rank"), dict) else None


def _pct(x: Any) -> str:
    return f"{100 * x:.0f}%" if isinstance(x, (int, float)) else "n/a"


def header(results: Results) -> str:
    """``<p class="sub synthetic">``: the share of questions BM25 solves at rank 1 (and the human
    set's), the word overlap with the source, the verbatim copies; empty for a human set."""
    bias = bias_of(results)
    if bias is None:
        return ""
    sr, ov = bias["source_rank"], bias.get("overlap") or {}
    human = bias.get("human") or {}
    h1 = (human.get("source_rank") or {}).get("at1")
    leaked = bias.get("leaked")
    parts = [
        f"synthetic questions: {_pct(sr.get('at1'))} solved by BM25 at rank 1"
        + (f" (human set: {_pct(h1)})" if h1 is not None else ""),
        f"{_pct(sr.get('at10'))} in its top 10",
        f"word overlap with the source {_pct(ov.get('mean'))} on average",
    ]
    if isinstance(leaked, list):
        parts.append(f"{len(leaked)} copied verbatim")
    return (
        f'<p class="sub" id="synthetic-bias">{text(" · ".join(parts))}: lexical retrievers may look better '
        "than they are (harness synth bias)</p>"
    )
