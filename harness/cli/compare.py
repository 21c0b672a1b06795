"""``harness compare RUN_FILE... --qrels FILE``: the comparison table for TREC runs produced
elsewhere: the same metrics core, the same statistics (:func:`harness.stats.compare`), the same
table as ``harness run``; ``--out DIR`` writes a results folder that ``harness report`` reads."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness import defaults
from harness.cli.command import add_allow_incomplete

log = logging.getLogger("harness")


def register(sub: argparse._SubParsersAction) -> None:
    from harness.config import StatsConfig

    d = StatsConfig()
    p = sub.add_parser(
        "compare",
        help="comparison table (significance, CIs) for TREC run files produced elsewhere",
        description="Score TREC run files against judgments and compare them with a baseline run: bootstrap CIs "
        "of every mean, paired randomization and t-tests, Holm correction, wins/ties/losses.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_FILE", help="TREC run files (named after the file stem)")
    p.add_argument("--qrels", required=True, help="TREC qrels (4 columns) or BEIR tsv (query-id corpus-id score)")
    p.add_argument("--baseline", metavar="NAME", help="the run the others are tested against (default: the first)")
    p.add_argument("--metrics", default=",".join(defaults.METRICS), help="comma-separated, e.g. ndcg@10,map,mrr@10")
    p.add_argument("--out", metavar="DIR", help="also write a results folder (tables, plots, runs, results.json)")
    p.add_argument("--dataset", help="BEIR folder or 'demo' the runs came from (recorded, for query text in reports)")
    p.add_argument("--split", default=defaults.SPLIT, help="the dataset's split (with --dataset; default test)")
    p.add_argument(
        "--judged-only", action="store_true", help="drop unjudged documents from each ranking first (trec_eval -J)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bootstrap", type=int, default=d.bootstrap, help=f"bootstrap resamples (default {d.bootstrap})")
    p.add_argument(
        "--permutations",
        type=int,
        default=d.permutations,
        help=f"randomization-test sign flips (default {d.permutations})",
    )
    p.add_argument("--alpha", type=float, default=d.alpha, help=f"significance level after Holm (default {d.alpha})")
    p.add_argument(
        "--correction",
        choices=["all", "metric"],
        default=d.correction,
        help=f"Holm's family: the whole table or each metric's column (default {d.correction})",
    )
    add_allow_incomplete(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.engine import check_out_dir
    from harness.engine.compare import CompareOptions, compare_runs
    from harness.results.terminal import print_results

    if args.out:
        check_out_dir(Path(args.out))
    options = {k: v for k, v in vars(args).items() if k in CompareOptions.__dataclass_fields__ and k != "command"}
    results = compare_runs(CompareOptions(**options, command=sys.argv))
    if args.out:
        out = results.save(args.out)
        log.info("results written to %s", out)
    print_results(results)
    return 0
