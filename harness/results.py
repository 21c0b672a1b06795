"""``results.json`` and the results folder: what a run leaves behind, re-scorable on its own.

Folder layout (``harness run --out DIR``):
- ``results.json``: manifest, summary, per-query scores, counts, efficiency, significance;
- ``table.md`` (and the other table formats): the comparison table;
- ``qrels.tsv``: the judgments used (TREC format), so the folder re-scores without the dataset;
- ``runs/<retriever>.trec``: every ranking, TREC format.
Every file is written atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from harness.errors import InputError
from harness.io import atomic
from harness.io.trec import write_qrels, write_run
from harness.model import Qrels
from harness.run import Run

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1


class Results(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    manifest: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, dict[str, float]] = Field(default_factory=dict)
    per_query: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    efficiency: dict[str, dict[str, Any]] = Field(default_factory=dict)
    significance: dict[str, Any] = Field(default_factory=dict)
    intervals: dict[str, dict[str, list[float]]] = Field(default_factory=dict)
    failures: dict[str, str] = Field(default_factory=dict)

    _runs: dict[str, Run] = PrivateAttr(default_factory=dict)
    _qrels: Qrels | None = PrivateAttr(default=None)
    _folder: Path | None = PrivateAttr(default=None)

    @property
    def retrievers(self) -> list[str]:
        return list(self.summary)

    @property
    def baseline(self) -> str | None:
        return (self.manifest.get("config") or {}).get("baseline")

    @property
    def metrics(self) -> list[str]:
        for scores in self.summary.values():
            return list(scores)
        return []

    @property
    def runs(self) -> dict[str, Run]:
        return self._runs

    @property
    def folder(self) -> Path | None:
        return self._folder

    def attach(self, runs: dict[str, Run], qrels: Qrels) -> Results:
        self._runs, self._qrels = runs, qrels
        return self

    def table(self, fmt: str = "markdown") -> str:
        """The comparison table as text: ``markdown`` (as ``table.md``), ``csv``, ``html`` or ``latex``."""
        import importlib

        from harness import report

        if fmt == "markdown":
            return report.to_markdown(self)
        renderers = {"csv": "csv_table:to_csv", "html": "html_table:to_html", "latex": "latex_table:to_latex"}
        if fmt not in renderers:
            raise InputError(f"unknown table format {fmt!r}; choose markdown, {', '.join(renderers)}", field="fmt")
        module, _, fn = renderers[fmt].partition(":")
        return getattr(importlib.import_module(f"harness.report.{module}"), fn)(report.build_table(self))

    def to_dataframe(self, per_query: bool = False) -> pd.DataFrame:
        """Scores as a pandas DataFrame.

        Summary (default): one row per retriever (index ``retriever``), one column per metric (the
        means). ``per_query=True``: tidy long format, one row per (retriever, query, metric) with
        columns ``retriever``, ``query_id``, ``metric``, ``value`` (every judged query, including
        those a retriever scored 0 on); pivot it for a wide view, e.g.
        ``df.pivot_table(index="query_id", columns=["retriever", "metric"], values="value")``.
        Failed retrievers are absent (see ``failures``).
        """
        import pandas as pd

        if not per_query:
            frame = pd.DataFrame.from_dict(self.summary, orient="index", columns=self.metrics or None)
            frame.index.name = "retriever"
            return frame
        rows = [
            (name, qid, metric, value)
            for name, queries in self.per_query.items()
            for qid, values in queries.items()
            for metric, value in values.items()
        ]
        return pd.DataFrame(rows, columns=["retriever", "query_id", "metric", "value"])

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the results folder (see module doc); returns its path."""
        out = Path(folder).expanduser()
        check_writable(out)
        out.mkdir(parents=True, exist_ok=True)
        if self._qrels is not None:
            write_qrels(out / "qrels.tsv", self._qrels)
        for name, run in self._runs.items():
            write_run(out / "runs" / f"{safe_name(name)}.trec", run, tag=name)
        from harness.report import write_reports

        write_reports(self, out)
        atomic.write_json(out / "results.json", self.model_dump(mode="json"))
        self._folder = out
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Results:
        """From ``results.json`` or a results folder."""
        p = Path(path).expanduser()
        file = p / "results.json" if p.is_dir() else p
        if not file.is_file():
            raise InputError("results file not found (expected results.json or a folder holding it)", path=file)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise InputError(f"not valid UTF-8 (byte {e.start})", path=file) from None
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON ({e.msg})", path=file, line=e.lineno) from None
        if not isinstance(data, dict) or "summary" not in data:
            raise InputError("not a results.json written by harness (no 'summary')", path=file)
        try:
            res = cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(err["msg"], path=file, field=".".join(str(x) for x in err["loc"])) from None
        res._folder = file.parent
        return res


def safe_name(name: str) -> str:
    """A retriever name usable as a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "run"


#: Names a results folder is made of: a folder holding only these (say, after results.json was
#: deleted) is still ours to write into.
_OURS = ("results.json", "qrels.tsv", "runs", "table.", "check.", "metric_at_k.png", "quality_latency.png")


def _written_by_us(name: str) -> bool:
    return any(name == o or (o.endswith(".") and name.startswith(o)) for o in _OURS)


def check_writable(out: Path) -> None:
    """Refuse to write results into a folder holding other things: nothing the user wrote is lost."""
    if out.exists() and not out.is_dir():
        raise InputError("output path exists and is not a folder", path=out)
    if out.is_dir():
        entries = [e.name for e in out.iterdir() if not e.name.startswith(".")]
        if entries and not (out / "results.json").exists() and not all(_written_by_us(n) for n in entries):
            raise InputError(
                "output folder is not empty and holds no results.json; choose a new folder (nothing "
                "there is overwritten)",
                path=out,
            )
