"""How far the judgments reach each retriever: the ``judged@10`` column and its warnings.

Golden sets are judged from one system's results. A retriever that finds other documents is then
scored against judgments made for someone else: its unjudged documents count as non-relevant, and
it loses to the system the pool came from whether or not it is worse. The table cannot fix that,
but it can say so: it shows ``judged@10`` beside the quality columns when any retriever's is below
:data:`SHOW_BELOW`, and adds a warning for each retriever whose ``judged@10`` trails the
baseline's by more than :data:`TRAILS_BY` (docs/judging.md: pool, judge, re-score; or use bpref
and ``--judged-only``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.results import Results

COLUMN = "judged@10"
#: the column appears when any retriever's judged@10 is below this
SHOW_BELOW = 0.9
#: a retriever is warned about when its judged@10 is more than this below the baseline's
TRAILS_BY = 0.1


def coverage(results: Results) -> tuple[str | None, list[str]]:
    """``(the column to show or None, note lines for the legend)``."""
    judged = {n: v for n, v in results.judged_at_10.items() if n in results.summary and v is not None}
    notes: list[str] = []
    from harness.results.manifest import Manifest

    config = Manifest.of(results).config
    if isinstance(config, dict) and config.get("judged_only"):
        notes.append(
            "Judged-only (trec_eval -J): unjudged documents were removed from each ranking before scoring; "
            f"{COLUMN} is measured on the full ranking."
        )
    rescored = Manifest.of(results).rescored
    if isinstance(rescored, dict) and rescored.get("qrels"):
        notes.append(
            f"Re-scored from the stored runs against {rescored['qrels']} (no retriever ran; efficiency is as "
            "measured when the runs were made)."
        )
    if not judged or min(judged.values()) >= SHOW_BELOW:
        return None, notes
    base = results.baseline if results.baseline in judged else None
    if base is not None:
        for name, value in judged.items():
            if name != base and judged[base] - value > TRAILS_BY:
                notes.append(
                    f"warning: {name} is compared on judgments made for others: {COLUMN} {value:.2f} vs "
                    f"{judged[base]:.2f} for the baseline {base}; pool and judge its documents (harness pool, "
                    "harness judge), or compare with bpref / --judged-only."
                )
    counted = (
        "were dropped before scoring the other columns"
        if isinstance(config, dict) and config.get("judged_only")
        else "count as non-relevant in every other column"
    )
    notes.append(f"{COLUMN}: share of each retriever's top 10 that carries a judgment (unjudged documents {counted}).")
    return COLUMN, notes
