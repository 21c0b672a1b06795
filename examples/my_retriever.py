"""A team's own retriever: TF-IDF with cosine similarity, in plain Python.

It imports nothing from the harness. The harness only needs two methods:

- ``index(corpus)``: ``corpus`` is a list of documents, each with ``.id``, ``.text`` and ``.title``;
- ``search(queries, k)``: ``queries`` is a list of queries, each with ``.id`` and ``.text``; return
  ``{query_id: [(doc_id, score), ...]}`` with at most ``k`` pairs per query, higher score = better.

Run it on its own to write a TREC run file (what you would hand over from another system)::

    python examples/my_retriever.py --corpus datasets/demo/corpus.jsonl \\
        --queries datasets/demo/queries.jsonl --k 20 --out examples/runs/tfidf.trec
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import re
from collections import Counter, defaultdict
from types import SimpleNamespace

TOKEN = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
STOP_WORDS_TEXT = """a an and are as at be by can do does for from how i in is it my of on or the this to what
when which why with you your"""
STOP_WORDS = frozenset(STOP_WORDS_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens (keeping model numbers such as ``kx-200`` whole), without stop words."""
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class TfidfRetriever:
    """TF-IDF vectors (smoothed idf, optionally sublinear tf) ranked by cosine similarity."""

    name = "tfidf"

    def __init__(self, sublinear_tf: bool = True) -> None:
        self.sublinear_tf = sublinear_tf
        self.doc_ids: list[str] = []
        self.idf: dict[str, float] = {}
        self.postings: dict[str, list[tuple[int, float]]] = {}  # term -> [(doc position, weight)]
        self.norms: list[float] = []

    def _tf(self, count: int) -> float:
        return 1.0 + math.log(count) if self.sublinear_tf else float(count)

    def index(self, corpus) -> None:
        counts = [Counter(tokenize(f"{getattr(doc, 'title', '')} {doc.text}")) for doc in corpus]
        self.doc_ids = [doc.id for doc in corpus]
        df = Counter(term for c in counts for term in c)
        n = len(counts)
        self.idf = {term: math.log((1 + n) / (1 + d)) + 1.0 for term, d in df.items()}
        postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.norms = []
        for pos, c in enumerate(counts):
            weights = {term: self._tf(tf) * self.idf[term] for term, tf in sorted(c.items())}
            for term, w in weights.items():
                postings[term].append((pos, w))
            self.norms.append(math.sqrt(sum(w * w for w in weights.values())) or 1.0)
        self.postings = dict(postings)

    def search(self, queries, k: int) -> dict[str, list[tuple[str, float]]]:
        return {q.id: self._search_one(q.text, k) for q in queries}

    def _search_one(self, text: str, k: int) -> list[tuple[str, float]]:
        q = {t: self._tf(c) * self.idf[t] for t, c in sorted(Counter(tokenize(text)).items()) if t in self.idf}
        q_norm = math.sqrt(sum(w * w for w in q.values())) or 1.0
        scores: dict[int, float] = defaultdict(float)
        for term, qw in q.items():
            for pos, dw in self.postings[term]:
                scores[pos] += qw * dw
        cosine = [(self.doc_ids[pos], s / (self.norms[pos] * q_norm)) for pos, s in scores.items()]
        return heapq.nlargest(k, cosine, key=lambda pair: (pair[1], pair[0]))


def read_jsonl(path: str) -> list[SimpleNamespace]:
    """Documents or queries from a BEIR-style JSON-lines file (``_id``, ``text``, optional ``title``)."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [SimpleNamespace(id=r["_id"], text=r.get("text", ""), title=r.get("title", "")) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a TREC run file of the TF-IDF retriever.")
    parser.add_argument("--corpus", required=True, help="corpus.jsonl")
    parser.add_argument("--queries", required=True, help="queries.jsonl")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--out", required=True, help="TREC run file to write")
    args = parser.parse_args()
    retriever = TfidfRetriever()
    retriever.index(read_jsonl(args.corpus))
    results = retriever.search(read_jsonl(args.queries), args.k)
    with open(args.out, "w", encoding="utf-8") as f:
        for qid, ranking in results.items():
            for rank, (doc_id, score) in enumerate(ranking, start=1):
                f.write(f"{qid} Q0 {doc_id} {rank} {score!r} tfidf\n")


if __name__ == "__main__":
    main()
