"""``report.html`` of a large folder: a synthetic dataset of ``--queries`` queries
(default 25,000) over ``--docs`` documents, three synthetic rankings of depth 100 (the judged
document at a random rank, or missed), scored with the harness's metrics and statistics, written as
a results folder whose page keeps its data in side files (``report-data/*.js``); then opened from
``file://`` in headless Chromium with the network off.

Prints the page and side-file sizes, the time to write the page, the time until the explorer is
ready, the browser's JSHeapUsedSize (DevTools ``Performance.getMetrics``, after a garbage
collection) once loaded, after switching the metric (a re-sort of every query), and after opening
a query, and checks that no request failed. (The rankings are synthetic because ranking 25,000
queries is not what is measured here.)

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
# the DevTools client the page's tests use (tests/page_browser.py, which imports `tests.…`: the
# checkout root too, since an editable install no longer puts it on the path)
sys.path[:0] = [str(REPO / "tests"), str(REPO)]

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


def write_folder(data: Path, out: Path, queries: int, docs: int, seed: int = 0) -> Path:
    """A results folder (``runs/``, ``qrels.tsv``, ``results.json``) of three synthetic rankings."""
    import numpy as np

    from harness.engine.score import score
    from harness.io import atomic
    from harness.io.beir import load_beir
    from harness.io.trec import write_qrels, write_run
    from harness.run import Run

    ds = load_beir(data, "test")
    qids = [q.id for q in ds.queries]
    rng = np.random.default_rng(seed)
    doc_ids = np.asarray(ds.doc_ids, dtype=object)
    relevant = np.asarray([ds.doc_index[next(d for d, g in ds.qrels[q].items() if g == 2)] for q in qids])
    runs = {}
    for name in ("bm25", "bm25_k2", "bm25_b0"):
        idx = rng.integers(0, docs, size=(queries, 100))
        rank = rng.integers(0, 140, size=queries)  # 100 or more: the relevant document is missed
        hit = rank < 100
        idx[np.flatnonzero(hit), rank[hit]] = relevant[hit]
        scores = np.broadcast_to(np.linspace(100.0, 1.0, 100), idx.shape)
        runs[name] = Run(qids, doc_ids, idx, scores, name=name)
    tags = {q.id: list(q.metadata.get("tags", [])) for q in ds.queries}
    manifest = {"dataset": {"name": "synthetic", "split": "test", "source": str(data), "queries": queries}}
    manifest["config"] = {"baseline": "bm25", "depth": 100}
    results = score(runs, ds.qrels, ["ndcg@10", "recall@100", "mrr@10"], baseline="bm25",
                    stats={"permutations": 1000, "bootstrap": 200}, manifest=manifest, query_tags=tags)  # fmt: skip
    (out / "runs").mkdir(parents=True)
    for name, run in runs.items():
        write_run(out / "runs" / f"{name}.trec", run)
    write_qrels(out / "qrels.tsv", ds.qrels)
    atomic.write_json(out / "results.json", results.to_json())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=25_000)
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--keep", metavar="DIR", help="build the folder here and keep it")
    args = ap.parse_args()

    from page_browser import Browser, settle

    from harness.results import Results
    from harness.results.drilldown import attach_folder
    from harness.results.page.render import write_report_page

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report-page-"))
    data = write_dataset(root / "data", args.queries, args.docs)
    out = write_folder(data, root / "res", args.queries, args.docs)
    t0 = time.perf_counter()
    write_report_page(attach_folder(Results.load(out)), out)
    page_s = time.perf_counter() - t0
    side = sorted((out / "report-data").glob("*.js"))
    print(f"{args.queries:,} queries x 3 retrievers, {args.docs:,} documents")
    print(f"report.html, per-query plots and side files written in {page_s:.1f} s")
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
