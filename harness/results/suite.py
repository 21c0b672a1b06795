"""``suite.json``, a suite's results (many datasets, one table): the type beside :class:`Results`.

What :func:`harness.suite.aggregate` writes and every reader of a suite folder loads: per-dataset
means, their mean and mean rank, each dataset's tests and the test across datasets
(docs/suites.md). A dataset's full :class:`Results` come from its folder, read when asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.errors import InputError
from harness.results.data import Results
from harness.results.integrity import refuse_or_warn

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

    @classmethod
    def of(cls, results: Mapping[str, Results], folder: Path | None = None, **fields: Any) -> SuiteResults:
        """A suite over per-dataset ``results`` held in memory (``folder``: where they are stored, if
        anywhere): :func:`harness.suite.aggregate` builds one from its figures."""
        suite = cls(**fields)
        suite._results = dict(results)
        suite._folder = folder
        return suite

    @property
    def folder(self) -> Path | None:
        return self._folder

    def results(self, dataset: str) -> Results:
        """The dataset's full results (per-query scores, runs): from memory, else its folder."""
        if dataset not in self._results:
            if self._folder is None or dataset not in self.datasets:
                raise KeyError(dataset)
            self._results[dataset] = Results.load(self._folder / dataset)  # checked by the suite's reader
        return self._results[dataset]

    def table(self, fmt: str = "markdown", *, width: int | None = None) -> str:
        """The suite table as text: ``markdown``, ``csv``, ``html``, ``latex`` or ``terminal`` (what
        ``harness report DIR`` prints), through the renderers a run's table uses."""
        from harness.errors import InputError
        from harness.results.formats import render_suite
        from harness.results.render import FORMATS

        if fmt not in FORMATS:
            raise InputError(f"unknown table format {fmt!r}; choose {', '.join(FORMATS)}", field="fmt")
        return render_suite(self, fmt, width=width)

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
        from harness.results.suite_table import suite_title

        return f"<{suite_title(self).replace('Suite:', 'SuiteResults:')}{best}>"

    __str__ = __repr__


def is_suite(path: str | os.PathLike[str]) -> bool:  # a path: the folder holds suite.json
    """``path`` is a suite folder (holds a ``suite.json``) or a ``suite.json``."""
    p = Path(path).expanduser()
    return (p.is_dir() and (p / SUITE_FILE).is_file()) or (p.is_file() and p.name == SUITE_FILE)


def open_suite(
    folder: str | Path, *, allow_incomplete: bool = False, what: str = ""
) -> tuple[SuiteResults, dict[str, Results]]:
    """A suite folder and each of its datasets' results, read only when whole: an interrupted suite
    (``suite.json`` says ``complete: false``: a dataset may be missing or half run) and every
    dataset's folder through :meth:`Results.open` (incomplete, a run file missing or changed). Exit 2
    naming the file, or with ``allow_incomplete`` a warning each, as for one results folder: a
    suite's figures are its datasets' figures, so a reader of a suite checks what a reader of each
    of its folders checks."""
    suite = SuiteResults.load(folder)
    assert suite.folder is not None
    label = f"{what} " if what else ""
    if not suite.complete:
        msg = (
            "incomplete suite: the run that wrote it was interrupted (datasets may be missing or unfinished); "
            "`harness run --config ... --out DIR --resume` completes it"
        )
        refuse_or_warn([(str(suite.folder / SUITE_FILE), msg)], allow_incomplete, label)
    if not suite.datasets:
        raise InputError("this suite has not finished a dataset: nothing to read", path=f"{label}{suite.folder}")
    members = {d: Results.open(suite.folder / d, allow_incomplete=allow_incomplete, what=what) for d in suite.datasets}
    return suite, members
