"""Re-score a results folder from its stored runs: new judgments, or judged-only scoring, without
running any retriever again (``harness report DIR --qrels Q2``, ``--judged-only``).

The stored ``runs/*.trec`` are the input; efficiency figures, failures and the manifest are carried
over as they were measured (a re-score times nothing). Metrics computed from embeddings or from
chunk token counts cannot be re-derived from run files and are left out, with a note.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from harness import clock
from harness.engine.score import score
from harness.errors import InputError
from harness.io.trec import read_qrels
from harness.metrics.evaluate import check_overlap
from harness.metrics.names import parse_metrics
from harness.results import Manifest, Results
from harness.results.store import read_runs

log = logging.getLogger("harness")


def rescore(
    results: Results,
    qrels: str | os.PathLike[str] | None = None,
    *,
    judged_only: bool = False,
) -> Results:
    """``results`` scored again from its folder's runs against ``qrels`` (default: the folder's
    own ``qrels.tsv``), with the statistics settings it was made with."""
    folder = results.folder
    if folder is None:
        raise InputError("re-scoring needs a results folder (its runs/ and qrels.tsv)")
    recorded = Manifest.of(results)
    config = recorded.config
    if config.get("chunking"):
        raise InputError(
            "this folder's rows ran on chunks (chunking:), scored at document level when they ran; "
            "re-scoring chunk runs is not supported: run again with the new judgments",
            path=folder,
        )
    qrels_path = Path(qrels) if qrels is not None else folder / "qrels.tsv"
    if not qrels_path.is_file():
        raise InputError("judgments not found", path=qrels_path)
    judgments = read_qrels(qrels_path)
    runs = read_runs(results)
    missing = [n for n in results.summary if n not in runs]
    if missing:
        raise InputError(f"no stored run for {', '.join(missing)} (runs/*.trec)", path=folder)
    metrics = parse_metrics(results.metrics)
    dropped = [m.name for m in metrics if m.needs_embeddings or m.needs_context or m.needs_nuggets]
    if dropped:
        log.info("%s: computed from embeddings, chunks or nuggets, not re-scored from run files", ", ".join(dropped))
    metrics = [m for m in metrics if not (m.needs_embeddings or m.needs_context or m.needs_nuggets)]
    if not metrics:
        raise InputError("no metric of this folder can be re-scored from run files", path=folder)
    for name, run in runs.items():
        warning = check_overlap(judgments, run, run_label=name, qrels_label=str(qrels_path))
        if warning:
            log.warning("%s", warning)
    judged_only = judged_only or bool(config.get("judged_only"))
    manifest = recorded.copy().set(
        "rescored",
        {"created": clock.stamp(), "qrels": str(qrels_path.resolve()), "judged_only": judged_only, "from": str(folder)},
    )
    rescored = score(
        runs,
        judgments,
        metrics,
        baseline=results.baseline if results.baseline in runs else None,
        seed=recorded.seed,
        stats=recorded.stats,
        efficiency=results.efficiency,
        failures=results.failures,
        manifest=manifest.data,
        query_tags=results.query_tags,
        judged_only=judged_only,
        **_weights_of(results),
    )
    # the header counts the queries scored now: new judgments may judge fewer (or more) queries
    # than the dataset the folder was run on
    Manifest.of(rescored).update_dataset(
        queries=len(rescored.query_ids), judgments=sum(len(j) for j in judgments.values())
    )
    return rescored


def _weights_of(results: Results) -> dict:
    """A weighted folder is re-scored weighted (``score``'s ``weights`` arguments), else nothing."""
    if results.weights is None:
        return {}
    return {"weights": results.weights.by_query(results.query_ids), "weights_field": results.weights.field}
