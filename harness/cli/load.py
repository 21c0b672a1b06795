"""``harness load --config C --out DIR``: throughput and tail latency per concurrency, recall against
QPS, cost (docs/load.md). Flags override the config's ``load:`` section."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from harness.cli.command import add_command

log = logging.getLogger("harness")


ABOUT = """serve retrievers under load: QPS and p50/p95/p99 per concurrency or arrival rate, recall vs QPS, cost

Closed loop (--concurrency: N clients, each sending when its answer arrives) and open loop (--rate:
Poisson arrivals, latency from the scheduled send) over the golden set's queries, one query per
request at the config's depth. Writes DIR/load.json, load.md, latency_throughput.png (and
recall_qps.png with --search-params). See docs/load.md."""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "load", ABOUT)
    p.add_argument("--config", required=True, help="YAML run config (its `load:` and `cost:` sections are read)")
    p.add_argument("--retrievers", action="append", help="retrievers to load, comma-separated (default: all)")
    p.add_argument("--concurrency", help="closed-loop levels, e.g. 1,2,4,8,16")
    p.add_argument("--rate", help="open-loop arrival rates per second, e.g. 50,100,200")
    p.add_argument("--duration", type=float, help="measured seconds per level (default 10)")
    p.add_argument("--warmup", type=float, help="unrecorded seconds before each closed-loop level (default 1)")
    p.add_argument("--timeout", type=float, help="seconds before a request is a timeout (default 10)")
    p.add_argument("--workers", type=int, help="open loop: sending threads (default 64)")
    p.add_argument("--search-params", help="search-time settings to sweep, e.g. ef_search=16,32,64,128,256")
    p.add_argument(
        "--sweep-concurrency", type=int, help="closed-loop level each search setting is timed at (default 1)"
    )
    p.add_argument("--sweep-duration", type=float, help="seconds each search setting is timed (default 3)")
    p.add_argument("--seed", type=int, help="query draw seed (default: the config's seed)")
    p.add_argument("--no-gil-probe", action="store_true", help="skip the 1-vs-2-thread probe of in-process retrievers")
    p.add_argument("--out", help="folder for load.json, load.md and the plots (default: print only)")
    p.add_argument("--no-progress", action="store_true", help="no progress display (the build's encode)")
    p.set_defaults(func=run)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    pairs = {
        "concurrency": args.concurrency,
        "rate": args.rate,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "timeout_s": args.timeout,
        "workers": args.workers,
        "search_params": args.search_params,
        "sweep_concurrency": args.sweep_concurrency,
        "sweep_duration_s": args.sweep_duration,
        "seed": args.seed,
    }
    return {k: v for k, v in pairs.items() if v is not None}


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from harness.errors import InputError
    from harness.load import LoadSpec, check_load_folder, load_load_config, run_load, to_text, write_load

    config, spec, cost = load_load_config(args.config)
    over = _overrides(args)
    if over:
        try:
            spec = LoadSpec.model_validate({**spec.model_dump(exclude_unset=True), **over})
        except ValidationError as e:
            err = e.errors()[0]
            flag = "--" + str(err["loc"][0]).removesuffix("_s").replace("_", "-") if err["loc"] else "flag"
            raise InputError(err["msg"].removeprefix("Value error, "), field=flag) from None
    if args.out:
        check_load_folder(args.out)  # fail before the work, not after
    names = [x.strip() for v in args.retrievers or [] for x in v.split(",") if x.strip()] or None
    from harness import progress

    with progress.session(sys.stderr, enabled=not args.no_progress):  # a dense build encodes for minutes
        result = run_load(
            config,
            spec,
            cost,
            config_dir=Path(args.config).expanduser().resolve().parent,
            retrievers=names,
            probe_gil=not args.no_gil_probe,
            show_progress=not args.no_progress,
        )
    sys.stdout.write(to_text(result))
    if args.out:
        written = write_load(result, args.out)
        log.info("wrote %s", ", ".join(str(p) for p in written))
    return 0
