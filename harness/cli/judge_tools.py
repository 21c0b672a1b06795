"""``harness judge agree|sample|auto``: automatic judges, checked against people (docs/judging.md).

``agree`` measures a judge against people (pairs and the systems' ranking), ``sample`` draws the
queries people grade in full for prediction-powered intervals, ``auto`` fills a pool with a judge's
grades (an OpenAI-compatible endpoint, a local cross-encoder, a plugin or a team's class).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

log = logging.getLogger("harness")


def register_tools(jsub: argparse._SubParsersAction) -> None:
    a = jsub.add_parser("agree", help="agreement of two graders (A the reference): kappa, alpha, per retriever, tau")
    a.add_argument("a", metavar="A", help="grade file (.csv/.jsonl pool) or qrels: the reference (people)")
    a.add_argument("b", metavar="B", help="grade file or qrels: the grader under test (a judge)")
    a.add_argument("--results", metavar="DIR",
                   help="results folder: also each retriever's metric under A and B, tau, tau_AP")  # fmt: skip
    a.add_argument("--metrics", help="with --results: comma-separated metrics (default: the folder's)")
    a.add_argument("--no-folder-qrels", action="store_true",
                   help="with --results: score each side on its own grades only, not laid over the folder's qrels.tsv")
    a.add_argument("--depth", type=int, default=10,
                   help="with --results: a pair counts for the retrievers ranking it in their top k (default 10)")
    a.add_argument("--threshold", type=int, default=1, help="grade from which a pair counts as relevant (default 1)")
    a.add_argument("--format", choices=["text", "json"], default="text")
    a.set_defaults(func=agree)
    s = jsub.add_parser("sample", help="draw N queries at random for people to grade in full (for PPI intervals)")
    s.add_argument("pool", metavar="POOL", help="pool file from `harness pool`")
    s.add_argument("--queries", type=int, metavar="N", help="how many queries to draw (uniform)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    s.add_argument("--out", required=True, help="new pool file with every row of the drawn queries (.csv/.jsonl)")
    add_active_arguments(s)
    s.set_defaults(func=sample)
    from harness.judging.judge import BUILTIN

    u = jsub.add_parser("auto", help="fill a pool with an automatic judge's grades (endpoint, cross-encoder, yours)")
    u.add_argument("pool", metavar="POOL", help="pool file from `harness pool` (only read)")
    u.add_argument("--judge", required=True, metavar="NAME|module:Class",
                   help=f"who grades: {', '.join(BUILTIN)}, an installed plugin's name, or your class (module:Class)")
    u.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a plugin's or module:Class's constructor argument (a string; repeatable)")  # fmt: skip
    u.add_argument("--out", required=True, help="grade file to write (.csv/.jsonl; `judge merge` takes it)")
    u.add_argument("--model", help="http: the model name to ask for; cross-encoder: a local model folder")
    from harness.cli.endpoint import add_endpoint_arguments

    add_endpoint_arguments(u, "pair")  # --url, --api-key-env, --concurrency, ... (synth generate has the same)
    u.add_argument("--price-in", type=float, metavar="USD", help="http: price per 1M input tokens")
    u.add_argument("--price-out", type=float, metavar="USD", help="http: price per 1M output tokens")
    u.add_argument("--thresholds", metavar="T1,T2,T3", help="cross-encoder: scores from which grades 1, 2, 3 start")
    u.add_argument("--calibrate", metavar="HUMAN",
                   help="cross-encoder: fit the thresholds on people's grades (max quadratic kappa)")  # fmt: skip
    u.add_argument("--no-progress", action="store_true", help="no progress display")
    u.add_argument("--probabilities", action="store_true",
                   help="also p_0..p_3 beside each grade: how sure the judge is (for `judge sample --active`)")
    u.add_argument("--votes", type=int, metavar="K",
                   help="http with --probabilities, an endpoint without logprobs: the vote shares of K replies")
    u.add_argument("--export-lara", metavar="FILE",
                   help="with --probabilities: also LARA's CSV (topic_id, doc_id, annotation, prob_0..prob_3)")
    u.set_defaults(func=auto)
    t = jsub.add_parser("status", help="when to stop grading: each difference separated, within T, or not yet")
    t.add_argument("samples", nargs="+", metavar="SAMPLE", help="the sample, or its rounds in order (--after)")
    t.add_argument("--results", required=True, metavar="DIR", help="the results folder the pool came from")
    t.add_argument("--qrels", required=True, metavar="HUMAN", help="people's judgments")
    t.add_argument("--auto-qrels", required=True, metavar="JUDGE", help="the judge's judgments")
    t.add_argument("--tolerance", type=float, metavar="T", help="a difference above -T counts as non-inferior")
    t.add_argument("--metric", help="the metric (default: the sample's, else the folder's first)")
    t.add_argument("--alpha", type=float, default=0.05, help="1 - the intervals' coverage (default 0.05)")
    t.set_defaults(func=judge_status)


def agree(args: argparse.Namespace) -> int:
    from harness.errors import InputError
    from harness.judging.agree import agree as do_agree
    from harness.judging.agree import read_grades, render

    if args.depth < 1:
        raise InputError("must be at least 1", field="--depth")
    if not args.results and (args.metrics or args.no_folder_qrels):
        raise InputError("--metrics and --no-folder-qrels need --results (the runs to score)", field="--results")
    a, b = read_grades(args.a), read_grades(args.b)
    runs, metrics, base, base_path = None, [], None, None
    if args.results:
        from harness.judging.folder_runs import agree_inputs

        runs, metrics, base, base_path = agree_inputs(args.results, args.metrics, args.no_folder_qrels)
    report = do_agree(a, b, threshold=args.threshold, runs=runs, metrics=metrics, depth=args.depth, base=base,
                      base_path=base_path)  # fmt: skip
    sys.stdout.write(json.dumps(report, indent=1) + "\n" if args.format == "json" else render(report))
    return 0


def add_active_arguments(s: argparse.ArgumentParser) -> None:
    """``judge sample --active``: draw where the judge is unsure (docs/judging.md, active sampling)."""
    s.add_argument("--active", action="store_true",
                   help="draw each query with a probability that grows with the judge's uncertainty")
    s.add_argument("--auto", metavar="GRADED", help="--active: the pool graded by `judge auto --probabilities`")
    s.add_argument("--results", metavar="DIR", help="--active: the results folder whose runs the pool came from")
    s.add_argument("--budget", type=int, metavar="N", help="--active: queries people grade in all (expected)")
    s.add_argument("--batch", type=int, metavar="M", help="--active: this round's expected size (default: the rest)")
    s.add_argument("--mix", type=float, default=0.2, help="--active: share of the budget drawn uniformly (0.2)")
    s.add_argument("--compare", action="append", default=[], metavar="A,B",
                   help="--active: the difference whose uncertainty counts (default: each retriever vs the baseline)")
    s.add_argument("--metric", help="--active: the metric (default: the folder's first)")
    s.add_argument("--after", metavar="EARLIER", help="--active: the next round after the sample EARLIER")
    s.add_argument("--draws", type=int, default=200, help="--active: Monte Carlo draws for nonlinear metrics")


def sample(args: argparse.Namespace) -> int:
    from harness.errors import InputError

    if args.active:
        from harness.judging.active_sample import ActiveSampleOptions, active_sample

        if args.queries is not None:
            raise InputError("--active draws an expected --budget, not a fixed number", field="--queries")
        for flag in ("auto", "results"):
            if not getattr(args, flag):
                raise InputError("required with --active", field=f"--{flag}")
        for line in active_sample(ActiveSampleOptions(
            pool=args.pool, graded=args.auto, results=args.results, out=args.out, seed=args.seed,
            budget=args.budget, batch=args.batch, mix=args.mix, compare=args.compare, metric=args.metric,
            after=args.after, draws=args.draws,
        )):  # fmt: skip
            log.info("%s", line)
        return 0
    from harness.judging.sample import sample_line

    given = [f for f in ("auto", "results", "budget", "batch", "metric", "after") if getattr(args, f) is not None]
    if given or args.compare:
        raise InputError("needs --active", field=f"--{(given or ['compare'])[0]}")
    if args.queries is None:
        raise InputError("how many queries to draw (or --active with --budget)", field="--queries")
    log.info("%s", sample_line(args.pool, args.queries, args.seed, args.out))
    return 0


def add_ppi_arguments(p: argparse.ArgumentParser) -> None:
    """``--auto-qrels`` (and its companions) on ``evaluate`` and ``report``: prediction-powered intervals."""
    p.add_argument(
        "--auto-qrels",
        metavar="FILE",
        help="a judge's qrels: with --qrels (people's), each metric's prediction-powered 95%% interval "
        "beside the classical one on the people-graded queries (docs/judging.md)",
    )
    p.add_argument(
        "--labelled",
        metavar="SAMPLE",
        help="with --auto-qrels: the sample `harness judge sample` drew; only its queries count as labelled",
    )
    p.add_argument(
        "--alpha", type=float, default=0.05, help="with --auto-qrels: 1 - the intervals' coverage (default 0.05)"
    )


def _ppi(args: argparse.Namespace, runs: dict, metrics: list[str], baseline: str | None = None) -> dict:
    from harness.judging.ppi import ppi_from_files

    judged_only = getattr(args, "judged_only", False)
    return ppi_from_files(runs, metrics, qrels=args.qrels, auto_qrels=args.auto_qrels, labelled=args.labelled,
                          alpha=args.alpha, judged_only=judged_only, baseline=baseline)  # fmt: skip


def print_ppi(args: argparse.Namespace, runs: dict, metrics: list[str], *, fmt: str) -> int:
    """``harness evaluate --qrels HUMAN --auto-qrels JUDGE``: JSON (``--format json``) or a table."""
    from harness.judging.ppi import render

    report = _ppi(args, runs, metrics)
    # allow_nan=False: a NaN or Infinity in the JSON would be a bug here, never a figure to hand on
    sys.stdout.write(json.dumps(report, indent=1, allow_nan=False) + "\n" if fmt == "json" else render(report))
    return 0


def auto(args: argparse.Namespace) -> int:
    """``harness judge auto``: everything checked, then graded; the summary lines at the end."""
    from harness.cli.endpoint import endpoint_settings
    from harness.judging.auto import AutoOptions
    from harness.judging.auto import auto as fill_pool
    from harness.judging.judge import parse_options

    report = fill_pool(AutoOptions(
        pool=args.pool, out=args.out, judge=args.judge, model=args.model, endpoint=endpoint_settings(args),
        price_in=args.price_in, price_out=args.price_out, thresholds=args.thresholds, calibrate=args.calibrate,
        judge_options=parse_options(args.judge_option), show_progress=not args.no_progress,
        probabilities=args.probabilities, votes=args.votes, export_lara=args.export_lara,
    ))  # fmt: skip
    for line in report.lines():
        log.info("%s", line)
    report.raise_if_cut()
    return 0


def judge_status(args: argparse.Namespace) -> int:
    """``harness judge status``: one line per compared pair (docs/judging.md, when to stop)."""
    from harness.judging.status import StatusOptions, status

    for line in status(StatusOptions(
        samples=args.samples, results=args.results, qrels=args.qrels, auto_qrels=args.auto_qrels,
        tolerance=args.tolerance, metric=args.metric, alpha=args.alpha,
    )):  # fmt: skip
        sys.stdout.write(line + "\n")
    return 0
