"""``harness run``: every retriever of a config over a golden dataset, into a results folder."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

from harness import clock
from harness.cli import notices
from harness.cli.command import add_command
from harness.config import DatasetConfig, RunConfig, load_config
from harness.errors import InputError
from harness.presets import core_install_note, default_config
from harness.results import Results

log = logging.getLogger("harness")


#: ``harness run --help``: its line in ``harness --help``, a blank line, its description
ABOUT = """run the retrievers of a config and write a results folder

Run every retriever of a config over a golden dataset; without --config,
the default comparison on the embedded demo dataset."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "run", ABOUT)
    p.add_argument("--config", help="YAML config (default: built-in comparison on the demo dataset)")
    p.add_argument("--out", help="results folder (default: results/<time>-<dataset>/)")
    p.add_argument("--dataset", help="BEIR folder or 'demo' (overrides the config)")
    p.add_argument("--datasets", metavar="A,B", help="a suite config (datasets:): run only these of its datasets")
    p.add_argument("--split", help="qrels split to evaluate (overrides the config)")
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the results folder in --out: retrievers whose stored run matches their config are not run again",
    )
    p.add_argument(
        "--retrievers", metavar="A,B", help="run only these retrievers of the config (and what they build on)"
    )
    p.add_argument("--metrics", metavar="M1,M2", help="score only these metrics (default: the config's)")
    p.add_argument("--strict", action="store_true", help="data warnings are errors: exit 2 before any work")
    p.add_argument(
        "--executor",
        choices=["local", "ray"],
        help="where encoding and cross-encoder scoring run (ray: the cluster at RAY_ADDRESS or 'auto'; docs/ray.md)",
    )
    p.set_defaults(func=run)


def default_out_dir(dataset_name: str) -> Path:
    stamp = clock.local_stamp()
    # the name is cut to 100 characters: a folder name may have at most 255 bytes
    base = Path("results") / f"{stamp}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', dataset_name)[:100]}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def resolve_config(args: argparse.Namespace) -> tuple[RunConfig, Path]:
    if args.config:
        return load_config(args.config), Path(args.config).expanduser().resolve().parent
    return default_config(), Path.cwd()


def _split(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def run(args: argparse.Namespace) -> int:
    from harness.api import run_config
    from harness.engine import check_out_dir
    from harness.metrics.names import parse_metrics

    config, config_dir = resolve_config(args)
    if args.executor:
        config = config.model_copy(update={"executor": {"type": args.executor}})
    metrics = [m.name for m in parse_metrics(args.metrics)] if args.metrics else None
    # every missing extra at once, before a folder is made (harness.extras); --metrics checked too
    config.require_extras(args.config, metrics=metrics)
    if config.datasets is not None or args.datasets is not None:  # a suite: docs/suites.md
        from harness.cli.suite import run_suite_cli

        out = Path(args.out) if args.out else default_out_dir("suite")
        return run_suite_cli(args, config, config_dir, metrics, out)
    if args.resume and not args.out:
        raise InputError("--resume continues a results folder: give it with --out DIR", field="--resume")
    if args.out:
        out = Path(args.out)
    else:
        out = default_out_dir(args.dataset or dataset_label(config.dataset))
    check_out_dir(out)  # fail before hours of work, not after
    with notices.collect(strict=args.strict) as warned:
        try:
            results: Results = run_config(
                config,
                config_dir=config_dir,
                dataset=args.dataset,
                split=args.split,
                show_progress=not args.no_progress,
                out=out,
                resume=args.resume,
                retrievers=_split(args.retrievers),
                metrics=metrics,
            )
        except KeyboardInterrupt:
            from harness.results.folder import interrupted_note

            raise KeyboardInterrupt(interrupted_note(out, sys.argv[1:])) from None
    from harness.results.terminal import print_results  # after the run: matplotlib & co. not resident during it

    print_results(results)
    if config.slices == "tag":
        from harness.results.slices import print_by_tag
        from harness.results.terminal import make_console

        print_by_tag(results, make_console())
    log.info("results written to %s", results.folder or out)
    warned.summary()
    if not args.config and (note := core_install_note()):  # bare `harness run` on the core: the next step, last
        log.info(note)
    if results.failures:
        for name, error in results.failures.items():
            print(f"error: retriever {name!r} failed: {error}", file=sys.stderr)
        return 1
    return 0


def dataset_label(dataset: DatasetConfig) -> str:
    """What a default results folder is named after: the dataset's ``name``, else its golden file's stem
    (``{corpus, golden}``: ``path`` is then the unused default ``demo``), else the folder or id."""
    if dataset.name:
        return dataset.name
    if dataset.golden:
        return Path(str(dataset.golden)).stem or "golden"
    return Path(str(dataset.path)).name or "dataset"
