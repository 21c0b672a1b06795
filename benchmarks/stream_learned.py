"""What the stream's exact reference costs for a written ``colbert`` row: at every checkpoint
``harness stream`` builds the same spec fresh over the visible documents
(``harness.stream.engines.exact_reference``). A ColBERT store is keyed by its whole corpus, so that
corpus is new each time; the rows of documents a store or segment of this process already holds are
copied instead of encoded (``retrievers.colbert.known_rows``). This prints both, A B A B, in one
process.

    nice python benchmarks/stream_learned.py                 # the demo dataset (187 documents)
    nice python benchmarks/stream_learned.py --scifact 1000  # the first 1,000 SciFact documents

The model is the ColBERT-shaped MiniLM of benchmarks/sparse_table.py (token vectors, a random
128-wide projection): the encoding cost is a real transformer's. The row is indexed over the first
half of the documents, then written as a stream step writes (20% inserted, 2% deleted, 2% updated
with one line appended); the reference is built over what it holds then.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sparse_table import DATA, colbert_shaped  # noqa: E402

import retrievers.colbert as cb  # noqa: E402
from harness.datasets import load_dataset  # noqa: E402
from harness.registry import BuildContext, spec_class  # noqa: E402
from harness.stream.engines import StreamedRetriever, exact_reference  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scifact", type=int, default=None, help="the first N SciFact documents instead of demo")
    ap.add_argument("--colbert-dir", type=Path, default=Path(tempfile.gettempdir()) / "harness-colbert-minilm")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    if args.scifact:
        docs = list(load_dataset(str(DATA / "scifact"), "test").corpus)[: args.scifact]
        name = f"SciFact, first {len(docs):,} documents"
    else:
        docs = list(load_dataset("demo").corpus)
        name = f"demo, {len(docs)} documents"
    model = colbert_shaped(args.colbert_dir)
    spec = spec_class("colbert").model_validate({"type": "colbert", "model": str(model)})
    with tempfile.TemporaryDirectory() as tmp:
        ctx = BuildContext(cache_dir=Path(tmp) / "row", show_progress=False)
        engine = StreamedRetriever("colbert", spec, spec.build(ctx))
        n = len(docs)
        held = {d.id: d for d in docs[: n // 2]}
        engine.index(list(held.values()))
        inserted = docs[n // 2 : n // 2 + n // 5]
        engine.write("insert", inserted)
        held.update((d.id, d) for d in inserted)
        gone = list(held)[: max(1, n // 50)]
        engine.write("delete", [held.pop(i) for i in gone])
        updated = [d.model_copy(update={"text": d.text + "\nRevision 1 of this document."})
                   for d in list(held.values())[: max(1, n // 50)]]  # fmt: skip
        engine.write("update", updated)
        held.update((d.id, d) for d in updated)
        visible = list(held.values())
        times: dict[str, list[float]] = {"copied": [], "encoded": []}
        for r in range(args.repeats):
            for mode in ("encoded", "copied"):
                cb.COPY_KNOWN_ROWS = mode == "copied"
                rctx = BuildContext(cache_dir=Path(tmp) / f"ref-{mode}-{r}", show_progress=False)
                t0 = time.perf_counter()
                ref = exact_reference(engine, rctx, visible)
                times[mode].append(time.perf_counter() - t0)
                ref.close()
        cb.COPY_KNOWN_ROWS = True
    enc, cop = statistics.median(times["encoded"]), statistics.median(times["copied"])
    print(f"{name}; exact reference over {len(visible)} visible documents (median of {args.repeats}):")
    print(f"  every document encoded   {enc:8.2f} s")
    print(f"  rows copied (this row's) {cop:8.2f} s   ratio encoded/copied {enc / cop:.1f}x")


if __name__ == "__main__":
    main()
