"""``harness report DIR`` as one call: the options it was given in (:class:`ReportOptions`), the
folder's kind decided here, once, and each kind reported its way (docs/suites.md, docs/streaming.md):

- a suite folder (``suite.json``): the suite table; ``write`` re-aggregates it from the per-dataset
  folders; ``judged_only`` re-scores every dataset (nothing written);
- a stream folder (``stream.json``): its table per retriever;
- a results folder: its table (``brief``: the table, its legend and the page's path), re-rendered
  files (``write``, ``html``), a re-score against other judgments (``qrels``, ``judged_only``;
  printed only), prediction-powered intervals (``auto_qrels``), the slices (``by``), the worst
  queries (``worst``), or its page served on 127.0.0.1 (``serve``).

Every option is checked before the folder is read where it can be (one line, exit 2). A module of
its own above the stream and suite layers, because it reads every kind of folder the harness writes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import InputError

if TYPE_CHECKING:
    from harness.results import Results
    from harness.results.suite import SuiteResults

log = logging.getLogger("harness")


@dataclass(frozen=True)
class ReportOptions:
    """What ``harness report`` was asked (None: not given)."""

    folder: str
    write: bool = False
    #: the old flag, accepted so existing scripts keep working (printing only is the default now)
    no_write: bool = False
    html: bool = False
    brief: bool = False
    serve: bool = False
    judged_only: bool = False
    allow_incomplete: bool = False
    worst: int | None = None
    docs: int = 3
    retriever: str | None = None
    metric: str | None = None
    port: int = 8766
    baseline: str | None = None
    by: str | None = None
    #: ``qrels``: judgments to re-score against (people's, beside a judge's ``auto_qrels`` for prediction-powered
    #: intervals, docs/judging.md, at ``alpha``, over the ``labelled`` sample)
    alpha: float = 0.05
    qrels: str | None = None
    auto_qrels: str | None = None
    labelled: str | None = None


def report(o: ReportOptions) -> int:
    """``harness report``: the folder's kind (suite, stream, results) and its report printed; 0."""
    from harness.results.suite import is_suite
    from harness.stream import is_stream_folder

    if is_suite(o.folder):
        return _suite(o)
    if is_stream_folder(o.folder):
        from harness.stream import read_stream, to_text

        print(to_text(read_stream(o.folder, allow_incomplete=o.allow_incomplete)), end="")
        return 0
    return _results(o)


def _results(o: ReportOptions) -> int:
    """A results folder (see the module doc)."""
    from harness.results import Results
    from harness.results.drilldown import attach_folder, drilldown, print_drilldown
    from harness.results.render import write_renderings
    from harness.results.terminal import make_console, print_results

    if o.worst is not None and o.worst < 1:
        raise InputError("--worst needs a positive number of queries", field="--worst")
    if o.docs < 0:
        raise InputError("--docs needs a number of documents >= 0", field="--docs")
    if o.write and o.no_write:
        raise InputError("--write and --no-write contradict each other", field="--write")
    if o.auto_qrels:  # before anything is read
        from harness.stats.levels import check_level

        check_level(o.alpha, "--alpha")
    results = Results.open(o.folder, allow_incomplete=o.allow_incomplete)
    if o.auto_qrels:  # prediction-powered intervals over the stored runs (docs/judging.md)
        return _ppi(o, results)
    if o.qrels or o.judged_only:
        from harness.engine.rescore import rescore

        if o.write or o.html or o.serve:
            flag = "--write" if o.write else "--html" if o.html else "--serve"
            raise InputError(f"{flag} renders the folder as it was scored; a re-score is printed only", field=flag)
        results = rescore(results, o.qrels, judged_only=o.judged_only)
    if o.serve:
        return _serve(results, o.port)
    console = make_console()
    if o.html and not o.write:
        from harness.results.page.render import write_report_page

        written = write_report_page(attach_folder(results), results.folder, _images(results.folder))
        log.info("wrote %s in %s", ", ".join(p.name for p in written), results.folder)
    if o.write:
        attach_folder(results)
        written = write_renderings(results, results.folder)
        log.info("re-wrote %s in %s", ", ".join(p.name for p in written), results.folder)
    print_results(results, console, detail=not o.brief)
    if o.brief:
        from harness.results.page.render import PAGE_FILE

        page = results.folder / PAGE_FILE if results.folder is not None else None
        if page is not None and page.is_file():
            console.print(f"page: {page} (open it in a browser: every query, every ranking, the tests behind ▲/▼)")
        elif results.folder is not None:
            console.print(f"no page yet: `harness report {results.folder} --html` writes {PAGE_FILE}")
    if o.by == "tag":
        from harness.results.slices import print_by_tag

        print_by_tag(results, console)
    if o.worst is not None:
        found, metric, baseline, notes = drilldown(
            results, n=o.worst, metric=o.metric, retriever=o.retriever, baseline=o.baseline, docs=o.docs
        )
        print_drilldown(found, metric, baseline, notes, console)
    return 0


def _images(folder: Path) -> list[Path]:
    """The folder's plots a page shows first."""
    return [folder / f for f in ("metric_at_k.png", "quality_latency.png") if (folder / f).is_file()]


def _ppi(o: ReportOptions, results: Results) -> int:
    """``--qrels HUMAN --auto-qrels JUDGE``: the folder's stored runs and metrics, differences against
    the folder's baseline, each metric's prediction-powered interval beside the classical one."""
    import sys

    from harness.judging.folder_runs import scorable, stored_runs
    from harness.judging.ppi import ppi_from_files, render

    runs = stored_runs(results)
    base = results.baseline if results.baseline in runs else None
    figures = ppi_from_files(runs, scorable(results.metrics), qrels=o.qrels, auto_qrels=o.auto_qrels,
                             labelled=o.labelled, alpha=o.alpha, judged_only=o.judged_only, baseline=base)  # fmt: skip
    sys.stdout.write(render(figures))
    return 0


def _serve(results: Results, port: int) -> int:
    """``--serve``: the folder's page (built now, not read from disk) on 127.0.0.1 until Ctrl-C."""
    from harness.results.drilldown import attach_folder
    from harness.results.page.render import CAPTIONS, PAGE_FILE, read_check_section, render
    from harness.results.page.serve import make_server, serve_until_interrupted

    if not 0 <= port <= 65535:
        raise InputError("must be 0..65535", field="--port")
    folder = results.folder
    images = _images(folder) + sorted(folder.glob("perquery_*.png"))
    page = render(
        attach_folder(results), images=images, captions=CAPTIONS, check_section=read_check_section(folder / PAGE_FILE)
    )
    try:
        server = make_server(page, port)
    except OSError as e:
        raise InputError(f"cannot listen on 127.0.0.1:{port} ({e.strerror or e})", field="--port") from None
    host, bound = server.server_address[:2]
    print(f"report of {folder} at http://{host}:{bound}/ - Ctrl-C stops", flush=True)
    serve_until_interrupted(server)
    return 0


# ---------------------------------------------------------------------------------- a suite folder
def _suite(o: ReportOptions) -> int:
    """A suite folder: the suite tables; ``write`` re-aggregates ``suite.json`` from the per-dataset
    folders and re-writes the suite tables."""
    from harness.results import Results
    from harness.results.suite_table import print_suite
    from harness.suite import SuiteResults, aggregate
    from harness.suite.run import write_suite

    for flag, value in (("worst", o.worst), ("by", o.by)):
        if value is not None:
            raise InputError(
                f"--{flag} works on one dataset's folder: harness report DIR/<dataset> --{flag} ...", field=f"--{flag}"
            )
    if o.qrels is not None:
        if not Path(o.qrels).is_file():
            raise InputError("judgments not found", path=o.qrels, field="--qrels")
        raise InputError(
            "one qrels file cannot judge several datasets; name a dataset's folder instead: "
            "harness report DIR/<dataset> --qrels FILE",
            field="--qrels",
        )
    if o.judged_only and o.write:
        raise InputError("--write re-renders the suite as it was scored; a re-score is printed only", field="--write")
    suite = SuiteResults.load(o.folder)
    if not suite.complete and not suite.datasets:
        raise InputError(
            "this suite has not finished a first time: harness run --config ... --out DIR --resume continues it "
            "(the finished datasets' folders are complete results folders already)",
            path=o.folder,
        )
    if o.write:
        assert suite.folder is not None
        per = {d: Results.load(suite.folder / d) for d in suite.datasets}
        fresh = aggregate(per, baseline=suite.baseline, alpha=suite.alpha, complete=suite.complete, folder=suite.folder)
        write_suite(fresh, suite.folder)
        suite = fresh
        log.info("re-wrote suite.json and the suite tables in %s", suite.folder)
    if o.judged_only:
        suite = _rescore_judged_only(suite, allow_incomplete=o.allow_incomplete)
    print_suite(suite)
    return 0


def _rescore_judged_only(suite: SuiteResults, *, allow_incomplete: bool) -> SuiteResults:
    """``harness report SUITE --judged-only``: every dataset's stored runs re-scored with unjudged
    documents removed (each against its own ``qrels.tsv``), aggregated again; nothing is written."""
    from harness.engine.rescore import rescore
    from harness.results import Results
    from harness.suite import aggregate

    assert suite.folder is not None
    per = {}
    for d in suite.datasets:
        res = Results.open(suite.folder / d, allow_incomplete=allow_incomplete)
        per[d] = rescore(res, judged_only=True)
    fresh = aggregate(per, baseline=suite.baseline, alpha=suite.alpha, complete=suite.complete, folder=suite.folder)
    log.info("re-scored judged-only (trec_eval -J) from each dataset's runs/ and qrels.tsv; nothing written")
    return fresh
