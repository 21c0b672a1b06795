"""What ``harness inspect`` is asked to look at, read and checked before any work.

``--dataset`` takes what ``harness run --dataset`` takes (``demo``, a BEIR folder, an ``irds:`` id),
or a YAML config: its ``dataset:`` (a BEIR folder or ``{corpus, golden}``), or ``datasets:`` (a
suite: each dataset in turn), and its ``chunking:`` (each chunked corpus as well, with chunk-level
judgments). ``--corpus`` with ``--golden`` names a golden set directly. ``--results`` is a results
folder of that dataset (for a suite: the suite folder, one results folder per dataset).

Everything that can be wrong with the input is found here, as one located error (exit 2): a folder
that is not a dataset, a split without judgments or queries, a config key, a results folder of
another dataset (its recorded fingerprint differs, or it scores queries the dataset lacks).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import defaults
from harness.config import parse_config, read_config_file
from harness.datasets import load_dataset, load_golden
from harness.errors import InputError
from harness.io.beir import available_splits, read_queries
from harness.io.golden import read_golden, resolve_dataset_section
from harness.io.trec import read_qrels
from harness.model import GoldenDataset
from harness.paths import cache_dir_of
from harness.results import Manifest, Results
from harness.validate import check_corpus_encodable

log = logging.getLogger("harness")

_CONFIG_SUFFIXES = (".yaml", ".yml")


@dataclass
class Target:
    """One dataset to inspect: a label, the dataset, the queries its files hold that no judgment
    names, and the results folder of it, if given. ``chunking``: a chunk spec to apply (chunking
    is work, done after every input is checked)."""

    label: str
    dataset: GoldenDataset
    never_judged: list[str] = field(default_factory=list)
    results: Results | None = None
    #: judged query ids its queries file lacks (a BEIR folder; the loader skips them with a warning)
    not_in_queries: list[str] = field(default_factory=list)
    chunking: tuple[str, dict[str, Any], Path] | None = None
    #: one dataset of a suite (``datasets:``): its results are the suite folder's ``<label>/``
    in_suite: bool = False


def never_judged(dataset: GoldenDataset) -> list[str]:
    """For a BEIR folder: the queries of ``queries.jsonl`` that no ``qrels/*.tsv`` judges (keyword
    queries are judged by their keywords). Empty for other sources."""
    root = Path(dataset.source) if dataset.source else None
    if root is None or not (root / "queries.jsonl").is_file() or not (root / "qrels").is_dir():
        return []
    queries, _ = read_queries(root / "queries.jsonl")
    judged: set[str] = set()
    for split in available_splits(root):
        judged |= set(read_qrels(root / "qrels" / f"{split}.tsv"))
    return sorted(q.id for q in queries if not q.keywords and q.id not in judged)


def judged_not_in_queries(dataset: GoldenDataset) -> list[str]:
    """For a BEIR folder: the query ids its split's qrels judge that ``queries.jsonl`` lacks (the
    loader skips them with a warning; ``harness inspect`` makes them a finding). Empty otherwise."""
    root = Path(dataset.source) if dataset.source else None
    qrels = root / "qrels" / f"{dataset.split}.tsv" if root is not None else None
    if root is None or qrels is None or not (root / "queries.jsonl").is_file() or not qrels.is_file():
        return []
    known = {q.id for q in read_queries(root / "queries.jsonl")[0]}
    return sorted(q for q in read_qrels(qrels) if q not in known)


def empty_rows(golden: str | Path, *, split: str | None, judge_by: str, fmt: str | None = None) -> list[str]:
    """For a golden set: the rows with empty judgments (no relevant ids, no answers), which a run
    refuses and the dataset therefore lacks; ``harness inspect`` lists them as unjudged queries."""
    rows = read_golden(golden, fmt=fmt, split=split, judge_by=judge_by, keep_unjudged=True)  # type: ignore[arg-type]
    return sorted(q.id for q in rows.queries if not q.keywords and not rows.qrels.get(q.id))


def _config_targets(path: Path, split: str | None) -> list[Target]:
    """The datasets (and chunkings) of a YAML config, validated by the one config validator (the
    retrievers aside: inspecting a set needs none)."""
    p, text, data = read_config_file(path)
    if not isinstance(data, dict):
        raise InputError("a config must be a YAML mapping (key: value)", path=p, line=1)
    if data.get("dataset") is None and data.get("datasets") is None:
        raise InputError("the config names no dataset (dataset: or datasets:)", path=p, field="dataset")
    wanted = {k: data[k] for k in ("dataset", "datasets", "chunking") if data.get(k) is not None}
    config = parse_config({**wanted, "retrievers": {"inspect": {"type": "bm25"}}}, source=str(p), yaml_text=text)
    sections = config.datasets if config.datasets is not None else {"": config.dataset}
    targets: list[Target] = []
    for name, section in sections.items():
        raw = section.model_dump(exclude_unset=True)
        if split is not None:
            raw["split"] = split
        try:
            ds = resolve_dataset_section(raw, p.resolve().parent, load_dataset, keep_unjudged=True)
        except InputError as e:
            if e.path is None:  # a key of the section: name the config
                where = f"datasets.{name}" if name else "dataset"
                raise InputError(e.message, path=p, field=(e.field or "").replace("dataset", where, 1)) from None
            raise
        unjudged = never_judged(ds)
        if raw.get("golden") is not None:
            gpath = Path(str(raw["golden"])).expanduser()
            gpath = gpath if gpath.is_absolute() else p.resolve().parent / gpath
            judge = raw.get("judge_by") or "auto"
            unjudged = empty_rows(gpath, split=raw.get("split"), judge_by=judge, fmt=raw.get("golden_format"))
        suite, missing = config.datasets is not None, judged_not_in_queries(ds)
        targets.append(Target(name or ds.name, ds, unjudged, in_suite=suite, not_in_queries=missing))
    cache = cache_dir_of(data.get("cache_dir") if isinstance(data.get("cache_dir"), str) else None)
    for cname, spec in (config.chunking or {}).items():
        if spec.get("method") == "none":
            continue  # the document-level dataset itself
        for t in list(targets):
            if t.chunking is None:
                targets.append(Target(f"{t.label}[{cname}]", t.dataset, chunking=(cname, spec, cache)))
    return targets


def _check_results(target: Target, folder: Path) -> Results:
    """The results folder of ``target``'s dataset, or one located error."""
    res = Results.load(folder)
    where = res.folder / "results.json" if res.folder else folder
    recorded = Manifest.of(res).dataset.data
    fp = recorded.get("fingerprint") if isinstance(recorded, dict) else None
    if fp and fp != target.dataset.fingerprint:
        raise InputError(
            f"these results are of another dataset: recorded {recorded.get('name')!r} ({str(fp)[:19]}), "
            f"inspected {target.dataset.name!r} ({target.dataset.fingerprint[:19]})",
            path=where,
            field="manifest.dataset.fingerprint",
        )
    known = {q.id for q in target.dataset.queries}
    unknown = [q for q in res.query_ids if q not in known]
    if unknown:
        raise InputError(
            f"{len(unknown)} scored queries are not queries of {target.dataset.name!r} (e.g. {unknown[0]!r}): "
            "results of another dataset or split",
            path=where,
            field="query_ids",
        )
    if not res.per_query:
        raise InputError("holds no per-query scores (no retriever finished)", path=where, field="per_query")
    if not res.complete:
        log.warning("%s: an incomplete run: difficulty covers the retrievers that finished", where)
    return res


def resolve(
    dataset: str | None = None,
    *,
    split: str | None = None,
    results: str | None = None,
    corpus: str | None = None,
    golden: str | None = None,
    judge_by: str = "auto",
) -> list[Target]:
    """Every target named by the command line, each checked (and its results with it)."""
    if (corpus is None) != (golden is None):
        raise InputError("--corpus and --golden go together", field="--corpus" if corpus is None else "--golden")
    if corpus is not None and dataset is not None:
        raise InputError("give --dataset or --corpus with --golden, not both", field="--dataset")
    if corpus is not None:
        ds = load_golden(corpus, golden, split=split, judge_by=judge_by, keep_unjudged=True)  # type: ignore[arg-type]
        targets = [Target(ds.name, ds, empty_rows(golden, split=split, judge_by=judge_by))]  # type: ignore[arg-type]
    elif dataset is not None and Path(dataset).suffix.lower() in _CONFIG_SUFFIXES and not Path(dataset).is_dir():
        targets = _config_targets(Path(dataset), split)
    else:
        ds = load_dataset(dataset or defaults.DATASET, split or defaults.SPLIT)
        targets = [Target(ds.name, ds, never_judged(ds), not_in_queries=judged_not_in_queries(ds))]
    for t in targets:  # a lone surrogate would crash the fingerprint, hours into a large set: say where
        if t.chunking is None:
            check_corpus_encodable(t.dataset)
    if results is not None:
        folder = Path(results).expanduser()
        for t in targets:
            if t.chunking is None:  # a suite: one results folder per dataset under the suite folder
                t.results = _check_results(t, folder / t.label if t.in_suite else folder)
    return targets


def materialise(target: Target) -> GoldenDataset:
    """The dataset to inspect: ``target.dataset``, chunked when the target is a chunking."""
    if target.chunking is None:
        return target.dataset
    from harness.chunking import chunk_corpus, chunk_dataset, make_chunker

    _name, spec, cache = target.chunking
    chunked = chunk_corpus(target.dataset.corpus, make_chunker(dict(spec)), cache_dir=cache)
    return chunk_dataset(target.dataset, chunked, name=target.label)
