"""The ColBERT row against the library on a whole BEIR set: does ``type: colbert`` rank every query
as ``MultiVectorEncoder.similarity`` does, as a full ranking over the corpus and as a rerank of
BM25's top 100, and is its nDCG@10 pytrec_eval's over the library's ranking (to 1e-9)?

    python benchmarks/colbert_exact.py --dataset ../shared/data/scifact            # the tests' tiny model
    python benchmarks/colbert_exact.py --model DIR --dataset ../shared/data/scifact   # a ColBERT folder

``--model``: a MultiVectorEncoder folder; left out, the tiny random ColBERT the slow test builds
(tests/learned_models.py ``build_tiny_colbert``, seed 0), so the test (a SciFact subset) and this
benchmark (the whole set) check one rule with one model. Nothing is downloaded. The rows run with
``precision: float32`` (float16, the default store, changes scores by design).

The harness computes as the library does (docs/sparse.md: the library's encoding batches, float32
products by torch, float32 sums in its order), so the rankings are to be identical for every query,
position for position, and the scores equal. The output counts the identical rankings, the largest
difference of a returned score from the library's and, where a ranking differs, the largest
difference of the library's own scores of two documents ordered otherwise (how near a tie it was).
Exit 1 unless every ranking is identical and nDCG@10 agrees to 1e-9.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    from benchmarks.sparse_exact import exact_flags

    a = exact_flags(__doc__, "a MultiVectorEncoder folder (default: the tests' tiny model)", model_required=False)

    import pytrec_eval

    import harness
    from harness.datasets import load_dataset
    from retrievers.colbert import load_multivector
    from tests.learned_models import build_tiny_colbert
    from tests.test_colbert import canonical

    ds = load_dataset(a.dataset, split=a.split)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = a.model or str(build_tiny_colbert(Path(tmp) / "model"))
        rows = {
            "bm25": {"type": "bm25"},
            "colbert": {"type": "colbert", "model": model_dir, "precision": "float32"},
            "bm25_colbert": {"type": "colbert", "model": model_dir, "of": "bm25", "top_n": a.depth},
        }
        rows["bm25_colbert"]["precision"] = "float32"
        t0 = time.perf_counter()
        res = harness.benchmark(ds, rows, metrics=["ndcg@10"], depth=a.depth, cache_dir=Path(tmp) / "cache",
                                latency_queries=3, warmup_queries=0)  # fmt: skip
        t_harness = time.perf_counter() - t0
        model = load_multivector(str(Path(model_dir).resolve()))
        t0 = time.perf_counter()
        sims = model.similarity(
            model.encode_query([q.text for q in ds.queries], batch_size=32),
            model.encode_document(list(ds.corpus.contents("")), batch_size=32),
        ).numpy()
        t_direct = time.perf_counter() - t0

    ids = ds.corpus.ids.tolist()
    want: dict[str, dict[str, list[str]]] = {"colbert": {}, "bm25_colbert": {}}
    same = dict.fromkeys(want, 0)
    worst = dict.fromkeys(want, 0.0)
    drift = dict.fromkeys(want, 0.0)
    for i, q in enumerate(ds.queries):
        score = dict(zip(ids, sims[i].tolist()))
        cand = [d for d, _ in res.runs["bm25"][q.id]]
        want["colbert"][q.id] = canonical(ids, sims[i], a.depth)
        want["bm25_colbert"][q.id] = canonical(cand, np.array([score[d] for d in cand]), a.depth)
        for row in want:
            got = [d for d, _ in res.runs[row][q.id]]
            drift[row] = max([drift[row], *(abs(sc - score[d]) for d, sc in res.runs[row][q.id])])
            if got == want[row][q.id]:
                same[row] += 1
                continue
            gaps = [abs(score[x] - score.get(y, np.inf)) for x, y in zip(got, want[row][q.id]) if x != y]
            worst[row] = max([worst[row], *gaps])
    ev = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in ds.qrels.items()}, {"ndcg_cut_10"})
    print(f"{a.dataset} ({a.split}): {len(ids):,} documents, {len(ds.queries)} queries; model {a.model or 'tiny'}")
    ok = True
    for row, label in (("colbert", "full ranking"), ("bm25_colbert", f"rerank of BM25's top {a.depth}")):
        run = {q: {d: float(len(r) - j) for j, d in enumerate(r)} for q, r in want[row].items()}
        ref = float(np.mean([v["ndcg_cut_10"] for v in ev.evaluate(run).values()]))
        got = res.summary[row]["ndcg@10"]
        print(
            f"{label}: identical top {a.depth} for {same[row]} of {len(ds.queries)} queries; where not, the library's "
            f"own scores of documents ordered otherwise differ by at most {worst[row]:.2e}; "
            f"largest |score - library score| {drift[row]:.2e}; "
            f"nDCG@10 harness {got:.12f}, library (pytrec_eval) {ref:.12f}, |diff| {abs(got - ref):.2e}"
        )
        ok &= same[row] == len(ds.queries) and abs(got - ref) <= 1e-9
    print(f"wall: harness run (bm25 + both rows) {t_harness:.1f} s, library encode + similarity {t_direct:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
