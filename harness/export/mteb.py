"""MTEB's results layout: ``OUT/<retriever>/<revision>/<Task>.json`` and ``model_meta.json``.

MTEB (and its leaderboard tooling, ``mteb.TaskResult.from_disk``) reads one JSON file per task and
model revision: ``task_name``, ``dataset_revision``, ``mteb_version``, ``evaluation_time`` and
``scores: {split: [{hf_subset, languages, main_score, <metric>_at_<k>...}]}``. Each retriever is a
"model" whose revision is its config hash (:meth:`Source.revision`); each dataset a task, named as
MTEB names the BEIR sets (SciFact, NFCorpus, ...: :data:`BEIR_TASKS`) and by its own name otherwise.
Every metric the folder has is written (``ndcg@10`` as ``ndcg_at_10``, ``map`` as ``map``), unrounded;
``main_score`` is ``ndcg_at_10`` where the folder has it (MTEB's main retrieval score), else the
first metric. ``dataset_revision`` is the harness's content fingerprint of the data that was
scored (MTEB's own revisions name Hugging Face commits the harness never read). ``mteb_version``
names the layout the file follows, :data:`LAYOUT`, not a run of mteb.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.export.source import Source, put

#: the mteb release whose results layout these files follow (mteb >= 1.12.48 reads them as they are)
LAYOUT = "2.0.0"
#: BEIR dataset names (lower case) -> MTEB's task names
BEIR_TASKS = {
    "arguana": "ArguAna",
    "climate-fever": "ClimateFEVER",
    "dbpedia-entity": "DBPedia",
    "dbpedia": "DBPedia",
    "fever": "FEVER",
    "fiqa": "FiQA2018",
    "hotpotqa": "HotpotQA",
    "msmarco": "MSMARCO",
    "nfcorpus": "NFCorpus",
    "nq": "NQ",
    "quora": "QuoraRetrieval",
    "scidocs": "SCIDOCS",
    "scifact": "SciFact",
    "trec-covid": "TRECCOVID",
    "webis-touche2020": "Touche2020",
    "touche2020": "Touche2020",
}


def task_name(dataset: str) -> str:
    """MTEB's name of a BEIR set (``beir/scifact``, ``SciFact`` and ``irds:beir/scifact/test`` too), else the name."""
    for part in re.split(r"[/:]", dataset.lower()):
        if part in BEIR_TASKS:
            return BEIR_TASKS[part]
    return dataset


def score_key(metric: str) -> str:
    """``ndcg@10`` -> ``ndcg_at_10`` (MTEB's keys); a metric without a cutoff keeps its name."""
    return metric.replace("@", "_at_")


def safe(name: str) -> str:
    """A path component from a retriever name, as MTEB makes one from a model name (``/`` -> ``__``)."""
    out = name.replace("/", "__").replace("\\", "__").replace("\x00", "")
    return "_" if out in ("", ".", "..") else out


def _seconds(s: Source, retriever: str) -> float | None:
    cost = s.results.efficiency.get(retriever) or {}
    parts = [cost.get(k) for k in ("index_seconds", "search_seconds")]
    nums = [float(x) for x in parts if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return sum(nums) if nums else None


def task_result(s: Source, retriever: str) -> dict[str, Any]:
    """One ``<Task>.json``."""
    scores = s.results.summary[retriever]
    row: dict[str, Any] = {score_key(m): v for m, v in scores.items()}
    main = "ndcg_at_10" if "ndcg_at_10" in row else next(iter(row))
    english = task_name(s.dataset_name) in BEIR_TASKS.values()
    row = {**row, "main_score": row[main], "hf_subset": "default", "languages": ["eng-Latn"] if english else []}
    return {
        "dataset_revision": s.manifest.dataset.fingerprint or "unknown",
        "task_name": task_name(s.dataset_name),
        "mteb_version": LAYOUT,
        "scores": {s.manifest.dataset.split: [row]},
        "evaluation_time": _seconds(s, retriever),
        "kg_co2_emissions": None,
    }


def model_meta(s: Source, retriever: str) -> dict[str, Any]:
    """``model_meta.json``: what MTEB records of a model that the folder knows."""
    spec = s.spec(retriever)
    frameworks = {"dense": ["Sentence Transformers"], "rerank": ["Sentence Transformers"], "bm25": ["bm25s"]}
    meta: dict[str, Any] = {
        "name": retriever,
        "revision": s.revision(retriever),
        "framework": frameworks.get(str(spec.get("type")), []),
        "embed_dim": _embed_dim(s, retriever),
    }
    return meta


def _embed_dim(s: Source, retriever: str) -> int | None:
    entry = s.manifest.retrievers.get(retriever)
    params = entry.get("params") if isinstance(entry, dict) else None
    for key in ("embed_dim", "dim", "dimension"):
        value = (params or {}).get(key, s.spec(retriever).get(key))
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def files(sources: Sequence[Source]) -> dict[str, dict[str, Any]]:
    """``{relative path: JSON object}``: every retriever's task file per dataset and its model_meta."""
    out: dict[str, dict[str, Any]] = {}
    for s in sources:
        for retriever in s.results.summary:
            if not s.results.summary[retriever]:
                continue
            base = f"{safe(retriever)}/{s.revision(retriever)}"
            what = f"retriever {retriever!r} on dataset {s.dataset_name!r}"
            put(out, f"{base}/{safe(task_name(s.dataset_name))}.json", task_result(s, retriever), what)
            out.setdefault(f"{base}/model_meta.json", model_meta(s, retriever))
    return out
