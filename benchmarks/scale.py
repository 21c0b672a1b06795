"""Scale: the harness next to the raw libraries on a synthetic corpus, in one run.

The corpus is Zipf-sampled SciFact vocabulary (word ranks by SciFact frequency, P(rank r) ~ 1/r),
~150 tokens per document (Poisson), a 6-word title, 1k queries of 4-8 words drawn from one
document each (that document is the query's one relevant judgment); seeded, written once as a
BEIR folder under ``--work`` and reused.

Each measurement runs in its own subprocess, so its peak RSS (``os.wait4``'s ``ru_maxrss``) is its
own:

- ``bm25s``: raw bm25s: ``json.loads`` per corpus line, ``bm25s.tokenize`` (stop words en,
  PyStemmer english, token ids), ``BM25(k1=0.9, b=0.4, method="lucene").index``, ``retrieve``
  k=100 for the 1k queries;
- ``harness bm25``: ``python -m harness run`` with a config holding one ``bm25`` retriever with
  the same settings (defaults), on the same BEIR folder: load, validation, index, search,
  warm-up, latency loop, scoring, statistics, report;
- ``faiss``: raw faiss: ``np.load`` the same 100k x 384 float32 embeddings, ``IndexFlatIP.add``,
  search the 1k query embeddings, k=100;
- ``harness dense``: ``harness run`` with one ``dense`` retriever (flat) whose cache already holds
  those embeddings (documents and queries, written under the packaged model's cache key).

The embeddings are random unit vectors, not a model's: encoding 100k documents takes ~70 min on
2 cores, and what is measured here is what the harness adds around FAISS, not the model.

``python benchmarks/scale.py --docs 100000`` (and ``--docs 1000000``). Ratios are harness/raw.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
if not SCIFACT.is_dir():
    SCIFACT = Path("/work/shared/data/scifact")


# ---------------------------------------------------------------------- the synthetic corpus
def vocabulary() -> list[str]:
    counts: Counter[str] = Counter()
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            counts.update(re.findall(r"[a-z]{2,}", (obj.get("title", "") + " " + obj["text"]).lower()))
    return [w for w, _ in counts.most_common()]


def generate(folder: Path, n_docs: int, n_queries: int = 1000, seed: int = 0, doc_len: int = 150) -> Path:
    """Write the BEIR folder (once per size and seed)."""
    done = folder / ".complete"
    if done.exists():
        return folder
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    words = np.array(vocabulary(), dtype=object)
    ranks = np.arange(1, len(words) + 1)
    p = 1.0 / ranks
    cdf = np.cumsum(p / p.sum())
    rng = np.random.default_rng(seed)
    query_docs = np.sort(rng.choice(n_docs, size=n_queries, replace=False))
    queries = []
    qi = 0
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        batch = 10_000
        for start in range(0, n_docs, batch):
            m = min(batch, n_docs - start)
            lengths = np.maximum(5, rng.poisson(doc_len, size=m))
            toks = np.searchsorted(cdf, rng.random(int(lengths.sum())))
            toks = np.minimum(toks, len(words) - 1)
            title_toks = np.minimum(np.searchsorted(cdf, rng.random(6 * m)), len(words) - 1)
            ends = np.cumsum(lengths)
            lines = []
            for j in range(m):
                doc = words[toks[ends[j] - lengths[j] : ends[j]]]
                doc_id = f"d{start + j}"
                lines.append(
                    json.dumps(
                        {"_id": doc_id, "title": " ".join(words[title_toks[6 * j : 6 * j + 6]]), "text": " ".join(doc)}
                    )
                )
                while qi < n_queries and query_docs[qi] == start + j:
                    qlen = int(rng.integers(4, 9))
                    picks = rng.choice(len(doc), size=min(qlen, len(doc)), replace=False)
                    queries.append((f"q{qi}", " ".join(doc[np.sort(picks)]), doc_id))
                    qi += 1
            out.write("\n".join(lines) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"_id": q, "text": t}) + "\n" for q, t, _ in queries)
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        out.writelines(f"{q}\t{d}\t1\n" for q, _, d in queries)
    done.touch()
    return folder


# ---------------------------------------------------------------------- one measurement per process
def measure(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``argv``; its wall time, peak RSS (this child only) and the JSON its last line printed."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env={**os.environ, **(env or {})}, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[:4]} failed ({code}):\n{stderr[-3000:]}")
    report = {}
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            report = json.loads(line)
            break
    return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024, **report}


RAW_BM25 = textwrap.dedent(
    """
    import json, sys, time
    import bm25s, Stemmer
    import numpy as np
    folder = sys.argv[1]
    t0 = time.perf_counter()
    texts = []
    with open(f"{folder}/corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            texts.append(f"{d['title']} {d['text']}" if d.get("title") else d["text"])
    queries = [json.loads(line)["text"] for line in open(f"{folder}/queries.jsonl", encoding="utf-8")]
    t1 = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    engine = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    engine.index(tokens, show_progress=False)
    del tokens
    t2 = time.perf_counter()
    qt = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    idx, scores = engine.retrieve(qt, k=100, show_progress=False)
    t3 = time.perf_counter()
    print(json.dumps({"load_s": t1 - t0, "index_s": t2 - t1, "search_s": t3 - t2}))
    """
)

#: ``harness run`` itself (its command-line entry point, in this one process), with a clock around each
#: phase of the session: load (the dataset read and checked), execute (index, batch search, the
#: latency loop and warm-up of each retriever), score (metrics and statistics), write (results.json,
#: the run files) and render (tables, plots, report.html). Only wrappers are added: the code timed is
#: the command's own. The efficiency columns split execute into index and batch search.
HARNESS_PHASES = textwrap.dedent(
    """
    import functools, json, sys, time
    t_start = time.perf_counter()
    import harness.engine.session as session
    import harness.results.render as render
    import harness.results.store as store
    from harness.cli import main
    phases = {}

    def clock(owner, name, phase):
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t0

        setattr(owner, name, timed)

    clock(session, "load_from_config", "load")
    clock(session, "load_dataset", "load")
    clock(session, "_execute", "execute")
    summarise = session._summarise

    def final_score(run, *, complete):  # the partial scoring after each row is part of execute
        t0 = time.perf_counter()
        try:
            return summarise(run, complete=complete)
        finally:
            if complete:
                phases["score"] = phases.get("score", 0.0) + time.perf_counter() - t0

    session._summarise = final_score
    clock(store.RunStore, "publish", "write")
    clock(render, "write_renderings", "render")
    code = main(["run", "--config", sys.argv[1], "--out", sys.argv[2], "--no-progress"])
    if code:
        sys.exit(code)
    phases["write"] = phases.get("write", 0.0) - phases.get("render", 0.0)  # publish includes the render
    phases["total"] = time.perf_counter() - t_start
    print(json.dumps({"phases": phases}))
    """
)

RAW_FAISS = textwrap.dedent(
    """
    import json, sys, time
    import faiss
    import numpy as np
    t0 = time.perf_counter()
    emb = np.load(sys.argv[1])
    q = np.load(sys.argv[2])
    t1 = time.perf_counter()
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    del emb
    t2 = time.perf_counter()
    index.search(q, 100)
    t3 = time.perf_counter()
    print(json.dumps({"load_s": t1 - t0, "index_s": t2 - t1, "search_s": t3 - t2}))
    """
)


def harness_run(config: dict, work: Path, name: str) -> dict:
    cfg = work / f"{name}.json"  # JSON is YAML
    cfg.write_text(json.dumps(config))
    out = work / f"out-{name}"
    if out.exists():
        import shutil

        shutil.rmtree(out)
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    m = measure([sys.executable, "-c", HARNESS_PHASES, str(cfg), str(out)], env)
    res = json.loads((out / "results.json").read_text())
    (retriever,) = config["retrievers"]
    eff = res.get("efficiency", {}).get(retriever, {})
    m["index_s"] = eff.get("index_seconds")
    m["search_s"] = eff.get("search_seconds")
    m["extra"] = {k: v for k, v in eff.items() if k not in ("index_seconds", "search_seconds")}
    m["summary"] = res.get("summary", {}).get(retriever)
    return m


def bm25_pair(folder: Path, work: Path) -> tuple[dict, dict]:
    raw = measure([sys.executable, "-c", RAW_BM25, str(folder)])
    config = {
        "dataset": {"path": str(folder), "split": "test"},
        "metrics": ["ndcg@10", "recall@100"],
        "cache_dir": str(work / "cache"),
        "retrievers": {"bm25": {"type": "bm25"}},
    }
    return raw, harness_run(config, work, f"bm25-{folder.name}")


def write_cached_embeddings(folder: Path, work: Path, dim: int = 384, seed: int = 0) -> tuple[Path, Path]:
    """Random unit vectors for every document and query, as ``.npy`` for raw faiss and in the
    harness's embedding cache under the packaged model's key (one subprocess: it loads the model
    once to learn the key; the benchmarked run then never needs it)."""
    emb_path, q_path = work / f"{folder.name}-docs.npy", work / f"{folder.name}-queries.npy"
    marker = work / f"{folder.name}-cache.done"
    if marker.exists():
        return emb_path, q_path
    script = textwrap.dedent(
        f"""
        import numpy as np
        from harness.io.beir import read_corpus, read_queries
        from harness.cache import text_key
        from retrievers.encoder import Encoder
        corpus = read_corpus({str(folder / "corpus.jsonl")!r})
        queries, _ = read_queries({str(folder / "queries.jsonl")!r})
        rng = np.random.default_rng({seed})
        def unit(n):
            x = rng.standard_normal((n, {dim})).astype(np.float32)
            return x / np.linalg.norm(x, axis=1, keepdims=True)
        emb, q = unit(len(corpus)), unit(len(queries))
        np.save({str(emb_path)!r}, emb)
        np.save({str(q_path)!r}, q)
        enc = Encoder(None, cache_dir={str(work / "cache")!r}, show_progress=False)
        assert enc.dim == {dim}
        keys = [text_key(t) for t in corpus.contents()]
        step = enc.cache.chunk_rows  # the chunks an encode would have written
        for s in range(0, len(keys), step):
            enc.cache.put(keys[s : s + step], emb[s : s + step])
        qkeys = [text_key(x.text) for x in queries]
        for s in range(0, len(qkeys), step):
            enc.cache.put(qkeys[s : s + step], q[s : s + step])
        """
    )
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    measure([sys.executable, "-c", script], env)
    marker.touch()
    return emb_path, q_path


def dense_pair(folder: Path, work: Path) -> tuple[dict, dict]:
    emb, q = write_cached_embeddings(folder, work)
    raw = measure([sys.executable, "-c", RAW_FAISS, str(emb), str(q)])
    config = {
        "dataset": {"path": str(folder), "split": "test"},
        "metrics": ["ndcg@10", "recall@100"],
        "cache_dir": str(work / "cache"),
        "retrievers": {"dense": {"type": "dense", "index": "flat"}},
    }
    return raw, harness_run(config, work, f"dense-{folder.name}")


# ---------------------------------------------------------------------- ANN defaults
def ann_sweep(docs: np.ndarray, queries: np.ndarray, k: int = 100, seed: int = 0) -> list[dict]:
    """ann_recall@k against exact search for HNSW and IVF settings, on real embeddings (the
    dense retriever's own recall formula)."""
    import faiss

    from retrievers.dense import ann_recall

    docs = np.ascontiguousarray(docs, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n, d = docs.shape
    _, exact = faiss.knn(queries, docs, k, metric=faiss.METRIC_INNER_PRODUCT)
    rows = []
    for m in (16, 32):
        for ef_c in (100, 200):
            index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_c
            t0 = time.perf_counter()
            index.add(docs)
            build = time.perf_counter() - t0
            for ef_s in (64, 128, 256):
                index.hnsw.efSearch = ef_s
                t0 = time.perf_counter()
                _, approx = index.search(queries, k)
                rows.append(
                    {
                        "index": "hnsw",
                        "M": m,
                        "ef_construction": ef_c,
                        "ef_search": ef_s,
                        f"ann_recall@{k}": ann_recall(approx, exact),
                        "build_s": build,
                        "search_s": time.perf_counter() - t0,
                    }
                )
    nlist = max(1, int(4 * np.sqrt(n)))
    quantizer = faiss.IndexFlatIP(d)
    ivf = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
    ivf.cp.seed = seed
    ivf.train(docs)
    ivf.add(docs)
    from retrievers.dense import default_nprobe

    auto = default_nprobe(n, nlist, k)
    for nprobe in sorted({8, 16, 32, 64, 128, auto}):
        ivf.nprobe = min(nprobe, nlist)
        t0 = time.perf_counter()
        _, approx = ivf.search(queries, k)
        rows.append(
            {
                "index": "ivf",
                "nlist": nlist,
                "nprobe": nprobe,
                "default": nprobe == auto,
                f"ann_recall@{k}": ann_recall(approx, exact),
                "search_s": time.perf_counter() - t0,
            }
        )
    return rows


# ---------------------------------------------------------------------- Ray
def ray_encode_throughput(n_docs: int = 10_000, script: Path | None = None) -> int:
    """Local vs Ray encoding throughput on the same ``n_docs`` seeded documents: runs
    ``benchmarks/ray_encode.py`` (which makes its own loopback-only network namespace for the cluster)
    with its output going straight to this terminal, so the hour it takes shows each phase as it
    starts; returns its exit code (a failure there is this script's failure, not a line in a table).
    A separate process, so this one's peak RSS figures stay its own."""
    script = script or Path(__file__).with_name("ray_encode.py")
    sys.stdout.flush()
    return subprocess.run([sys.executable, str(script), "--n", str(n_docs)], check=False).returncode


# ---------------------------------------------------------------------- report
def _fmt(x: float | None, unit: str = "") -> str:
    return "-" if x is None else f"{x:,.1f}{unit}"


def table(title: str, raw: dict, ours: dict) -> str:
    rows = [f"### {title}", "", "| | harness | raw | ratio |", "| --- | ---: | ---: | ---: |"]
    for key, label in (("wall_s", "total wall (s)"), ("peak_rss_mb", "peak RSS (MB)")):
        r, h = raw.get(key), ours.get(key)
        rows.append(f"| {label} | {_fmt(h)} | {_fmt(r)} | {h / r:.2f}x |")
    for key, label in (("load_s", "load (s)"), ("index_s", "index (s)"), ("search_s", "batch search (s)")):
        rows.append(f"| {label} | {_fmt(ours.get(key))} | {_fmt(raw.get(key))} | |")
    phases = ours.get("phases") or {}
    raw_index_search = (raw.get("index_s") or 0.0) + (raw.get("search_s") or 0.0)
    for key, label, ref in (
        ("load", "phase: load (dataset read and checked)", raw.get("load_s")),
        ("execute", "phase: execute (index, search, latency loop)", raw_index_search),
        ("score", "phase: score (metrics, statistics)", None),
        ("write", "phase: write (results.json, runs)", None),
        ("render", "phase: render (tables, plots, report.html)", None),
        ("total", "phase: total in the process (imports included)", None),
    ):
        if key in phases:
            rows.append(f"| {label} | {_fmt(phases[key])} | {_fmt(ref)} | |")
    rows.append("")
    rows.append(f"harness summary: {ours.get('summary')}; extra: {ours.get('extra')}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, nargs="+", default=[100_000], help="BM25 corpus sizes")
    ap.add_argument("--dense-docs", type=int, default=100_000, help="cached-embeddings corpus size (0: skip)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "harness-scale")
    ap.add_argument("--skip-bm25", action="store_true")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    ap.add_argument(
        "--ray-encode",
        type=int,
        default=0,
        metavar="N",
        help="also encode N synthetic docs locally and on a loopback Ray cluster (benchmarks/ray_encode.py; "
        "10000 takes about an hour on 2 cores)",
    )
    ap.add_argument(
        "--ann",
        nargs=2,
        type=Path,
        metavar=("DOCS.npy", "QUERIES.npy"),
        help="only sweep HNSW/IVF settings on these real embeddings (ann_recall@100 vs flat)",
    )
    args = ap.parse_args(argv)
    if args.ann:
        for row in ann_sweep(np.load(args.ann[0]), np.load(args.ann[1])):
            print(json.dumps(row), flush=True)
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, dict] = {}
    if not args.skip_bm25:
        for n in args.docs:
            folder = generate(args.work / f"synthetic-{n}-s{args.seed}", n, args.queries, args.seed)
            raw, ours = bm25_pair(folder, args.work)
            figures[f"bm25_{n}"] = {"raw_bm25s": raw, "harness": ours}
            print(table(f"BM25, {n:,} docs, {args.queries} queries", raw, ours), flush=True)
            print(flush=True)
    if args.dense_docs:
        n = args.dense_docs
        folder = generate(args.work / f"synthetic-{n}-s{args.seed}", n, args.queries, args.seed)
        raw, ours = dense_pair(folder, args.work)
        figures[f"dense_flat_{n}"] = {"raw_faiss": raw, "harness": ours}
        print(table(f"dense flat, {n:,} x 384 cached embeddings, {args.queries} queries", raw, ours), flush=True)
    if args.ray_encode:
        print(f"\n### local vs Ray encoding, {args.ray_encode:,} docs\n", flush=True)
        code = ray_encode_throughput(args.ray_encode)
        if code:
            print(f"scale.py: benchmarks/ray_encode.py exited {code}", file=sys.stderr)
            return code
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
