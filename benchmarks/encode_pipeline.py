"""Is the model fed? The harness's dense encoding against sentence-transformers' ``encode``, the
forward passes alone and the tokenizer alone, on the same texts, in one process, any device.

    nice python benchmarks/encode_pipeline.py                      # 10,366 short SciFact texts, CPU
    python benchmarks/encode_pipeline.py --device cuda --dtype float16 --batch-size 256

Texts (``--texts short``, the default): every SciFact document's title and the first sentence of
its abstract, as two documents (10,366 texts of 127 characters on average), from ``--dataset``
(BEIR layout, default ../shared/data/scifact); ``--texts full`` takes title + abstract, one per
document. ``--limit`` keeps the first N.

Rows, each over the same texts with the same model, dtype, max length, batch size and threads:

- ``library``: ``SentenceTransformer.encode`` (normalised, numpy out), what MTEB and BEIR scripts call;
- ``harness``: a cold ``dense`` retriever's ``index()`` (fresh embedding cache, flat index): its
  ``encode_seconds``, ``encode_docs_per_s`` and ``encode_wait_share``, the run's own figures;
- ``forward only``: the model's forward passes over batches tokenized beforehand (the library's
  length order and padding), the ceiling any pipeline can reach;
- ``tokenizer``: the tokenizer alone, per batch with padding as the library calls it, in windows
  without padding as the harness's pipeline calls it, and in one call over all texts.

``library`` and ``harness`` alternate (A B A B, ``--rounds``) so a change of machine load hits both;
the ratio is per round (harness seconds / library seconds) and the median over rounds. The load
average is printed before and after. The embeddings are compared: float32 max |diff|, and the
least cosine for float16 / bfloat16.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from harness.model import Document  # noqa: E402
from retrievers.dense import Dense  # noqa: E402
from retrievers.encode_pipeline import WINDOW_BATCHES, Featurizer  # noqa: E402
from retrievers.encoder import resolve_model  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "data" / "scifact"


def load_texts(dataset: Path, kind: str, limit: int | None) -> list[str]:
    texts: list[str] = []
    with open(dataset / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            title, body = str(d.get("title", "")).strip(), str(d.get("text", "")).strip()
            if kind == "full":
                texts.append(f"{title} {body}".strip())
            else:
                texts.extend(t for t in (title, body.split(". ")[0].strip()) if t)
    return texts[:limit] if limit else texts


def library_encode(model: Any, texts: list[str], batch_size: int) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    emb = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - t0, np.asarray(emb, dtype=np.float32)


def harness_encode(args: argparse.Namespace, texts: list[str]) -> tuple[dict[str, Any], np.ndarray]:
    docs = [Document(id=f"t{i}", text=t) for i, t in enumerate(texts)]
    with tempfile.TemporaryDirectory(prefix="encode-pipeline-") as cache:
        dense = Dense(
            model=args.model,
            batch_size=args.batch_size,
            device=args.device,
            dtype=args.dtype,
            cache_dir=cache,
            show_progress=False,
        )
        t0 = time.perf_counter()
        dense.index(docs)
        wall = time.perf_counter() - t0
        extra = dense.efficiency_extra(10)
        emb = dense.encoder.encode(texts, progress=False)  # the run's embeddings, read back from its cache
    return {**extra, "index_wall": wall}, emb


def forward_only(model: Any, texts: list[str], batch_size: int) -> float:
    import torch

    order = np.argsort([-len(t) for t in texts], kind="stable")
    batches = []
    for b in range(0, len(texts), batch_size):
        feats = model.preprocess([texts[i] for i in order[b : b + batch_size]])
        batches.append({k: v.to(model.device) if hasattr(v, "to") else v for k, v in feats.items()})
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    with torch.inference_mode():
        for feats in batches:
            model(feats)["sentence_embedding"].float().cpu()
    sync()
    return time.perf_counter() - t0


def tokenizer_rates(model: Any, texts: list[str], batch_size: int) -> dict[str, float]:
    order = np.argsort([-len(t) for t in texts], kind="stable")
    ordered = [texts[i] for i in order]
    out = {}
    t0 = time.perf_counter()
    for b in range(0, len(ordered), batch_size):
        model.preprocess(ordered[b : b + batch_size])
    out["per batch, padded (library)"] = len(texts) / (time.perf_counter() - t0)
    f = Featurizer(model, model.max_seq_length)
    window = batch_size * WINDOW_BATCHES
    t0 = time.perf_counter()
    for b in range(0, len(ordered), window):
        for _ in f.batches(ordered[b : b + window], batch_size, str, order):
            pass
    out[f"windows of {window}, then padded (harness, {'fast' if f.fast else 'preprocess'} path)"] = len(texts) / (
        time.perf_counter() - t0
    )
    t0 = time.perf_counter()
    model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)
    out["one call over all texts"] = len(texts) / (time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--texts", choices=["short", "full"], default="short")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--model", default=None, help="default: the packaged all-MiniLM-L6-v2")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-forward", action="store_true", help="leave out the forward-only row")
    args = ap.parse_args()

    import torch

    from harness.executor.models import load_sentence_transformer_as

    texts = load_texts(args.dataset, args.texts, args.limit)
    model = load_sentence_transformer_as(resolve_model(args.model), args.device, args.dtype)
    print(
        f"{len(texts):,} texts ({args.texts}, {np.mean([len(t) for t in texts]):.0f} chars mean) "
        f"from {args.dataset.name}; "
        f"device {args.device}, dtype {args.dtype}, batch {args.batch_size}, max length {model.max_seq_length}, "
        f"torch threads {torch.get_num_threads()}, cores {os.cpu_count()}; load average {os.getloadavg()}",
        flush=True,
    )
    lib_s: list[float] = []
    runs: list[dict[str, Any]] = []
    ref = emb = None
    for r in range(args.rounds):
        s, ref = library_encode(model, texts, args.batch_size)
        lib_s.append(s)
        print(f"round {r + 1}: library {s:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        extra, emb = harness_encode(args, texts)
        runs.append(extra)
        print(
            f"round {r + 1}: harness encode_seconds {extra['encode_seconds']:.1f} s, wait share "
            f"{extra['encode_wait_share']:.3f}, ratio {extra['encode_seconds'] / s:.3f} "
            f"(load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    assert ref is not None and emb is not None
    if args.dtype == "float32":
        match = f"float32 max |diff| {np.abs(emb - ref).max():.2e}"
    else:
        cos = (emb * ref).sum(1) / np.linalg.norm(emb, axis=1) / np.linalg.norm(ref, axis=1)
        match = f"{args.dtype} least cosine {cos.min():.6f}"
    fwd = None if args.skip_forward else forward_only(model, texts, args.batch_size)
    toks = tokenizer_rates(model, texts, args.batch_size)
    n = len(texts)
    ratios = [x["encode_seconds"] / s for x, s in zip(runs, lib_s)]
    print()
    print("| path | docs/s | vs library |")
    print("| --- | ---: | ---: |")
    lib_rate = n / statistics.median(lib_s)
    print(f"| sentence-transformers `encode` (median of {len(lib_s)}) | {lib_rate:,.0f} | 1.00x |")
    h_rate = n / statistics.median([x["encode_seconds"] for x in runs])
    print(f"| harness dense `encode_seconds` (median of {len(runs)}) | {h_rate:,.0f} | {h_rate / lib_rate:.2f}x |")
    if fwd is not None:
        print(f"| forward passes alone (pre-tokenized) | {n / fwd:,.0f} | {n / fwd / lib_rate:.2f}x |")
    for name, rate in toks.items():
        print(f"| tokenizer alone, {name} | {rate:,.0f} | {rate / lib_rate:.2f}x |")
    print()
    print(
        f"harness encode_seconds / library seconds per round: {', '.join(f'{x:.3f}' for x in ratios)} "
        f"(median {statistics.median(ratios):.3f})"
    )
    shares = ", ".join(f"{x['encode_wait_share']:.3f}" for x in runs)
    print(f"encode_wait_share per round: {shares}")
    print(f"embeddings: {match}")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
