"""The suite side of ``harness run``, ``harness report`` and ``harness check`` (docs/suites.md).

Not a subcommand of its own: each of those commands hands over here when it meets a suite (a
config with ``datasets:``, a folder with ``suite.json``), so the one-dataset paths stay as they were.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness.config import RunConfig
from harness.errors import InputError

log = logging.getLogger("harness")


def _split(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value is not None else None


def run_suite_cli(
    args: argparse.Namespace, config: RunConfig, config_dir: Path, metrics: list[str] | None, out: Path
) -> int:
    """``harness run`` of a suite config: every dataset into ``out/<dataset>/``, then the suite."""
    from harness.api import run_config
    from harness.results.suite_table import print_suite
    from harness.suite import plan_suite, run_suite
    from harness.suite.plan import preflight
    from harness.suite.run import check_suite_dir

    if args.dataset:
        raise InputError(
            "--dataset runs one dataset; this config is a suite (datasets:): pick some with --datasets A,B",
            field="--dataset",
        )
    plan = plan_suite(config, _split(args.datasets))
    preflight(plan, config_dir)
    if args.resume and not args.out:
        raise InputError("--resume continues a suite folder: give it with --out DIR", field="--resume")
    check_suite_dir(out, list(plan))  # fail before hours of work, not after
    only = _split(args.retrievers)

    def one(name: str, cfg: RunConfig, folder: Path | None):
        return run_config(
            cfg,
            config_dir=config_dir,
            split=args.split,
            show_progress=not args.no_progress,
            out=folder,
            resume=args.resume,
            retrievers=only,
            metrics=metrics,
        )

    suite = run_suite(plan, one, out=out, baseline=config.baseline, alpha=config.stats.alpha)
    print_suite(suite)
    log.info("suite written to %s (one results folder per dataset)", out)
    failed = False
    for d, failures in suite.failures.items():
        for name, error in failures.items():
            print(f"error: retriever {name!r} failed on {d}: {error}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


def report_suite(args: argparse.Namespace) -> int:
    """``harness report DIR`` of a suite folder: the suite tables; ``--write`` re-aggregates
    ``suite.json`` from the per-dataset folders and re-writes the suite tables."""
    from harness.results import Results
    from harness.results.suite_table import print_suite
    from harness.suite import SuiteResults, aggregate
    from harness.suite.run import write_suite

    for flag in ("worst", "by"):
        if getattr(args, flag, None) is not None:
            raise InputError(
                f"--{flag} works on one dataset's folder: harness report DIR/<dataset> --{flag} ...", field=f"--{flag}"
            )
    qrels, judged_only = getattr(args, "qrels", None), getattr(args, "judged_only", False)
    if qrels is not None:
        if not Path(qrels).is_file():
            raise InputError("judgments not found", path=qrels, field="--qrels")
        raise InputError(
            "one qrels file cannot judge several datasets; name a dataset's folder instead: "
            "harness report DIR/<dataset> --qrels FILE",
            field="--qrels",
        )
    if judged_only and args.write:
        raise InputError("--write re-renders the suite as it was scored; a re-score is printed only", field="--write")
    suite = SuiteResults.load(args.folder)
    if not suite.complete and not suite.datasets:
        raise InputError(
            "this suite has not finished a first time: harness run --config ... --out DIR --resume continues it "
            "(the finished datasets' folders are complete results folders already)",
            path=args.folder,
        )
    if args.write:
        assert suite.folder is not None
        per = {d: Results.load(suite.folder / d) for d in suite.datasets}
        fresh = aggregate(per, baseline=suite.baseline, alpha=suite.alpha, complete=suite.complete, folder=suite.folder)
        write_suite(fresh, suite.folder)
        suite = fresh
        log.info("re-wrote suite.json and the suite tables in %s", suite.folder)
    if judged_only:
        suite = _rescore_judged_only(suite, allow_incomplete=getattr(args, "allow_incomplete", False))
    print_suite(suite)
    return 0


def _rescore_judged_only(suite, *, allow_incomplete: bool):
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
