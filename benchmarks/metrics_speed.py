"""Metric evaluation speed: harness (dict path and array path) against pytrec_eval and ranx, in one process.

Synthetic data: ``--queries`` queries x ``--depth`` retrieved docs each, drawn from a 1M-doc corpus; every
query has 1-20 judged docs (grades -1..3), about half of them retrieved so no metric is trivially 0. Scores
are continuous random float64 values, each row sorted as a retriever returns it (``--row-order shuffled``:
in random order; sorting costs every tool more then, pytrec_eval's qsort most). Exact ties are improbable,
but at 100k queries a few pairs of scores are equal as float32, which is how trec_eval compares them (ours
too; ranx compares float64), so ranx's means may differ from the others' in the 8th decimal; the agreement
is printed as a check.

Five metrics, mapped to each tool's names: ndcg@10 (ndcg_cut.10), mrr (recip_rank), recall@100 (recall.100),
precision@5 (P.5), map (map).

What is timed (best of ``--repeat``):
- pytrec_eval: ``RelevanceEvaluator(qrels, measures)`` (build) and ``.evaluate(run)``, separately and together.
- ranx: ``Qrels(dict)`` + ``Run(dict)`` construction and ``evaluate``; numba compiles ranx's kernels on first
  use, so they are warmed up on a small input first (not timed).
- harness dict path: ``harness.evaluate(qrels_dict, run_dict, metrics)``, everything included.
- harness array path: ``CompiledQrels(qrels_dict)`` (compiled once, shared by every run: reported
  separately), ``Run(query_ids, doc_ids, indices, scores)`` from the retriever-shaped arrays (sorts into
  canonical order), and ``evaluate_run`` (its first call also maps the corpus vocabulary onto the judged
  docs, cached per vocabulary: reported separately, and summed with ``Run`` as "Run + evaluate_run, 1st").
  The grade lookup is direct addressing (each judged document's one judging query, a binary search only
  for documents several queries judge) and the core takes the judged hits as sparse triples, so no pass
  over every rank of every query is spent on documents nobody judged.

Usage: python benchmarks/metrics_speed.py [--queries 100000 50000] [--depth 100] [--repeat 1] [--seed 0]
       [--row-order sorted|shuffled]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from harness import evaluate
from harness.metrics.evaluate import CompiledQrels, evaluate_run
from harness.run import Run

METRICS = ["ndcg@10", "mrr", "recall@100", "precision@5", "map"]
TREC = {"ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "recall@100": "recall_100", "precision@5": "P_5", "map": "map"}
TREC_MEASURES = {"ndcg_cut.10", "recip_rank", "recall.100", "P.5", "map"}
RANX = {"ndcg@10": "ndcg@10", "mrr": "mrr", "recall@100": "recall@100", "precision@5": "precision@5", "map": "map"}
CORPUS = 1_000_000


def make_data(n_queries: int, depth: int, seed: int, row_order: str = "sorted") -> dict[str, Any]:
    """Arrays (the array path's input) and the equivalent dicts (pytrec_eval / ranx / dict path input)."""
    rng = np.random.default_rng(seed)
    doc_ids = np.array([f"d{i}" for i in range(CORPUS)], dtype=object)
    query_ids = [f"q{i}" for i in range(n_queries)]
    # distinct docs per query: a random offset plus a random stride over the corpus
    start = rng.integers(0, CORPUS, size=(n_queries, 1))
    stride = rng.integers(1, 1000, size=(n_queries, 1))
    indices = (start + stride * np.arange(depth)[None, :]) % CORPUS
    scores = rng.random((n_queries, depth))
    if row_order == "sorted":  # rows by score, as a retriever returns them
        scores = -np.sort(-scores, axis=1)
    n_judged = rng.integers(1, 21, size=n_queries)
    qrels: dict[str, dict[str, int]] = {}
    doc_list = doc_ids.tolist()
    for i, q in enumerate(query_ids):
        n = int(n_judged[i])
        n_ret = min(depth, n // 2 + 1)
        picked = rng.choice(depth, size=n_ret, replace=False)
        judged = [doc_list[j] for j in indices[i, picked].tolist()]
        judged += [doc_list[j] for j in rng.integers(0, CORPUS, size=n - n_ret).tolist()]
        grades = rng.integers(-1, 4, size=len(judged)).tolist()
        qrels[q] = dict(zip(judged, grades))
    run = {
        q: dict(zip([doc_list[j] for j in idx], sc)) for q, idx, sc in zip(query_ids, indices.tolist(), scores.tolist())
    }
    return {
        "doc_ids": doc_ids,
        "query_ids": query_ids,
        "indices": indices,
        "scores": scores,
        "qrels": qrels,
        "run": run,
    }


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench(
    n_queries: int, depth: int, repeat: int, seed: int, row_order: str = "sorted"
) -> list[tuple[str, float, float | None]]:
    import pytrec_eval

    print(f"\n== {n_queries:,} queries x {depth} docs ({row_order} rows), {', '.join(METRICS)}, best of {repeat}")
    t0 = time.perf_counter()
    data = make_data(n_queries, depth, seed, row_order)
    print(f"(data generated in {time.perf_counter() - t0:.1f} s)")
    qrels, run = data["qrels"], data["run"]
    rows: list[tuple[str, float, float | None]] = []

    # pytrec_eval
    t_build, ev = best_of(repeat, lambda: pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES))
    t_eval, trec = best_of(repeat, lambda: ev.evaluate(run))
    ev = None  # free its copy of the judgments
    t_trec = t_build + t_eval
    trec_means = {m: float(np.mean([trec[q][TREC[m]] for q in trec])) for m in METRICS}
    trec = None

    # harness dict path
    t_dict, dict_means = best_of(repeat, lambda: evaluate(qrels, run, METRICS))

    # harness array path
    t_compile, cq = best_of(repeat, lambda: CompiledQrels(qrels))
    t_run, arr_run = best_of(repeat, lambda: Run(data["query_ids"], data["doc_ids"], data["indices"], data["scores"]))
    # the first call maps the run's doc-id vocabulary (the 1M-doc corpus) onto the judged docs; the map is
    # cached per vocabulary, so every later run over the same corpus skips it
    t_cold, _ = best_of(1, lambda: evaluate_run(cq, arr_run, METRICS))
    t_arr, arr_ev = best_of(repeat, lambda: evaluate_run(cq, arr_run, METRICS))
    arr_means = arr_ev.means()

    rows += [
        ("pytrec_eval build (RelevanceEvaluator)", t_build, None),
        ("pytrec_eval evaluate", t_eval, None),
        ("pytrec_eval build + evaluate", t_trec, t_trec),
        ("harness dict path: evaluate(dicts)", t_dict, t_trec),
        ("harness array path: CompiledQrels (once)", t_compile, None),
        ("harness array path: Run from arrays", t_run, None),
        ("harness array path: evaluate_run, 1st call", t_cold, t_trec),
        ("harness array path: evaluate_run", t_arr, t_trec),
        ("harness array path: Run + evaluate_run", t_run + t_arr, t_trec),
        ("harness array path: Run + evaluate_run, 1st", t_run + t_cold, t_trec),
        ("harness array path: all, 1st call", t_compile + t_run + t_cold, t_trec),
    ]
    cq = arr_run = arr_ev = None

    # ranx (optional: reported when installed)
    ranx_means = None
    try:
        import ranx
    except ImportError:
        print("(ranx not installed: skipped)")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_ranx_build, (rq, rr) = best_of(repeat, lambda: (ranx.Qrels(qrels), ranx.Run(run)))
            t_ranx_eval, ranx_res = best_of(
                repeat, lambda: ranx.evaluate(rq, rr, list(RANX.values()), save_results_in_run=False)
            )
        ranx_means = {m: float(ranx_res[RANX[m]]) for m in METRICS}
        rows += [
            ("ranx Qrels + Run construction", t_ranx_build, None),
            ("ranx evaluate", t_ranx_eval, None),
            ("ranx construction + evaluate", t_ranx_build + t_ranx_eval, t_trec),
        ]
        rq = rr = ranx_res = None

    print(f"\n{'step':<46}{'seconds':>10}{'vs pytrec_eval':>16}")
    for label, secs, ref in rows:
        ratio = f"{secs / ref:.3f}x" if ref else ""
        print(f"{label:<46}{secs:>10.3f}{ratio:>16}")
    print(
        f"\nacceptance: dict path / pytrec_eval (build+evaluate) = {t_dict / t_trec:.3f} (want <= 1.0); "
        f"pytrec_eval (build+evaluate) / array path: Run + evaluate_run {t_trec / (t_run + t_arr):.1f}x, "
        f"evaluate_run alone {t_trec / t_arr:.1f}x, Run + evaluate_run on a new vocabulary "
        f"{t_trec / (t_run + t_cold):.1f}x, everything on the 1st call (with CompiledQrels) "
        f"{t_trec / (t_compile + t_run + t_cold):.1f}x (want >= 5)"
    )
    diffs = {
        "dict path": max(abs(dict_means[m] - trec_means[m]) for m in METRICS),
        "array path": max(abs(arr_means[m] - trec_means[m]) for m in METRICS),
    }
    if ranx_means is not None:
        diffs["ranx"] = max(abs(ranx_means[m] - trec_means[m]) for m in METRICS)
    print("max |mean - pytrec_eval mean| over the five metrics: " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    return rows


def warm_up_ranx() -> None:
    """Compile ranx's numba kernels (cached on disk after the first run) outside the timings."""
    try:
        import ranx
    except ImportError:
        return
    t0 = time.perf_counter()
    data = make_data(20, 10, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(ranx.Qrels(data["qrels"]), ranx.Run(data["run"]), list(RANX.values()))
    print(f"(ranx numba warm-up on 20 queries x 10 docs: {time.perf_counter() - t0:.1f} s, not timed)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, nargs="+", default=[100_000, 50_000], help="one or more query counts")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1, help="take the best of N timings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--row-order", choices=["sorted", "shuffled"], default="sorted", help="docs within a ranking")
    args = ap.parse_args(argv)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, cpus {os.cpu_count()}")
    warm_up_ranx()
    for n in args.queries:
        bench(n, args.depth, args.repeat, args.seed, args.row_order)


if __name__ == "__main__":
    main()
