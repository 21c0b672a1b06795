"""What scoring produces, and ``results.json``: per-query scores are the primary artefact, means and
statistics are derived from them.

``results.json`` (schema 2) holds the manifest, ``summary[retriever][metric]`` (means; this shape is a
contract scripts and CI jobs read), ``query_ids`` with ``per_query[retriever][metric]`` as arrays
aligned with them, counts, efficiency, ``significance[retriever][metric]`` (a :class:`Comparison`),
confidence intervals, failures, and ``run_files`` (which run file each retriever's scores came
from, with its sha256 and config hash). Schema 1 files (per-query scores as nested dicts) still load.

This module holds the data; :meth:`Results.table` renders it (:mod:`harness.results.render`) and
:meth:`Results.save` writes its folder (:mod:`harness.results.store`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from harness.efficiency import Cost
from harness.errors import InputError
from harness.io import jsontext
from harness.io.lines import read_utf8
from harness.model import GoldenDataset, Qrels
from harness.run import Run

if TYPE_CHECKING:
    import pandas as pd

#: the marker that makes a results.json (and its folder) the harness's own
SCHEMA = "retrieval-harness/results"
SCHEMA_VERSION = 2


class Weights(BaseModel):
    """Per-query weights every figure of the results was computed with (``dataset: {weights: FIELD}``:
    traffic counts from ``harness traces import``); absent from unweighted results."""

    #: the queries.jsonl field the weights came from
    field: str
    #: one weight per query, aligned with ``Results.query_ids``
    values: list[float]
    #: Kish's effective number of queries, ``(sum w)^2 / sum w^2``
    effective_n: float

    def by_query(self, query_ids: list[str]) -> dict[str, float]:
        return dict(zip(query_ids, self.values))


class Comparison(BaseModel):
    """One retriever against the baseline on one metric (see :func:`harness.stats.compare`)."""

    model_config = ConfigDict(extra="allow")

    delta: float
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    p_t: float | None = None
    p_holm: float | None = None
    significant: bool = False
    wins: int = 0
    ties: int = 0
    losses: int = 0
    #: power (harness.stats.power): sd of the differences, minimum detectable effect, queries needed
    sd_diff: float | None = None
    mde: float | None = None
    n_for_observed: int | None = None
    power_reason: str | None = None

    # mapping-style access, so code written against schema 1's plain dicts keeps working
    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and hasattr(self, key)


class Results(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: str = Field(SCHEMA, alias="schema")
    schema_version: int = SCHEMA_VERSION
    #: False while a run is still going (or was killed): the folder then holds the finished retrievers
    #: (strict: a hand-edited ``"yes"`` is refused, not read as true)
    complete: bool = Field(True, strict=True)
    manifest: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, dict[str, float]] = Field(default_factory=dict)
    query_ids: list[str] = Field(default_factory=list)
    per_query: dict[str, dict[str, list[float]]] = Field(default_factory=dict)
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    efficiency: dict[str, dict[str, Any]] = Field(default_factory=dict)
    significance: dict[str, dict[str, Comparison]] = Field(default_factory=dict)
    intervals: dict[str, dict[str, list[float]]] = Field(default_factory=dict)
    failures: dict[str, str] = Field(default_factory=dict)
    run_files: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: every file of the results folder the harness wrote (relative paths): a re-run replaces these
    #: and nothing else (a user's notes beside the results stay)
    files: list[str] = Field(default_factory=list)
    query_tags: dict[str, list[str]] = Field(default_factory=dict)
    #: rows run on chunks: their metrics against chunk-level relevance (summary is document level)
    chunk_level: dict[str, dict[str, float]] = Field(default_factory=dict)
    #: per retriever, the share of its top 10 that carries a judgment (how far the qrels reach it)
    judged_at_10: dict[str, float] = Field(default_factory=dict)
    #: traffic weights of the queries (weighted results only; see :class:`Weights`)
    weights: Weights | None = None

    _runs: dict[str, Run] = PrivateAttr(default_factory=dict)
    _qrels: Qrels | None = PrivateAttr(default=None)
    _folder: Path | None = PrivateAttr(default=None)
    _arrays: dict[str, dict[str, np.ndarray]] = PrivateAttr(default_factory=dict)
    #: each run's measured cost (what :meth:`save` stores beside the run)
    _costs: dict[str, Cost] = PrivateAttr(default_factory=dict)
    #: all-pairs figures drawn for the renderings (harness.results.groups), drawn once per object
    _all_pairs: dict[Any, Any] = PrivateAttr(default_factory=dict)
    #: the dataset the run that made this object held (not serialised): the renderings take query and
    #: document texts from it instead of reading the corpus a second time (None: read it from the
    #: manifest's dataset folder, as for a folder loaded from disk)
    _dataset: GoldenDataset | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _nested_per_query(cls, data: Any) -> Any:
        """``per_query`` given in schema 1's nested shape (``{retriever: {query: {metric: v}}}``,
        as older scripts build it) is converted to columns over ``query_ids``."""
        if isinstance(data, dict) and not data.get("query_ids"):
            per = data.get("per_query")
            if isinstance(per, dict):
                for cols in per.values():
                    if isinstance(cols, dict) and any(isinstance(v, dict) for v in cols.values()):
                        return upgrade_v1(data)
        return data

    # ------------------------------------------------------------------ views
    @property
    def retrievers(self) -> list[str]:
        return list(self.summary)

    @property
    def baseline(self) -> str | None:
        from harness.results.manifest import Manifest

        return Manifest(self.manifest).baseline

    @property
    def metrics(self) -> list[str]:
        for scores in self.summary.values():
            return list(scores)
        return []

    @property
    def runs(self) -> dict[str, Run]:
        return self._runs

    @property
    def qrels(self) -> Qrels | None:
        return self._qrels

    @property
    def folder(self) -> Path | None:
        return self._folder

    @property
    def dataset(self) -> GoldenDataset | None:
        """The dataset the run held, when this object came from a run in this process (else None)."""
        return self._dataset

    def scores(self, retriever: str) -> dict[str, np.ndarray]:
        """Per-query values of every metric as float64 arrays aligned with :attr:`query_ids`."""
        if retriever not in self._arrays:
            cols = self.per_query.get(retriever)
            if cols is None:
                raise KeyError(retriever)
            self._arrays[retriever] = {m: np.asarray(v, dtype=np.float64) for m, v in cols.items()}
        return self._arrays[retriever]

    def query_scores(self, retriever: str) -> dict[str, dict[str, float]]:
        """``{query_id: {metric: value}}`` for one retriever (schema 1's shape)."""
        cols = self.per_query.get(retriever) or {}
        return {q: {m: v[i] for m, v in cols.items()} for i, q in enumerate(self.query_ids)}

    @property
    def costs(self) -> dict[str, Cost]:
        return self._costs

    def attach_dataset(self, dataset: GoldenDataset | None) -> Results:
        """Keep the run's dataset for the renderings (texts of the page and the drill-down): a run
        that just read its corpus never reads it again to render it."""
        self._dataset = dataset
        return self

    def attach(self, runs: Mapping[str, Run], qrels: Qrels | None, costs: Mapping[str, Cost] | None = None) -> Results:
        self._runs, self._qrels = dict(runs), qrels
        if costs is not None:
            self._costs = dict(costs)
        return self

    # ------------------------------------------------------------------ renderings and the folder
    def table(self, fmt: str = "markdown", *, width: int | None = None) -> str:
        """The comparison table as text: ``markdown`` (the folder's ``table.md``), ``csv``, ``html``,
        ``latex``, or ``terminal`` (what ``harness report DIR`` prints, ``width`` columns wide)."""
        from harness.results.render import render_table

        return render_table(self, fmt, width=width)

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the results folder ``harness run --out DIR`` writes (runs, qrels, results.json,
        tables, plots); an existing results folder is replaced as one step."""
        from harness.results.store import save

        return save(self, folder)

    # ------------------------------------------------------------------ notebooks
    def __repr__(self) -> str:
        state = "" if self.complete else ", incomplete"
        best = ""
        if self.summary and self.metrics:
            m = self.metrics[0]
            name, value = max(((r, s.get(m, float("-inf"))) for r, s in self.summary.items()), key=lambda x: x[1])
            best = f", best {m}: {name} {value:.4f}"
        failed = f", {len(self.failures)} failed" if self.failures else ""
        return (
            f"<Results: {len(self.summary)} retriever{'s' if len(self.summary) != 1 else ''} x "
            f"{len(self.metrics)} metrics over "
            f"{len(self.query_ids)} queries{best}{failed}{state}>"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        frame = self.to_dataframe("summary")
        caption = f"{len(self.query_ids)} queries; baseline {self.baseline or 'none'}"
        html = frame.to_html(float_format=lambda x: f"{x:.4f}", na_rep="")
        notes = "".join(f"<li>{_esc(n)} failed: {_esc(e)}</li>" for n, e in self.failures.items())
        return f"<div><p>{_esc(caption)}</p>{html}{f'<ul>{notes}</ul>' if notes else ''}</div>"

    def to_dataframe(self, kind: str | bool = "summary", *, per_query: bool | None = None) -> pd.DataFrame:
        """Results as a pandas DataFrame.

        - ``summary`` (default): one row per retriever; per metric its mean, ``<metric> ci_low`` /
          ``ci_high`` (bootstrap CI), and against the baseline ``<metric> delta`` / ``p`` (Holm).
        - ``per_query``: tidy, one row per (retriever, query_id, metric) with ``value``.
        - ``cost``: one row per retriever, the efficiency figures.
        - ``significance``: tidy, one row per (retriever, metric) with every test statistic.
        Failed retrievers are absent (see ``failures``). ``per_query=True`` (schema 1's flag) is
        ``kind="per_query"``.
        """
        import pandas as pd

        if per_query is not None:
            kind = bool(per_query)
        if kind is True:
            kind = "per_query"
        elif kind is False:
            kind = "summary"
        if kind == "summary":
            rows = {}
            for r, means in self.summary.items():
                row: dict[str, Any] = {}
                for m, v in means.items():
                    row[m] = v
                    lo, hi = (self.intervals.get(r, {}).get(m) or [None, None])[:2]
                    row[f"{m} ci_low"], row[f"{m} ci_high"] = lo, hi
                    sig = self.significance.get(r, {}).get(m)
                    if sig is not None:
                        row[f"{m} delta"], row[f"{m} p"] = sig.delta, sig.p_holm
                rows[r] = row
            frame = pd.DataFrame.from_dict(rows, orient="index")
            frame.index.name = "retriever"
            return frame
        if kind == "per_query":
            parts = [
                pd.DataFrame({"retriever": r, "query_id": self.query_ids, "metric": m, "value": v})
                for r, cols in self.per_query.items()
                for m, v in cols.items()
            ]
            if not parts:
                return pd.DataFrame(columns=["retriever", "query_id", "metric", "value"])
            return pd.concat(parts, ignore_index=True)
        if kind == "cost":
            frame = pd.DataFrame.from_dict(
                {
                    r: {k: v for k, v in e.items() if not isinstance(v, (list, dict))}
                    for r, e in self.efficiency.items()
                },
                orient="index",
            )
            frame.index.name = "retriever"
            return frame
        if kind == "significance":
            rows2 = [
                {"retriever": r, "metric": m, **c.model_dump()}
                for r, ms in self.significance.items()
                for m, c in ms.items()
            ]
            return pd.DataFrame(rows2)
        raise InputError(f"unknown kind {kind!r}; choose summary, per_query, cost or significance", field="kind")

    # ------------------------------------------------------------------ files
    def to_json(self) -> dict[str, Any]:
        """The results.json payload (NaN and infinities are refused by the writer: not JSON)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"weights"} if self.weights is None else None)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, allow_incomplete: bool = False, what: str = "") -> Results:
        """A results folder (or its ``results.json``) read only when whole: :meth:`load` and the
        integrity check in one call (:mod:`harness.results.integrity`), the way every command reads
        one. An incomplete folder, a missing or altered run file: exit 2 naming the file, or with
        ``allow_incomplete`` a warning each. ``what`` (``baseline``, ``current``) leads every error's
        location, and an unreadable file is an :class:`InputError` too."""
        from harness.results.integrity import check_results

        try:
            return check_results(cls.load(path), allow_incomplete=allow_incomplete)
        except InputError as e:  # "error: baseline FILE:LINE: what is wrong"
            where = f"{what} {e.path}" if what and e.path else (what or e.path)
            raise InputError(e.message, path=where, line=e.line, field=e.field) from None
        except OSError as e:
            raise InputError(f"cannot read ({e.strerror or e})", path=f"{what} {path}" if what else path) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Results:
        """From ``results.json`` or a results folder; schema 1 files are converted on load. No
        integrity check: a command reads a folder with :meth:`open`; this is for a library caller that
        holds the folder already (re-aggregating a suite it just wrote, a page of a folder it checked)."""
        p = Path(path).expanduser()
        file = p / "results.json" if p.is_dir() else p
        text = read_utf8(file, "results file not found (expected results.json or a folder holding it)")
        data = jsontext.loads(text, path=file, invalid="not valid JSON")
        res = cls.from_json(data, source=file)
        if isinstance(data, dict) and data.get("schema_version", 1) == 1:
            _check_finite_v1(data, file)  # after the upgrade a cell schema 1 lacks is NaN: check the file's own
        else:
            res._check_finite(file)
        res._check_bounds(file)
        res._folder = file.parent
        return res

    def _check_finite(self, source: Any) -> None:
        """Every summary and per-query value of a file a finite number: the harness writes no NaN or
        Infinity, so one read here is an edited file; the first is named by retriever, query and metric."""
        for r, ms in self.summary.items():
            for m, v in ms.items():
                if not math.isfinite(v):
                    raise InputError("not a finite number", path=source, field=f"summary.{r}.{m}")
        for r, cols in self.per_query.items():
            for m, v in cols.items():
                bad = np.flatnonzero(~np.isfinite(np.asarray(v, dtype=np.float64)))
                if bad.size:
                    raise InputError(
                        "not a finite number", path=source, field=f"per_query.{r}.{self.query_ids[int(bad[0])]}.{m}"
                    )

    def _check_bounds(self, source: Any) -> None:
        """Every per-query and summary value inside its metric's declared range (an nDCG in [0, 1]):
        the harness writes none outside, so one read here is an edited file (and would make every
        statistic after it meaningless); the first is named by retriever, query and metric."""
        from harness.metrics.names import bounds_of

        def outside(v: np.ndarray, low: float, high: float) -> np.ndarray:
            return np.flatnonzero((v < low - _SLACK) | (v > high + _SLACK))

        for r, cols in self.per_query.items():
            for m, v in cols.items():
                lim = bounds_of(m)
                bad = outside(np.asarray(v, dtype=np.float64), *lim) if lim else ()
                if len(bad):
                    raise InputError(
                        f"retriever {r!r}, metric {m}, query {self.query_ids[int(bad[0])]!r}: {v[int(bad[0])]!r} is "
                        f"outside {m}'s range [{lim[0]:g}, {lim[1]:g}] (an edited file?)",
                        path=source,
                        field=f"per_query.{r}.{m}",
                    )
        for r, ms in self.summary.items():
            for m, v in ms.items():
                lim = bounds_of(m)
                if lim and not lim[0] - _SLACK <= v <= lim[1] + _SLACK:
                    raise InputError(
                        f"retriever {r!r}, metric {m}: mean {v!r} is outside {m}'s range [{lim[0]:g}, {lim[1]:g}] "
                        "(an edited file?)",
                        path=source,
                        field=f"summary.{r}.{m}",
                    )

    @classmethod
    def from_json(cls, data: Any, *, source: str | os.PathLike[str] | None = None) -> Results:
        if not isinstance(data, dict) or "summary" not in data:
            raise InputError("not a results.json written by harness (no 'summary')", path=source)
        version = data.get("schema_version", 1)
        if version == 1:
            try:
                data = upgrade_v1(data)
            except InputError as e:  # located: the file, then the key
                raise InputError(e.message, path=source, field=e.field) from None
        elif version != SCHEMA_VERSION:
            raise InputError(
                f"results schema_version {version!r} is newer than this harness reads ({SCHEMA_VERSION}); upgrade",
                path=source,
            )
        try:
            res = cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(err["msg"], path=source, field=".".join(str(x) for x in err["loc"])) from None
        n = len(res.query_ids)
        for r, cols in res.per_query.items():
            for m, v in cols.items():
                if len(v) != n:
                    raise InputError(f"{len(v)} values for {n} query_ids", path=source, field=f"per_query.{r}.{m}")
        return res


#: rounding a metric's formula may leave past its bounds (an nDCG of 1 + 2e-16): not an edited value
_SLACK = 1e-9

#: schema 1's per-query shape, and what a file labelled schema 1 holds instead (a schema 2 body, say)
_V1_SHAPE = (
    "schema_version 1 holds per_query as {{retriever: {{query: {{metric: value}}}}}}, found a {found} here "
    "(a schema 2 body labelled schema_version 1? schema 2 files say schema_version 2)"
)


def _check_finite_v1(data: dict[str, Any], source: Any) -> None:
    """:meth:`Results._check_finite` for a schema 1 file, on the values it holds (shape already checked)."""
    for r, ms in (data.get("summary") or {}).items():
        for m, v in (ms or {}).items():
            if isinstance(v, float) and not math.isfinite(v):
                raise InputError("not a finite number", path=source, field=f"summary.{r}.{m}")
    for r, per in (data.get("per_query") or {}).items():
        for q, vals in (per or {}).items():
            for m, v in (vals or {}).items():
                if isinstance(v, float) and not math.isfinite(v):
                    raise InputError("not a finite number", path=source, field=f"per_query.{r}.{q}.{m}")


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 (``per_query[retriever][query][metric]``) as schema 2 (columns over ``query_ids``)."""
    out = dict(data)
    nested = data.get("per_query") or {}
    if not isinstance(nested, dict):
        raise InputError("per_query must be a mapping", field="per_query")
    qids: list[str] = []
    seen: set[str] = set()
    for per in nested.values():
        for q in per or {}:
            if q not in seen:
                seen.add(q)
                qids.append(q)
    for r, per in nested.items():  # schema 1's shape, checked before it is read: {query: {metric: number}}
        if per is not None and not isinstance(per, dict):
            raise InputError(_V1_SHAPE.format(found=type(per).__name__), field=f"per_query.{r}")
        for q, vals in (per or {}).items():
            if vals is not None and not isinstance(vals, dict):
                raise InputError(_V1_SHAPE.format(found=type(vals).__name__), field=f"per_query.{r}.{q}")
    columns: dict[str, dict[str, list[float]]] = {}
    for r, per in nested.items():
        metrics = list((data.get("summary") or {}).get(r) or {})
        cols: dict[str, list[float]] = {m: [] for m in metrics}
        for q in qids:
            vals = (per or {}).get(q)
            for m in metrics:
                v = None if vals is None else vals.get(m)
                cols[m].append(math.nan if v is None else v)
        columns[r] = cols
    out.update(schema_version=SCHEMA_VERSION, query_ids=qids, per_query=columns)
    out.setdefault("schema", SCHEMA)
    return out


def is_results_file(path: Path) -> bool:
    """A results.json the harness wrote: schema 2's marker, or schema 1's shape (``schema_version``
    1 with a manifest and a summary), which is how folders from before the marker are recognised."""
    try:
        data = jsontext.loads(path.read_text(encoding="utf-8"), path=path)
    except (OSError, UnicodeDecodeError, InputError):
        return False
    if not isinstance(data, dict):
        return False
    if data.get("schema") == SCHEMA:
        return True
    return data.get("schema_version") == 1 and isinstance(data.get("manifest"), dict) and "summary" in data


def _esc(text: str) -> str:
    import html

    return html.escape(str(text))
