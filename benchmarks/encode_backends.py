"""Encoding speed against quality: every encoder configuration (dtype x backend x quantization) and
every index precision of the dense retriever, on one dataset, cold, in one harness run.

    nice python benchmarks/encode_backends.py                         # SciFact, from ../shared/data
    python benchmarks/encode_backends.py --dataset demo --configs torch-float32,torch-bfloat16

Speed: every configuration encodes the whole corpus into a private, empty embedding cache
(``--cache-dir``, default a fresh temporary folder: cold), round-robin in blocks of ``--block``
documents (block 1 with every configuration, then block 2...), so a machine whose load changes during
the run slows every configuration alike; docs/s is documents over the wall seconds the encoder spent
on them, and its ratio to float32 is taken in the same run. The ratio of CPU seconds (this process's,
all threads) is printed beside it: on a shared machine it is the steadier of the two. Model loading
and the one-off ONNX export are timed apart ("setup s").

Quality: one ``harness.api.benchmark`` call with one ``dense`` row per configuration over that cache
(now warm), ``torch-float32`` the baseline: nDCG@10 and its delta against float32 with the paired
randomization test's Holm-adjusted p (the harness's own statistics). ``mean cos`` is the mean cosine of each
document's embedding with its float32 one (read back from the cache). The precision rows
(``--precisions``) index the float32 embeddings (read from the cache, not encoded again) as
float16 / int8 / binary codes, with and without re-scoring, and report ``ann_recall@depth`` against
exact float32 search and the index's bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.api import benchmark  # noqa: E402
from harness.datasets import load_dataset  # noqa: E402
from harness.executor.backends import missing_extra  # noqa: E402
from harness.executor.dtypes import resolve_dtype  # noqa: E402
from harness.io import atomic  # noqa: E402
from retrievers.encoder import Encoder  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "data" / "scifact"
NDCG = "ndcg@10"

#: name -> encoder options; ``torch-float32`` is the baseline and must come first
CONFIGS: dict[str, dict[str, str]] = {
    "torch-float32": {},
    "torch-bfloat16": {"dtype": "bfloat16"},
    "torch-float16": {"dtype": "float16"},
    "onnx-float32": {"backend": "onnx"},
    "onnx-int8": {"backend": "onnx", "quantize": "int8"},
    "openvino-float32": {"backend": "openvino"},
    "openvino-bfloat16": {"backend": "openvino", "dtype": "bfloat16"},
    "openvino-int8": {"backend": "openvino", "quantize": "int8", "dtype": "auto"},
}
#: name -> dense index options over the float32 embeddings
PRECISIONS: dict[str, dict[str, Any]] = {
    "float16": {"precision": "float16"},
    "int8": {"precision": "int8"},
    "int8+rescore100": {"precision": "int8", "rescore": 100},
    "binary": {"precision": "binary"},
    "binary+rescore100": {"precision": "binary", "rescore": 100},
    "binary+rescore400": {"precision": "binary", "rescore": 400},
    "binary+rescore1000": {"precision": "binary", "rescore": 1000},
}


def runnable(names: list[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The configurations this machine can run, and a note for each left out (a missing extra, or a
    dtype that would fall back to float32, i.e. a duplicate of the baseline)."""
    keep: dict[str, dict[str, str]] = {}
    notes = []
    for name in names:
        opts = CONFIGS[name]
        problem = missing_extra(opts.get("backend", "torch"))
        if problem:
            notes.append(f"{name}: left out, {problem}")
            continue
        r = resolve_dtype(opts.get("dtype", "float32"), backend=opts.get("backend", "torch"))
        if r.note and name != "torch-float32":
            notes.append(f"{name}: left out, {r.note}")
            continue
        keep[name] = opts
    return keep, notes


def encode_round_robin(
    ds: Any, configs: dict[str, dict[str, str]], cache_dir: str, threads: int, block: int, limit: int | None = None
) -> dict[str, dict[str, Any]]:
    """Every configuration encodes every document into the (empty) cache, a block at a time in turn;
    per configuration the wall and CPU seconds spent encoding, the setup seconds and the dtype."""
    texts = list(ds.corpus.contents())[:limit]
    out: dict[str, dict[str, Any]] = {}
    encoders = {}
    for name, opts in configs.items():
        t0 = time.perf_counter()
        enc = Encoder(cache_dir=cache_dir, threads=threads, show_progress=False, **opts)
        enc.encode(texts[:8], use_cache=False, progress=False)  # load, export, warm up
        encoders[name] = enc
        out[name] = {
            "wall": 0.0,
            "cpu": 0.0,
            "setup": time.perf_counter() - t0,
            "dtype": enc.dtype,
            "docs": len(set(texts)),
        }
    for start in range(0, len(texts), block):
        part = texts[start : start + block]
        for name, enc in encoders.items():
            w0, c0 = time.perf_counter(), time.process_time()
            enc.encode(part, progress=False)
            out[name]["wall"] += time.perf_counter() - w0
            out[name]["cpu"] += time.process_time() - c0
        print(f"  encoded {min(start + block, len(texts))}/{len(texts)} with each configuration", flush=True)
    for name, enc in encoders.items():
        if enc.encoded != 8 + len(set(texts)):
            raise SystemExit(f"{name} encoded {enc.encoded - 8} of {len(set(texts))} texts: the cache was not cold")
    return out


def mean_cosines(ds: Any, cache_dir: str, configs: dict[str, dict[str, str]], threads: int) -> dict[str, float]:
    """Mean over documents of cos(embedding, float32 embedding); every row is read from the cache."""
    base = Encoder(cache_dir=cache_dir, threads=threads, show_progress=False).encode_documents(
        ds.corpus, progress=False
    )
    out = {}
    for name, opts in configs.items():
        e = Encoder(cache_dir=cache_dir, threads=threads, show_progress=False, **opts).encode_documents(
            ds.corpus, progress=False
        )
        cos = (e * base).sum(1) / np.maximum(np.linalg.norm(e, axis=1) * np.linalg.norm(base, axis=1), 1e-12)
        out[name] = float(cos.mean())
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="BEIR folder or 'demo' (default: SciFact)")
    p.add_argument("--split", default="test")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, from {', '.join(CONFIGS)}")
    p.add_argument("--precisions", default=",".join(PRECISIONS), help="comma-separated, or '' for none")
    p.add_argument("--threads", type=int, default=2, help="torch / runtime threads (default 2)")
    p.add_argument("--cache-dir", default=None, help="embedding cache (default: a fresh temporary folder: cold)")
    p.add_argument(
        "--speed-docs", type=int, default=None, help="time encoding on the first N documents only (default: all)"
    )
    p.add_argument(
        "--quality-cache-dir",
        default=None,
        help="cache the quality run reads and fills (default: --cache-dir); a shared warm cache saves re-encoding "
        "the whole corpus when --speed-docs times a part of it",
    )
    p.add_argument(
        "--quality-configs",
        default=None,
        help="configurations whose nDCG@10 is measured on the whole corpus (default: all of --configs)",
    )
    p.add_argument("--block", type=int, default=256, help="documents per round-robin block (default 256)")
    p.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    names = [c for c in args.configs.split(",") if c]
    unknown = [c for c in names if c not in CONFIGS]
    if unknown or not names or names[0] != "torch-float32":
        raise SystemExit(f"--configs must start with torch-float32 and name only {', '.join(CONFIGS)}")
    configs, notes = runnable(names)
    precisions = {n: PRECISIONS[n] for n in args.precisions.split(",") if n}
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="harness-encode-bench-")
    auto = resolve_dtype("auto")
    print(f"cache: {cache_dir}  threads: {args.threads}  dtype auto -> {auto.dtype} on this machine")
    for n in notes:
        print(n)

    judged = set(args.quality_configs.split(",")) | {"torch-float32"} if args.quality_configs else set(configs)
    retrievers: dict[str, dict[str, Any]] = {
        name: {"type": "dense", "threads": args.threads, **opts} for name, opts in configs.items() if name in judged
    }
    # precision rows last: they read the float32 embeddings the baseline row cached
    for name, opts in precisions.items():
        retrievers[f"index-{name}"] = {"type": "dense", "threads": args.threads, **opts}
    ds = load_dataset(args.dataset, args.split)
    speed = encode_round_robin(ds, configs, cache_dir, args.threads, args.block, args.speed_docs)
    quality_cache = args.quality_cache_dir or cache_dir
    # the quality step encodes the whole corpus once per configuration the cache lacks: minutes each,
    # and its progress bars show only on a terminal, so a log gets this line
    print(
        f"quality: nDCG@10 over all {len(ds.corpus):,} documents for {', '.join(retrievers)} "
        f"(cache {quality_cache}: a configuration it lacks is encoded in full)",
        flush=True,
    )
    res = benchmark(
        ds,
        retrievers,
        metrics=[NDCG],
        baseline="torch-float32",
        cache_dir=quality_cache,
        latency_queries=5,
        warmup_queries=1,
        show_progress=sys.stderr.isatty(),
    )
    if res.failures:
        raise SystemExit(f"failed: {res.failures}")
    cos = mean_cosines(ds, quality_cache, {n: o for n, o in configs.items() if n in judged}, args.threads)
    n_docs, n_q = len(ds.corpus), len(ds.queries)

    rows = []
    for name in [*configs, *(r for r in retrievers if r not in configs)]:
        eff = res.efficiency.get(name, {})
        sp = speed.get(name, {})
        doc_secs = sp.get("wall", 0.0)
        sig = res.significance.get(name, {}).get(NDCG)
        dim = 384
        rows.append(
            {
                "name": name,
                "dtype": sp.get("dtype"),
                "docs_per_s": sp.get("docs", 0) / doc_secs if doc_secs > 0 else None,
                "encode_seconds": doc_secs,
                "cpu_seconds": sp.get("cpu"),
                "setup_seconds": sp.get("setup"),
                NDCG: res.summary.get(name, {}).get(NDCG),
                "delta": None if sig is None else sig.get("delta"),
                "p_holm": None if sig is None else sig.get("p_holm"),
                "mean_cos": cos.get(name),
                "index_bytes": eff.get("index_bytes", 4 * n_docs * dim),
                "rescore_bytes": eff.get("rescore_bytes", 0),
                "ann_recall": eff.get(f"ann_recall@{min(100, n_docs)}"),
            }
        )
    base = rows[0]
    timed = speed["torch-float32"]["docs"]
    print(f"\n{ds.name}: {n_docs} documents ({timed} timed), {n_q} queries; baseline torch-float32\n")
    print(
        "| configuration | computes | docs/s | vs float32 | CPU s vs float32 | setup s | nDCG@10 | Δ nDCG@10 "
        "| p (Holm) | mean cos vs float32 | index MB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if r["name"].startswith("index-"):
            continue
        ratio = r["docs_per_s"] / base["docs_per_s"] if r["docs_per_s"] and base["docs_per_s"] else float("nan")
        cpu_ratio = base["cpu_seconds"] / r["cpu_seconds"] if r["cpu_seconds"] else float("nan")
        print(
            f"| {r['name']} | {r['dtype']} | {r['docs_per_s']:.1f} | {ratio:.2f}x | {cpu_ratio:.2f}x "
            f"| {r['setup_seconds']:.1f} | {_f(r[NDCG])} | "
            f"{_signed(r['delta'])} | {_p(r['p_holm'])} | {_f(r['mean_cos'])} | {r['index_bytes'] / 1e6:.2f} |"
        )
    if precisions:
        print(
            "\n| index precision | nDCG@10 | Δ nDCG@10 | p (Holm) | ann_recall@100 vs flat float32 | index MB "
            "| of float32 | float vectors for rescoring MB |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| float32 (flat) | {base[NDCG]:.4f} | – | – | 1.000 | {base['index_bytes'] / 1e6:.2f} | 1/1 | 0 |")
        for r in rows:
            if not r["name"].startswith("index-"):
                continue
            frac = base["index_bytes"] / r["index_bytes"]
            print(
                f"| {r['name'][6:]} | {r[NDCG]:.4f} | {_signed(r['delta'])} | {_p(r['p_holm'])} | "
                f"{r['ann_recall']:.3f} | {r['index_bytes'] / 1e6:.3f} | 1/{frac:.0f} "
                f"| {r['rescore_bytes'] / 1e6:.2f} |"
            )
    fast = [
        r
        for r in rows[1:]
        if not r["name"].startswith("index-") and r["delta"] is not None and abs(r["delta"]) <= 0.002
    ]
    if fast:
        best = max(fast, key=lambda r: r["docs_per_s"] or 0)
        print(
            f"\nfastest within 0.002 nDCG@10 of float32: {best['name']}, "
            f"{best['docs_per_s'] / base['docs_per_s']:.2f}x float32's docs/s"
        )
    if args.out:
        atomic.write_text(Path(args.out), json.dumps({"dataset": ds.name, "notes": notes, "rows": rows}, indent=1))
    return 0


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.4f}"


def _signed(v: float | None) -> str:
    return "–" if v is None else f"{v:+.4f}"


def _p(v: float | None) -> str:
    return "–" if v is None else f"{v:.3g}"


if __name__ == "__main__":
    raise SystemExit(main())
