"""``suite.json``: a suite's per-dataset results brought together.

- ``summary[retriever][dataset][metric]``: each dataset's mean, as in its own ``results.json``;
- ``mean[retriever][metric]``: the arithmetic mean over the datasets (``null`` for a retriever
  missing from, or failed on, any dataset: a mean over fewer datasets is not comparable);
- ``rank[retriever][metric]``: the mean rank over datasets (1 = best on every dataset; ties share
  their average rank), the Borda-style aggregate MTEB reports beside the mean: it is not swayed by
  one dataset whose scores spread more than the others';
- ``significance[dataset][retriever][metric]``: each dataset's test against the baseline, from
  its folder (per-query randomization test, Holm-corrected, as in the one-dataset table);
- ``across_datasets[retriever][metric]``: a paired test over the datasets: the exact sign-flip test
  on the per-dataset differences of means to the baseline (:mod:`harness.stats.exact`), with its
  ``n``; ``too_few`` when ``n`` is below the number of datasets with which it could ever reject
  (6 at alpha 0.05), so a "not significant" there says nothing about the retrievers.

Nothing here runs a retriever or renders: the numbers come from the per-dataset results.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.errors import InputError
from harness.results import Results
from harness.stats.exact import min_p, min_pairs, sign_flip_p

SUITE_SCHEMA = "retrieval-harness/suite"
SUITE_FILE = "suite.json"
#: the suite table's files beside suite.json
TABLE_FILES = {"markdown": "suite.md", "csv": "suite.csv", "html": "suite.html", "latex": "suite.tex"}


class Across(BaseModel):
    """One retriever against the baseline on one metric, over the datasets."""

    n: int
    delta: float | None = None
    p_value: float | None = None
    significant: bool = False
    #: below :func:`~harness.stats.exact.min_pairs` datasets the test cannot reject at alpha
    too_few: bool = False
    min_p: float = 1.0
    wins: int = 0
    ties: int = 0
    losses: int = 0


class SuiteResults(BaseModel):
    """What ``suite.json`` holds; :meth:`results` gives a dataset's full :class:`Results`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: str = Field(SUITE_SCHEMA, alias="schema")
    schema_version: int = 1
    #: False until every dataset finished (a killed suite's suite.json says so)
    complete: bool = True
    datasets: list[str] = Field(default_factory=list)
    retrievers: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    baseline: str | None = None
    alpha: float = 0.05
    summary: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    mean: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    rank: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    significance: dict[str, dict[str, dict[str, dict[str, Any]]]] = Field(default_factory=dict)
    across_datasets: dict[str, dict[str, Across]] = Field(default_factory=dict)
    #: datasets the across-dataset test needs before it can reject at alpha
    min_datasets: int = 0
    queries: dict[str, int] = Field(default_factory=dict)
    failures: dict[str, dict[str, str]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    _results: dict[str, Results] = PrivateAttr(default_factory=dict)
    _folder: Path | None = PrivateAttr(default=None)

    @property
    def folder(self) -> Path | None:
        return self._folder

    def results(self, dataset: str) -> Results:
        """The dataset's full results (per-query scores, runs): from memory, else its folder."""
        if dataset not in self._results:
            if self._folder is None or dataset not in self.datasets:
                raise KeyError(dataset)
            self._results[dataset] = Results.load(self._folder / dataset)
        return self._results[dataset]

    def table(self, fmt: str = "markdown", *, width: int | None = None) -> str:
        """The suite table as text: ``markdown``, ``csv``, ``html``, ``latex`` or ``terminal`` (what
        ``harness report DIR`` prints), through the renderers a run's table uses."""
        from harness.results.render import render_table

        return render_table(self, fmt, width=width)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> SuiteResults:
        """A suite folder (or its ``suite.json``)."""
        p = Path(folder).expanduser()
        path = p if p.is_file() else p / SUITE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError("not a suite folder (no suite.json)", path=p) from None
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read suite.json ({e})", path=path) from None
        if not isinstance(data, dict) or data.get("schema") != SUITE_SCHEMA:
            raise InputError("not a suite.json the harness wrote (no suite schema marker)", path=path)
        out = cls.model_validate(data)
        out._folder = path.parent
        return out

    def __repr__(self) -> str:
        first = self.metrics[0] if self.metrics else None
        best = ""
        if first:
            scored = [(r, (self.mean.get(r) or {}).get(first)) for r in self.retrievers]
            scored = [(r, v) for r, v in scored if v is not None]
            if scored:
                r, v = max(scored, key=lambda x: x[1])
                best = f", best mean {first}: {r} {v:.4f}"
        return f"<SuiteResults: {len(self.retrievers)} retrievers x {len(self.datasets)} datasets{best}>"

    __str__ = __repr__


def is_suite(path: str | os.PathLike[str]) -> bool:
    """``path`` is a suite folder (holds a ``suite.json``) or a ``suite.json``."""
    p = Path(path).expanduser()
    return (p.is_dir() and (p / SUITE_FILE).is_file()) or (p.is_file() and p.name == SUITE_FILE)


def aggregate(
    results: Mapping[str, Results],
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    complete: bool = True,
) -> SuiteResults:
    """The suite of per-dataset ``results`` (in the suite's dataset order)."""
    datasets = list(results)
    retrievers: list[str] = []
    metrics: list[str] = []
    for res in results.values():
        retrievers += [r for r in [*res.summary, *res.failures] if r not in retrievers]
        metrics += [m for m in res.metrics if m not in metrics]
    summary = {r: {d: dict(results[d].summary[r]) for d in datasets if r in results[d].summary} for r in retrievers}
    mean: dict[str, dict[str, float | None]] = {}
    for r in retrievers:
        mean[r] = {}
        for m in metrics:
            values = [summary[r].get(d, {}).get(m) for d in datasets]
            mean[r][m] = math.fsum(values) / len(values) if values and None not in values else None  # type: ignore[arg-type]
    rank = _mean_ranks(summary, retrievers, datasets, metrics)
    significance = {
        d: {r: {m: c.model_dump() for m, c in by_m.items()} for r, by_m in results[d].significance.items()}
        for d in datasets
        if results[d].significance
    }
    across: dict[str, dict[str, Across]] = {}
    notes: list[str] = []
    need = min_pairs(alpha)
    if baseline is not None and baseline in summary:
        for r in retrievers:
            if r == baseline:
                continue
            across[r] = {}
            for m in metrics:
                pairs = [
                    (summary[r][d][m], summary[baseline][d][m])
                    for d in datasets
                    if m in summary[r].get(d, {}) and m in summary[baseline].get(d, {})
                ]
                across[r][m] = _across(pairs, alpha, need)
        if len(datasets) < need:
            notes.append(
                f"too few datasets for a test across datasets: {len(datasets)} (the sign-flip test can reject at "
                f"alpha {alpha:g} only with {need} or more; its smallest p with {len(datasets)} is "
                f"{min_p(len(datasets)):.4g})"
            )
    failures = {d: dict(results[d].failures) for d in datasets if results[d].failures}
    for d, failed in failures.items():
        for r in failed:
            notes.append(f"{r} failed on {d}: no mean over the datasets, no mean rank")
    suite = SuiteResults(
        complete=complete,
        datasets=datasets,
        retrievers=retrievers,
        metrics=metrics,
        baseline=baseline,
        alpha=alpha,
        summary=summary,
        mean=mean,
        rank=rank,
        significance=significance,
        across_datasets=across,
        min_datasets=need,
        queries={d: len(results[d].query_ids) for d in datasets},
        failures=failures,
        notes=notes,
    )
    suite._results = dict(results)
    return suite


def _across(pairs: list[tuple[float, float]], alpha: float, need: int) -> Across:
    n = len(pairs)
    if n == 0:
        return Across(n=0, too_few=True)
    diffs = [a - b for a, b in pairs]
    p = sign_flip_p(diffs)
    return Across(
        n=n,
        delta=math.fsum(diffs) / n,
        p_value=p,
        significant=p < alpha,
        too_few=n < need,
        min_p=min_p(n),
        wins=sum(x > 1e-12 for x in diffs),
        ties=sum(abs(x) <= 1e-12 for x in diffs),
        losses=sum(x < -1e-12 for x in diffs),
    )


def _mean_ranks(
    summary: Mapping[str, Mapping[str, Mapping[str, float]]],
    retrievers: list[str],
    datasets: list[str],
    metrics: list[str],
) -> dict[str, dict[str, float | None]]:
    """Per metric, each retriever's rank on each dataset (1 = best, ties averaged), averaged over
    the datasets; ``None`` for a retriever without a score on every dataset."""
    ranks: dict[str, dict[str, list[float]]] = {r: {m: [] for m in metrics} for r in retrievers}
    for d in datasets:
        for m in metrics:
            scored = [(r, summary[r][d][m]) for r in retrievers if m in summary[r].get(d, {})]
            for r, v in scored:
                better = sum(1 for _, x in scored if x > v)
                equal = sum(1 for _, x in scored if x == v)
                ranks[r][m].append(better + (equal + 1) / 2)
    return {
        r: {m: (math.fsum(v) / len(v) if len(v) == len(datasets) and v else None) for m, v in by_m.items()}
        for r, by_m in ranks.items()
    }
