"""The header line of a page (and the first line in the terminal) whose dataset is a synthetic set
(``harness synth generate``).

A run over generated questions must say how far to trust them where its numbers are read, so the
page shows the set's bias figures beside its title, and ``run`` and ``report`` print them above the
table. They are read from ``bias.json`` in the dataset
folder the manifest names (``synth generate`` writes it, ``synth bias`` rewrites it with a human
set's figures); nothing is shown for any other dataset. The results layer reads the file only: it
imports nothing of ``harness.synth``, which sits above it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError
from harness.results.page.embed import text
from harness.results.shares import percent

if TYPE_CHECKING:
    from harness.results import Results

BIAS_FILE = "bias.json"


def bias_of(results: Results) -> dict[str, Any] | None:
    """The dataset folder's ``bias.json`` (a synthetic set's figures), or None for another dataset."""
    return read_bias((results.manifest.get("dataset") or {}).get("source"))


def read_bias(source: str | None) -> dict[str, Any] | None:
    """``bias.json`` of the synthetic set in folder ``source`` (None: not a synthetic set, or no
    figures yet), checked: a hand-edited file is a located :class:`~harness.errors.InputError`
    naming the field, never a crash of the page or a silently missing header."""
    if not source:
        return None
    path = Path(source) / BIAS_FILE
    if not (Path(source) / "synth.json").is_file() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"not readable JSON ({type(e).__name__}): run `harness synth bias` to write it again",
                         path=path) from None  # fmt: skip
    check_bias(data, path)
    return data


def _share(x: Any) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1)


def check_bias(data: Any, path: Path) -> None:
    """The parts of ``bias.json`` a page or a terminal line reads have the shape ``synth bias`` writes."""

    def bad(field: str, what: str) -> InputError:
        return InputError(f"must be {what} (as `harness synth bias` writes it)", path=path, field=field)

    if not isinstance(data, dict):
        raise bad("(top level)", "an object")
    parts = {"": data}
    if "human" in data:
        if not isinstance(data["human"], dict):
            raise bad("human", "an object (the human set's figures)")
        parts["human."] = data["human"]
    for prefix, part in parts.items():
        ranks = part.get("source_rank")
        if not isinstance(ranks, dict):
            raise bad(f"{prefix}source_rank", "an object")
        overlap = part.get("overlap", {})
        if not isinstance(overlap, dict):
            raise bad(f"{prefix}overlap", "an object")
        for key, x in (
            *((f"source_rank.{k}", ranks.get(k)) for k in ("at1", "at10")),
            ("overlap.mean", overlap.get("mean")),
        ):
            if not _share(x):
                raise bad(f"{prefix}{key}", "a share in 0..1 or null")
    if not isinstance(data.get("leaked", []), (list, int)):
        raise bad("leaked", "a list of query ids")


def _pct(x: Any) -> str:
    return percent(x)


def _parts(bias: dict[str, Any]) -> list[str]:
    sr, ov = bias["source_rank"], bias.get("overlap") or {}
    h1 = (bias.get("human") or {}).get("source_rank", {}).get("at1")
    leaked = bias.get("leaked")
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
