"""Running a suite: each dataset in turn, through the one-dataset entry point, into ``DIR/<dataset>/``.

The suite does not run retrievers itself: ``run_one`` (``harness run``'s :func:`run_config`, or
:func:`benchmark` from Python) runs one dataset into its own results folder exactly as a
one-dataset run would, so every per-dataset folder is complete and every existing tool reads it,
and a dataset's numbers equal a run of it alone. What a suite adds is the order, the progress line
(``dataset 2/3: nfcorpus``), resumption (``resume`` is passed to every dataset: a finished dataset's
stored runs are reused, not re-run) and ``suite.json`` at the end.

The embedding cache is keyed by model and text, not by dataset, so one ``cache_dir`` serves every
dataset of the suite (and any later run).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.engine import check_out_dir
from harness.errors import InputError
from harness.io import atomic
from harness.results import Results
from harness.results.suite import SUITE_FILE, SUITE_SCHEMA, TABLE_FILES, SuiteResults
from harness.suite.aggregate import aggregate

log = logging.getLogger("harness")

#: runs one dataset: (name, what ``dataset:`` takes or a loaded dataset, its results folder or None)
RunOne = Callable[[str, Any, "Path | None"], Results]


def check_suite_dir(out: str | os.PathLike[str], datasets: list[str]) -> Path:
    """Refuse, before any work, a suite folder that is not ours: it must be new, empty, or hold a
    ``suite.json`` the harness wrote; each ``DIR/<dataset>/`` must be a results folder or new."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError("output path exists and is not a folder", path=out)
    if out.is_dir() and any(not e.name.startswith(".") for e in out.iterdir()):
        marker = out / SUITE_FILE
        ok = False
        if marker.is_file():
            try:
                SuiteResults.load(out)
                ok = True
            except InputError:
                ok = False
        if not ok:
            raise InputError(
                "output folder is not empty and holds no suite.json the harness wrote; choose a new or empty "
                "folder for a suite (nothing there is touched)",
                path=out,
            )
    for name in datasets:  # each a results folder of its own (this also probes that out can be written)
        check_out_dir(out / name)
    return out


def run_suite_config(
    config: RunConfig,
    config_dir: Path,
    run_one: RunOne,
    *,
    out: Path,
    datasets: list[str] | None,
    dataset: str | None,
    resume: bool,
    out_given: bool,
) -> SuiteResults:
    """``harness run`` of a suite config (``datasets:``):
    every flag and dataset checked and the folder guarded before any work, then :func:`run_suite`.
    ``datasets``: run only these (``--datasets``); ``dataset`` (``--dataset``) is refused here."""
    from harness.suite.plan import plan_suite, preflight

    if dataset:
        raise InputError(
            "--dataset runs one dataset; this config is a suite (datasets:): pick some with --datasets A,B",
            field="--dataset",
        )
    plan = plan_suite(config, datasets)
    preflight(plan, config_dir)
    if resume and not out_given:
        raise InputError("--resume continues a suite folder: give it with --out DIR", field="--resume")
    check_suite_dir(out, list(plan))  # fail before hours of work, not after
    return run_suite(plan, run_one, out=out, baseline=config.baseline, alpha=config.stats.alpha)


def run_suite(
    datasets: Mapping[str, Any],
    run_one: RunOne,
    *,
    out: str | os.PathLike[str] | None = None,
    baseline: str | None = None,
    alpha: float = 0.05,
) -> SuiteResults:
    """Run every dataset of ``datasets`` (name -> what ``run_one`` takes) with ``run_one``, each into
    ``out/<name>/`` when there is an ``out``, and aggregate them (written to ``out/suite.json`` and
    the suite tables)."""
    names = list(datasets)
    if not names:
        raise InputError("a suite needs at least one dataset", field="datasets")
    folder = check_suite_dir(out, names) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        # the marker first: a suite killed during its first dataset is still ours to --resume
        _write_marker(folder, names, baseline)
    done: dict[str, Results] = {}
    for i, name in enumerate(names, start=1):
        log.info("dataset %d/%d: %s", i, len(names), name)
        done[name] = run_one(name, datasets[name], folder / name if folder is not None else None)
    suite = aggregate(done, baseline=baseline, alpha=alpha, folder=folder)
    if folder is not None:
        write_suite(suite, folder)
    return suite


def _write_marker(folder: Path, names: list[str], baseline: str | None) -> None:
    path = folder / SUITE_FILE
    data: dict[str, Any] = {"schema": SUITE_SCHEMA, "schema_version": 1}
    if path.is_file():
        with contextlib.suppress(InputError):
            data = SuiteResults.load(folder).to_json()
    data.update({"complete": False, "running": names, "baseline": baseline})
    atomic.write_json(path, data)


def write_suite(suite: SuiteResults, folder: str | os.PathLike[str]) -> list[Path]:
    """``suite.json`` and the suite table in every format into ``folder`` (each written atomically;
    the per-dataset folders are not touched)."""

    folder = Path(folder)
    written = [atomic.write_text(folder / f, suite.table(fmt)) for fmt, f in TABLE_FILES.items()]
    written.append(atomic.write_json(folder / SUITE_FILE, suite.to_json()))
    written.append(atomic.write_text(folder / "report.html", suite_page(suite)))
    return written


def suite_page(suite: SuiteResults) -> str:
    """The suite's ``report.html``: its table, and a link to each dataset's page."""
    from urllib.parse import quote

    from harness.results.page.index import index_page
    from harness.results.suite_table import html_tables, suite_title

    links = [
        (d, f"{quote(d)}/report.html", f"{suite.queries[d]:,} queries" if d in suite.queries else "")
        for d in suite.datasets
    ]
    return index_page(suite_title(suite), html_tables(suite), links)
