"""``harness stream`` on SciFact: all six built-in engines through 5 steps of inserts, deletes and updates.

Half of the corpus is loaded, then each step inserts 5% of it, deletes 1% and updates 1% (relevant
documents among them), each followed by a checkpoint, then the engines' own maintenance (``settle``)
and a last checkpoint. Printed: per engine, the gap between the engine and an exact index of the same
visible documents (nDCG@10, largest over the checkpoints), ghost and stale hits over all probes, time
to retrievable (p50 and p99, largest over the checkpoints), and the write rate (mean over the steps);
then the ratio of the bm25 write (a rebuild over the visible documents) to raw ``bm25s`` indexing the
same documents, timed in the same run, 5 rounds A B A B (the median and the range). The folder is
written under a temporary directory unless --out.

    python benchmarks/stream_scifact.py [--data ../shared/data/scifact] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

CONFIG = """dataset: {{path: {data}, split: test}}
metrics: [ndcg@10, recall@100]
depth: 100
retrievers:
  bm25: {{type: bm25}}
  dense: {{type: dense, index: hnsw}}
  lancedb: {{type: lancedb, index: hnsw}}
  chroma: {{type: chroma}}
  qdrant: {{type: qdrant}}
  pgvector: {{type: pgvector, index: hnsw}}
stream: {{seed: 0, initial: 0.5, steps: 5, insert: 0.05, delete: 0.01, update: 0.01, probes: 20, k: 10}}
"""


def _max(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def _fmt(v: float | None, f: str = ".3f") -> str:
    return "–" if v is None else format(v, f)


def table(doc: dict) -> str:
    rows = ["| engine | nDCG@10 last | exact last | largest gap | ghost hits | stale hits | retrievable p50 / p99 s "
            "| never | writes/s |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, rec in doc["retrievers"].items():
        cps = rec["checkpoints"]
        gaps = [
            c["exact"]["ndcg@10"] - c["metrics"]["ndcg@10"]
            for c in cps
            if c["exact"]["ndcg@10"] is not None and c["metrics"]["ndcg@10"] is not None
        ]
        ghost = f"{sum(c['ghost_hits']['hits'] for c in cps)}/{sum(c['ghost_hits']['probes'] for c in cps)}"
        stale = f"{sum(c['stale_hits']['hits'] for c in cps)}/{sum(c['stale_hits']['probes'] for c in cps)}"
        p50 = _max([c["retrievable_s"]["p50"] for c in cps])
        p99 = _max([c["retrievable_s"]["p99"] for c in cps])
        never = _max([c["retrievable_s"]["never"] for c in cps])
        rates = [c["write_rate"] for c in cps if c["write_rate"] is not None]
        rows.append(
            f"| {name} | {_fmt(cps[-1]['metrics']['ndcg@10'])} | {_fmt(cps[-1]['exact']['ndcg@10'])} "
            f"| {_fmt(max(gaps) if gaps else None, '+.3f')} | {ghost} | {stale} "
            f"| {_fmt(p50, '.2f')} / {_fmt(p99, '.2f')} "
            f"| {_fmt(never, '.0%')} | {_fmt(float(np.mean(rates)) if rates else None, '.0f')} |"
        )
    return "\n".join(rows) + "\n"


def rebuild_seconds(data: Path, ids: list[str], rounds: int = 5) -> tuple[list[float], list[float]]:
    """The harness's bm25 write (a rebuild over ``ids``' documents, through the adapter) and raw
    bm25s tokenizing and indexing the same documents, timed here ``rounds`` times each, A B A B: one
    sample of each, first call first, read 1.95 where repeats read 0.89 to 1.11 (the first call pays
    for warming the stemmer and the allocator)."""
    import bm25s
    import Stemmer

    from harness.datasets import load_dataset
    from retrievers.bm25 import BM25

    ds = load_dataset(str(data), "test")
    docs = [ds.corpus[ds.doc_index[i]] for i in ids]
    texts = [d.content for d in docs]
    ours, raw = [], []
    for _ in range(rounds):
        adapter = BM25(show_progress=False)
        adapter.index(docs[:1])
        t0 = time.perf_counter()
        adapter.add(docs[1:])
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        stem = Stemmer.Stemmer("english")
        tok = bm25s.tokenize(texts, stopwords="en", stemmer=stem, return_ids=True, show_progress=False)
        bm25s.BM25(k1=0.9, b=0.4).index(tok, show_progress=False)
        raw.append(time.perf_counter() - t0)
    return ours, raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--out", help="the stream's results folder (default: a temporary one)")
    a = ap.parse_args()
    import json

    from harness.stream import Op, StreamOptions, Visible, run_stream, to_text

    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "stream.yaml"
        cfg.write_text(CONFIG.format(data=Path(a.data).resolve()))
        out = Path(a.out) if a.out else Path(tmp) / "out"
        t0 = time.perf_counter()
        doc = run_stream(StreamOptions(config=cfg, out=out))
        wall = time.perf_counter() - t0
        print(to_text(doc))
        print(table(doc.to_json()))
        vis = Visible()
        for line in (out / "runbook.jsonl").read_text().splitlines():
            row = json.loads(line)
            if row["op"] in ("insert", "delete", "update"):
                vis.apply(Op(row["op"], tuple(row["ids"])))
        ours, raw = rebuild_seconds(Path(a.data), sorted(vis.versions))
        ratios = sorted(o / r for o, r in zip(ours, raw))
        print(f"bm25 write = rebuild over the {len(vis.versions)} visible documents, {len(ours)} rounds A B A B: "
              f"harness median {statistics.median(ours):.3f} s, raw bm25s median {statistics.median(raw):.3f} s, "
              f"ratio median {statistics.median(ratios):.2f} (range {ratios[0]:.2f} to {ratios[-1]:.2f})")  # fmt: skip
        print(f"wall {wall:.0f} s")


if __name__ == "__main__":
    main()
