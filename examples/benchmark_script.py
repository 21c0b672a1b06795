"""The comparison of ``own_retriever.yaml``, from a Python script instead of a config file.

``harness.benchmark`` runs the engine ``harness run`` runs, so the numbers are the same. Start the
HTTP twin first (``python examples/serve_my_retriever.py``), then::

    python examples/benchmark_script.py --out results/own-retriever-script
"""

from __future__ import annotations

import argparse
from pathlib import Path

from my_retriever import TfidfRetriever

from harness import benchmark

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/search", help="the HTTP twin's endpoint")
    parser.add_argument("--out", help="results folder to write (the layout of harness run --out)")
    args = parser.parse_args()

    results = benchmark(
        "demo",
        retrievers={
            "bm25": {"type": "bm25"},  # a config spec, exactly as in YAML
            "tfidf": TfidfRetriever(sublinear_tf=True),  # an object: no config, no import path
            "tfidf_http": {"type": "http", "url": args.url, "timeout_s": 10},
            "tfidf_run_file": {"type": "run_file", "path": str(HERE / "runs" / "tfidf.trec")},
        },
        metrics=["ndcg@10", "mrr@10", "recall@20", "map@20"],
        depth=20,
        baseline="bm25",
        show_progress=False,
    )
    print(results.table())  # markdown, as table.md
    frame = results.to_dataframe()  # retrievers x metrics (pandas)
    print(frame.round(4).to_string())
    per_query = results.to_dataframe(per_query=True)  # retriever, query_id, metric, value
    worst = per_query[per_query.metric == "ndcg@10"].nsmallest(3, "value")
    print("\nlowest nDCG@10 queries:\n" + worst.to_string(index=False))
    if results.failures:
        print(f"\nfailed: {results.failures}")
    if args.out:
        print(f"\nwritten to {results.save(args.out)}")


if __name__ == "__main__":
    main()
