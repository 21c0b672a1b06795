"""Fine-tune a cross-encoder reranker on a golden dataset's judgments, offline.

What was learned the hard way on SciFact (2 CPU cores) and is built in here:
- hard negatives alone (BM25's top ranks) teach "lexical overlap means irrelevant": negatives are a
  mix of hard ones (BM25 and dense top ranks) and random ones (``hard_fraction``);
- a fresh head on a sentence-embedding checkpoint learns nothing at lr 2e-5 in an epoch; lr 1e-4
  with warm-up and linear decay does;
- one split's queries are few, so part of them is held out: after every epoch the model reranks
  the first stage's top ``validation_depth`` on the held-out queries, and the best epoch is kept.
  The same scores give the best ``interpolate`` alpha for the rerank stage, recorded beside it.

The loop is plain torch over the ``CrossEncoder``'s own preprocess/forward (what ``predict`` runs),
so the saved folder is a regular CrossEncoder: ``CrossEncoder(DIR)`` and the rerank stage load it.
``loss: listwise`` is softmax cross-entropy over one positive and its negatives (Gao et al.'s
"localised contrastive estimation"); ``bce`` scores each pair alone.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness import clock, progress
from harness.errors import InputError
from harness.executor.models import predict_pairs
from harness.io import atomic, staged
from harness.model import GoldenDataset, Query
from harness.run import Run

log = logging.getLogger("harness")

#: Blend weights of the cross-encoder tried on the held-out queries (1.0: the cross-encoder alone).
ALPHAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class TrainConfig(BaseModel):
    """Everything that shapes the trained model; saved in ``training.json``."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="BEIR folder or 'demo'")
    split: str = "train"
    out: str | None = Field(None, description="model folder (default: <cache_dir>/models/reranker)")
    base: str | None = Field(None, description="checkpoint to start from (default: packaged all-MiniLM-L6-v2)")
    epochs: int = Field(2, ge=1, le=1000)
    negatives: int = Field(7, ge=1, le=1000, description="negatives per positive pair")
    hard_fraction: float = Field(0.5, ge=0, le=1, description="share of negatives mined from BM25/dense top ranks")
    hard_depth: int = Field(30, ge=1, le=100_000, description="hard negatives come from this many top ranks")
    dense: bool = Field(True, description="mine hard negatives with the dense retriever too")
    max_queries: int | None = Field(
        None, ge=1, le=100_000_000, description="cap on training queries (after the hold-out)"
    )
    seed: int = 0
    lr: float = Field(1e-4, gt=0, le=10, allow_inf_nan=False)
    weight_decay: float = Field(0.01, ge=0, le=10, allow_inf_nan=False)
    warmup: float = Field(0.1, ge=0, lt=1, description="share of steps with a linear warm-up")
    max_length: int = Field(
        128, ge=16, le=100_000, description="max tokens per (query, document) pair (cost grows faster than linearly)"
    )
    batch_size: int = Field(16, ge=1, le=65_536, description="pairs per step (listwise: rounded to whole groups)")
    loss: Literal["listwise", "bce"] = "listwise"
    validation_fraction: float = Field(0.1, ge=0, lt=1)
    validation_depth: int = Field(30, ge=1, le=100_000, description="first-stage documents reranked per held-out query")
    first_stage: Literal["bm25", "hybrid"] = Field("bm25", description="what the held-out queries rerank")
    threads: int | None = Field(None, ge=1, le=1024)


def _now() -> str:
    return clock.stamp()


def split_queries(dataset: GoldenDataset, cfg: TrainConfig) -> tuple[list[Query], list[Query]]:
    """(train, validation) queries with at least one relevant document, split by the seed."""
    usable = [q for q in dataset.queries if any(g >= 1 for g in dataset.qrels.get(q.id, {}).values())]
    if len(usable) < 2:
        raise InputError(
            f"{dataset.name} split {dataset.split!r} has {len(usable)} queries with a relevant document; "
            "training needs at least 2",
            field="split",
        )
    order = list(usable)
    random.Random(cfg.seed).shuffle(order)
    n_val = min(len(order) - 1, max(1, round(cfg.validation_fraction * len(order)))) if cfg.validation_fraction else 0
    val, train = order[:n_val], order[n_val:]
    if cfg.max_queries is not None:
        train = train[: cfg.max_queries]
    return train, val


def mine_examples(
    dataset: GoldenDataset, queries: Sequence[Query], candidates: Sequence[Run], cfg: TrainConfig
) -> list[list[tuple[str, str, float]]]:
    """Per positive judgment, a group ``[(query, positive, 1), (query, negative, 0) x negatives]``.

    Hard negatives are drawn from the candidates' top ``hard_depth`` (and judged non-relevant
    documents), never from the judged relevant ones; the rest are random corpus documents.
    """
    rng = random.Random(cfg.seed + 1)
    text = {d.id: d.content for d in dataset.corpus}
    corpus_ids = list(text)
    n_hard = round(cfg.negatives * cfg.hard_fraction)
    groups: list[list[tuple[str, str, float]]] = []
    for q in queries:
        judged = dataset.qrels.get(q.id, {})
        positives = [d for d, g in judged.items() if g >= 1 and d in text]
        if not positives:
            continue
        relevant = set(positives)
        pool: dict[str, None] = {}
        for run in candidates:
            for d, _ in run.ranking(q.id)[: cfg.hard_depth]:
                if d not in relevant:
                    pool[d] = None
        for d, g in judged.items():
            if g <= 0 and d in text:
                pool[d] = None
        hard_pool = list(pool)
        for pos in positives:
            hard = rng.sample(hard_pool, min(n_hard, len(hard_pool)))
            taken = relevant | set(hard)
            randoms: list[str] = []
            while len(hard) + len(randoms) < cfg.negatives and len(taken) < len(corpus_ids):
                d = corpus_ids[rng.randrange(len(corpus_ids))]
                if d not in taken:
                    taken.add(d)
                    randoms.append(d)
            group = [(q.text, text[pos], 1.0)] + [(q.text, text[d], 0.0) for d in hard + randoms]
            groups.append(group)
    return groups


def _batches(groups: list[list[tuple[str, str, float]]], cfg: TrainConfig, rng: random.Random) -> list[list[list]]:
    """Shuffled batches: whole groups (listwise) or single pairs (bce)."""
    if cfg.loss == "listwise":
        order = list(groups)
        rng.shuffle(order)
        per = max(1, cfg.batch_size // max(1, len(order[0]) if order else 1))
        return [order[i : i + per] for i in range(0, len(order), per)]
    pairs = [[p] for g in groups for p in g]
    rng.shuffle(pairs)
    return [pairs[i : i + cfg.batch_size] for i in range(0, len(pairs), cfg.batch_size)]


def load_base(base: str | None, max_length: int, seed: int) -> Any:
    """A one-label CrossEncoder from ``base``; a missing head is initialised under ``seed``."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as hf_logging

    from retrievers.encoder import resolve_model

    location = resolve_model(base)
    torch.manual_seed(seed)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "classifier weights newly initialised" is the point here
    try:
        model = CrossEncoder(location, num_labels=1, max_length=max_length, device="cpu")
    except Exception as e:
        raise InputError(
            f"cannot load base model {base!r} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
            "give a local model folder, or a hub name on a machine with network access",
            field="base",
        ) from None
    finally:
        hf_logging.set_verbosity(verbosity)
    return model


def predict_logits(model: Any, pairs: Sequence[tuple[str, str]], batch_size: int) -> np.ndarray:
    if not pairs:
        return np.zeros(0)
    return predict_pairs(model, pairs, batch_size=batch_size).astype(np.float64)


def rerank_scores(first: Run, ce: np.ndarray, alpha: float) -> Run:
    """The first stage's top ``first.depth`` ordered by ``alpha * minmax(ce) + (1 - alpha) * minmax(first)``."""
    from harness.fusion import normalize_rows

    valid = first.indices >= 0
    if alpha >= 1.0:
        sc = np.where(valid, ce, -np.inf)
    else:
        ce_n = np.where(valid, normalize_rows(ce, valid, "minmax"), 0.0)
        first_n = np.where(valid, normalize_rows(first.scores, valid, "minmax"), 0.0)
        sc = alpha * ce_n + (1 - alpha) * first_n
    return Run(first.query_ids, first.doc_ids, first.indices, np.where(valid, sc, -np.inf))


class Validator:
    """nDCG@10 of reranking the first stage's top ``validation_depth`` on the held-out queries."""

    def __init__(self, dataset: GoldenDataset, first: Run, cfg: TrainConfig) -> None:
        from harness.metrics.evaluate import CompiledQrels, evaluate_run

        self.first = first.cut(cfg.validation_depth)
        self.qrels = CompiledQrels({q: dataset.qrels[q] for q in self.first.query_ids})
        self._evaluate = evaluate_run
        text = {d.id: d.content for d in dataset.corpus}
        qtext = {q.id: q.text for q in dataset.queries}
        valid = self.first.indices >= 0
        self.rows, self.cols = np.nonzero(valid)
        docs = self.first.doc_ids[self.first.indices[self.rows, self.cols]]
        self.pairs = [(qtext[self.first.query_ids[r]], text[d]) for r, d in zip(self.rows.tolist(), docs.tolist())]
        self.cfg = cfg
        self.first_stage_ndcg = self.ndcg(self.first)

    def ndcg(self, run: Run) -> float:
        return float(self._evaluate(self.qrels, run, ["ndcg@10"]).values["ndcg@10"].mean())

    def __call__(self, model: Any) -> dict[str, Any]:
        logits = predict_logits(model, self.pairs, max(32, self.cfg.batch_size))
        ce = np.full(self.first.indices.shape, -np.inf)
        ce[self.rows, self.cols] = logits
        by_alpha = {a: self.ndcg(rerank_scores(self.first, ce, a)) for a in ALPHAS}
        best = max(ALPHAS, key=lambda a: (by_alpha[a], a))
        return {
            "ndcg@10": by_alpha[1.0],
            "interpolate": {str(a): v for a, v in by_alpha.items()},
            "best_alpha": best,
            "best_ndcg@10": by_alpha[best],
        }


def _wants_dense(cfg: TrainConfig) -> bool:
    """Dense runs are mined from, or fused into the hybrid first stage."""
    return cfg.dense or cfg.first_stage == "hybrid"


def _first_stages(
    dataset: GoldenDataset, queries: Sequence[Query], cfg: TrainConfig, cache_dir: Path, show: bool
) -> dict[str, Run]:
    """BM25 (and dense, and their RRF) runs for ``queries``, deep enough to mine and to validate."""
    from harness.fusion import rrf
    from retrievers.bm25 import BM25

    # at least the run depth, so the held-out hybrid is the fusion the rerank stage will see
    depth = max(cfg.hard_depth, cfg.validation_depth, 100)
    bm25 = BM25(show_progress=show)
    bm25.index(dataset.corpus)
    runs = {"bm25": bm25.search(queries, depth)}
    if _wants_dense(cfg):
        from retrievers.dense import Dense

        dense = Dense(cache_dir=cache_dir, show_progress=show)
        dense.index(dataset.corpus)
        runs["dense"] = dense.search(queries, depth)
        runs["hybrid"] = rrf([runs["bm25"], runs["dense"]], depth=depth)
    return runs


def train_reranker(cfg: TrainConfig, *, cache_dir: Path, show_progress: bool = True) -> dict[str, Any]:
    """Train, validate each epoch, keep the best epoch; save the model folder and ``training.json``.

    Progress goes to the harness's one display (:mod:`harness.progress`): the first stages' encode,
    mining, each epoch's steps with the running loss, each validation. Training takes minutes to
    half an hour, so a log (CI, ``nohup``) gets timestamped lines with a heartbeat when the caller
    opened a plain display (``harness train-reranker`` does unless ``--no-progress``); a library
    call with ``show_progress`` and no display of its own gets the terminal's live line only.
    """
    with contextlib.ExitStack() as stack:
        if show_progress and not progress.current().active:
            stack.enter_context(progress.session(None))
        return _train(cfg, cache_dir, progress.current())


def _train(cfg: TrainConfig, cache_dir: Path, display: progress.Progress) -> dict[str, Any]:
    import torch
    from transformers import get_linear_schedule_with_warmup

    from harness.datasets import load_dataset
    from retrievers.encoder import set_threads
    from retrievers.rerank import reranker_home

    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    out = Path(cfg.out).expanduser() if cfg.out else reranker_home(cache_dir)
    set_threads(cfg.threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed % 2**32)

    dataset = load_dataset(cfg.dataset, cfg.split)
    train_q, val_q = split_queries(dataset, cfg)
    log.info("training on %d queries of %s/%s, validating on %d", len(train_q), dataset.name, dataset.split, len(val_q))

    t = time.perf_counter()
    display.phase(f"first stages over {len(dataset.corpus)} docs (bm25{', dense' if _wants_dense(cfg) else ''})")
    runs = _first_stages(dataset, [*train_q, *val_q], cfg, cache_dir, display.active)
    candidates = [runs["bm25"]] + ([runs["dense"]] if cfg.dense else [])
    display.phase(f"mining negatives for {len(train_q)} queries")
    groups = mine_examples(dataset, train_q, candidates, cfg)
    if not groups:
        raise InputError("no training examples: no training query has a relevant document in the corpus")
    timings["mining_seconds"] = time.perf_counter() - t

    model = load_base(cfg.base, cfg.max_length, cfg.seed)
    validator = None
    if val_q:
        validator = Validator(dataset, runs[cfg.first_stage].subset([q.id for q in val_q]), cfg)

    rng = random.Random(cfg.seed + 2)
    steps_per_epoch = len(_batches(groups, cfg, random.Random(0)))
    total_steps = steps_per_epoch * cfg.epochs
    no_decay = ("bias", "LayerNorm.weight", "norm.weight")
    params = [
        {
            "params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
            "weight_decay": cfg.weight_decay,
        },
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr)
    scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(cfg.warmup * total_steps), total_steps)

    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    best_state: dict[str, Any] | None = None
    train_seconds = validation_seconds = 0.0
    for epoch in range(1, cfg.epochs + 1):
        t = time.perf_counter()
        model.train()
        losses: list[float] = []
        batches = _batches(groups, cfg, rng)
        display.phase(f"epoch {epoch}/{cfg.epochs}: training", total=len(batches))
        for batch in batches:
            loss = _step_loss(model, batch, cfg)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            display.advance(1)
            if len(losses) % 10 == 0:
                display.detail(f"loss {np.mean(losses[-50:]):.4f}")
            if not display.active and len(losses) % max(1, len(batches) // 10) == 0:
                log.info("epoch %d: step %d/%d, loss %.4f", epoch, len(losses), len(batches), np.mean(losses[-50:]))
        display.detail("")
        epoch_train = time.perf_counter() - t
        train_seconds += epoch_train
        record: dict[str, Any] = {"epoch": epoch, "train_seconds": epoch_train, "mean_loss": float(np.mean(losses))}
        if validator is not None:
            t = time.perf_counter()
            display.phase(f"epoch {epoch}/{cfg.epochs}: validating ({len(validator.pairs)} pairs)")
            record["validation"] = validator(model)
            record["validation_seconds"] = time.perf_counter() - t
            validation_seconds += record["validation_seconds"]
            v = record["validation"]
            log.info(
                "epoch %d: loss %.4f, held-out nDCG@10 %.4f reranked (first stage %.4f; interpolate %g: %.4f)",
                epoch,
                record["mean_loss"],
                v["ndcg@10"],
                validator.first_stage_ndcg,
                v["best_alpha"],
                v["best_ndcg@10"],
            )
            if best is None or v["best_ndcg@10"] > best["validation"]["best_ndcg@10"]:
                best = record
                best_state = {k: x.detach().clone() for k, x in model.state_dict().items()}
        else:
            log.info("epoch %d: loss %.4f", epoch, record["mean_loss"])
            best = record
        history.append(record)
    if best_state is not None:
        model.load_state_dict(best_state)
    timings.update(train_seconds=train_seconds, validation_seconds=validation_seconds)

    t = time.perf_counter()
    display.phase(f"saving the model to {out}")
    _save_model(model, out)
    timings["save_seconds"] = time.perf_counter() - t
    timings["total_seconds"] = time.perf_counter() - t_start
    assert best is not None
    report = {
        "created": _now(),
        "config": cfg.model_dump(mode="json"),
        "seed": cfg.seed,
        "base": cfg.base or "all-MiniLM-L6-v2 (packaged)",
        "dataset": dataset.summary(),
        "queries": {"train": len(train_q), "validation": len(val_q)},
        "examples": {"groups": len(groups), "pairs": sum(len(g) for g in groups), "steps": total_steps},
        "validation_first_stage": {
            "name": cfg.first_stage,
            "depth": cfg.validation_depth,
            "ndcg@10": validator.first_stage_ndcg if validator else None,
        },
        "epochs": history,
        "best_epoch": best["epoch"],
        "recommended_interpolate": best.get("validation", {}).get("best_alpha"),
        "timings": timings,
        "versions": _versions(),
    }
    atomic.write_json(out / "training.json", report)
    return {**report, "out": str(out)}


def _step_loss(model: Any, batch: list[list[tuple[str, str, float]]], cfg: TrainConfig) -> Any:
    import torch

    pairs = [(q, d) for group in batch for q, d, _ in group]
    features = model.preprocess(pairs)
    logits = model(features)["scores"].view(-1).float()
    if cfg.loss == "listwise":
        # each group is [positive, negatives...]: softmax cross-entropy with the positive as target
        # (groups may differ in size when a corpus is too small for every negative)
        per_group = torch.split(logits, [len(g) for g in batch])
        return torch.stack([torch.logsumexp(g, 0) - g[0] for g in per_group]).mean()
    labels = torch.tensor([y for group in batch for _, _, y in group], dtype=torch.float32)
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)


def _save_model(model: Any, out: Path) -> None:
    """Save beside ``out`` and swap it in, so a killed run never leaves half a model there."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    with staged.lock(out):  # two trainings to one folder: the second refused, not interleaved
        model.save(str(tmp), create_model_card=False)
        staged.replace_dir(tmp, out)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "sentence-transformers"):
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out
