"""What bare ``harness run`` (and ``make bench``) runs: a preset config, not a default value
(every default value is in :mod:`harness.defaults`).

This sits above the config (it looks for an offline reranker through the rerank adapter, which the
config module may not import).
"""

from __future__ import annotations

import logging
from typing import Any

from harness import defaults, extras
from harness.config import RunConfig, parse_config

log = logging.getLogger("harness")


def default_config() -> RunConfig:
    """What bare ``harness run`` (and ``make bench``) runs: the demo dataset; BM25 (the baseline),
    dense, their RRF hybrid, MMR over dense, and a cross-encoder rerank of the hybrid when a
    reranker is available offline (otherwise one log line says how to get one).

    On the core install (no ``dense`` extra) it runs what the core can, BM25 alone on the demo, and
    says in one line which extra adds the other rows: a newcomer who typed ``harness run`` after
    ``pip install .`` in a checkout gets a table and the next step, not an error."""
    if not extras.installed("dense"):  # the line saying so ends the output: core_install_note()
        return _preset(list(defaults.METRICS), {"bm25": {"type": "bm25"}})
    metrics = [*defaults.METRICS, "ild@10"]
    retrievers: dict[str, dict[str, Any]] = {
        "bm25": {"type": "bm25"},
        "dense": {"type": "dense"},
        "hybrid": {"type": "hybrid", "of": ["bm25", "dense"], "fusion": "rrf"},
        "dense_mmr": {"type": "mmr", "of": "dense", "lambda": 0.7},
    }
    model = None
    if extras.installed("rerank"):
        from retrievers.rerank import default_reranker, recommended_interpolate

        model = default_reranker()
    if model:
        retrievers["hybrid_rerank"] = {"type": "rerank", "of": "hybrid", "top_n": 50, "model": model}
        alpha = recommended_interpolate(model)
        if alpha is not None and alpha < 1:
            retrievers["hybrid_rerank"]["interpolate"] = alpha
    else:
        log.info(
            "no cross-encoder reranker available offline, so no hybrid_rerank row; to add one: "
            "`harness train-reranker --dataset PATH --split train` (saved where bare `harness run` finds it), "
            "or set $HARNESS_RERANKER to a CrossEncoder folder or hub name"
        )
    return _preset(metrics, retrievers)


def core_install_note() -> str | None:
    """The line bare ``harness run`` ends on where the ``dense`` extra is missing (its last line, not its
    first: above 120 lines of tables it scrolls away), or ``None`` where the whole preset ran."""
    if extras.installed("dense"):
        return None
    return (
        "core install: bm25 alone on the demo; the dense, hybrid and dense_mmr rows (and ild@10) need "
        f"the dense extra: {extras.install_command('dense')}"
    )


def _preset(metrics: list[str], retrievers: dict[str, dict[str, Any]]) -> RunConfig:
    return parse_config(
        {
            "dataset": {"path": defaults.DATASET, "split": defaults.SPLIT},
            "metrics": metrics,
            "baseline": "bm25",
            "retrievers": retrievers,
            "slices": "tag",
        }
    )
