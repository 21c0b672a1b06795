"""``report.html`` of a large folder (issue 36): a synthetic dataset of ``--queries`` queries
(default 25,000) over ``--docs`` documents, three BM25 retrievers run by ``harness run`` (depth
100), the page written with its data in side files (``report-data/*.js``), then opened from
``file://`` in headless Chromium with the network off.

Prints the page and side-file sizes, the time ``harness run`` spent writing the page, the time until
the explorer is ready, the browser's JSHeapUsedSize (DevTools ``Performance.getMetrics``, after a
garbage collection) once loaded, after sorting by another metric, and after opening a query, and
checks that no request failed.

    python benchmarks/report_page.py                       # 25,000 queries
    python benchmarks/report_page.py --queries 2000 --docs 20000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the DevTools client the page's tests use

WORDS = [f"w{i}" for i in range(3000)]


def write_dataset(folder: Path, queries: int, docs: int, seed: int = 0) -> Path:
    """A BEIR folder: documents of 40 words drawn from 3,000, queries of 4 words taken from one
    document each, that document judged 2 and two random others 0 or 1."""
    rng = random.Random(seed)
    (folder / "qrels").mkdir(parents=True)
    texts = [[rng.choice(WORDS) for _ in range(40)] for _ in range(docs)]
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"_id": f"d{i}", "title": " ".join(t[:6]), "text": " ".join(t)}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as qf, (folder / "qrels" / "test.tsv").open("w") as rf:
        rf.write("query-id\tcorpus-id\tscore\n")
        for q in range(queries):
            d = rng.randrange(docs)
            words = rng.sample(texts[d], 4)
            qf.write(json.dumps({"_id": f"q{q}", "text": " ".join(words), "metadata": {"tags": [f"t{q % 5}"]}}) + "\n")
            rf.write(f"q{q}\td{d}\t2\n")
            for other in {rng.randrange(docs) for _ in range(2)} - {d}:
                rf.write(f"q{q}\td{other}\t{rng.randrange(2)}\n")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=25_000)
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--keep", metavar="DIR", help="build the folder here and keep it")
    args = ap.parse_args()

    from page_browser import Browser, settle

    from harness.cli import main as harness

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report-page-"))
    data = write_dataset(root / "data", args.queries, args.docs)
    cfg = root / "run.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(data))}}}\nmetrics: [ndcg@10, recall@100, mrr@10]\ndepth: 100\n"
        "latency_queries: 0\nwarmup_queries: 0\nbaseline: bm25\nstats: {permutations: 1000, bootstrap: 200}\n"
        "retrievers:\n  bm25: {type: bm25}\n  bm25_k2: {type: bm25, k1: 2.0, b: 0.9}\n"
        "  bm25_b0: {type: bm25, k1: 1.2, b: 0.1}\n"
    )
    out = root / "res"
    t0 = time.perf_counter()
    assert harness(["run", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 0
    run_s = time.perf_counter() - t0
    from harness.report.page.render import write_report_page
    from harness.results import Results

    t0 = time.perf_counter()
    write_report_page(Results.load(out), out, diff_plots=False)
    page_s = time.perf_counter() - t0
    side = sorted((out / "report-data").glob("*.js"))
    print(f"{args.queries:,} queries x 3 retrievers, {args.docs:,} documents")
    print(f"harness run (everything): {run_s:.1f} s; report.html and side files again: {page_s:.1f} s")
    print(f"report.html {(out / 'report.html').stat().st_size / 1e6:.2f} MB; "
          f"{len(side)} side files, {sum(p.stat().st_size for p in side) / 1e6:.1f} MB")  # fmt: skip

    with Browser() as b:
        t0 = time.perf_counter()
        b.open((out / "report.html").resolve().as_uri())
        ready_s = time.perf_counter() - t0
        failed = b.failed()
        heap = [b.heap_used()]
        b.eval(
            "(() => { const s = document.getElementById('metric'); s.value = 'mrr@10'; "
            "s.dispatchEvent(new Event('change')); })()"
        )
        heap.append(b.heap_used())
        b.eval("document.querySelector('#queries tbody tr').click()")
        settle(0.3)
        opened = b.eval("document.getElementById('detail').dataset.qid")
        heap.append(b.heap_used())
        rows = b.eval("document.querySelectorAll('#queries tbody tr').length")
        print(f"chromium: explorer ready after {ready_s:.1f} s; failed requests: {len(failed)}; rows drawn: {rows}; "
              f"opened {opened}")  # fmt: skip
        print(
            "JSHeapUsedSize: loaded {:.0f} MB, re-sorted {:.0f} MB, query open {:.0f} MB".format(
                *(h / 1e6 for h in heap)
            )
        )
        assert not failed and opened


if __name__ == "__main__":
    main()
