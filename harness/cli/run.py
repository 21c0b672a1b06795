"""``harness run``: every retriever of a config over a golden dataset, into a results folder (the
flow: :func:`harness.api.run`)."""

from __future__ import annotations

import argparse
import sys

from harness.cli.command import add_command

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


def _split(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value is not None else None


def run(args: argparse.Namespace) -> int:
    from harness.api import RunOptions
    from harness.api import run as run_command

    return run_command(RunOptions(
        config=args.config, out=args.out, dataset=args.dataset, datasets=_split(args.datasets), split=args.split,
        show_progress=not args.no_progress, resume=args.resume, retrievers=_split(args.retrievers),
        metrics=args.metrics.split(",") if args.metrics else None, strict=args.strict, executor=args.executor,
        argv=tuple(sys.argv[1:]),
    ))  # fmt: skip
