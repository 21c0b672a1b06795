"""The header line of a page (and the first line in the terminal) whose dataset is a synthetic set
(``harness synth generate``).

A run over generated questions must say how far to trust them where its numbers are read, so the
page shows the set's bias figures beside its title, and ``run`` and ``report`` print them above the
table. They are read from ``bias.json`` in the dataset folder the manifest names, through its one
reader (:mod:`harness.results.synthetic_set`; ``synth generate`` writes it, ``synth bias`` rewrites
it with a human set's figures); nothing is shown for any other dataset. The results layer reads the file only: it
imports nothing of ``harness.synth``, which sits above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.results.page.embed import text
from harness.results.shares import percent
from harness.results.synthetic_set import BiasFigures, read_bias

if TYPE_CHECKING:
    from harness.results import Results


def bias_of(results: Results) -> BiasFigures | None:
    """The dataset folder's ``bias.json`` (a synthetic set's figures), or None for another dataset."""
    from harness.results.manifest import Manifest

    return read_bias(Manifest.of(results).dataset.data.get("source"))


def _pct(x: Any) -> str:
    return percent(x)


def _parts(bias: BiasFigures) -> list[str]:
    sr, ov = bias.source_rank, bias.overlap or {}
    h1 = (bias.human or {}).get("source_rank", {}).get("at1")
    leaked = bias.leaked
    parts = [
        f"synthetic questions: {_pct(sr.get('at1'))} solved by BM25 at rank 1"
        + (f" (human set: {_pct(h1)})" if h1 is not None else ""),
        f"{_pct(sr.get('at10'))} in its top 10",
        f"word overlap with the source {_pct(ov.get('mean'))} on average",
    ]
    if isinstance(leaked, list):
        parts.append(f"{len(leaked)} copied verbatim")
    return parts


#: what the figures mean for the numbers beside them
WARNING = "lexical retrievers may look better than they are (harness synth bias)"


def line(results: Results) -> str | None:
    """The terminal's line for a run over a synthetic set (``run``, ``report``): the page's header
    as plain text; None for any other dataset."""
    bias = bias_of(results)
    return None if bias is None else f"{' · '.join(_parts(bias))}: {WARNING}"


def header(results: Results) -> str:
    """``<p class="sub synthetic">``: the share of questions BM25 solves at rank 1 (and the human
    set's), the word overlap with the source, the verbatim copies; empty for a human set."""
    bias = bias_of(results)
    if bias is None:
        return ""
    return f'<p class="sub" id="synthetic-bias">{text(" · ".join(_parts(bias)))}: {text(WARNING)}</p>'
