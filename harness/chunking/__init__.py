"""Chunking as a library: named chunkers, chunked corpora with parent ids and character spans (cached
on disk), relevance that survives re-chunking, and the document-level view of a chunk ranking.

```python
from harness.chunking import chunk_corpus, collapse_to_documents, make_chunker

chunked = chunk_corpus(dataset.corpus, make_chunker({"method": "tokens", "size": 128, "overlap": 32}))
chunks, parent_ids, spans = chunked
doc_run = collapse_to_documents(chunk_run, chunked, doc_ids=dataset.doc_ids)
```
"""

from harness.chunking.chunkers import Chunker, load_tokenizer, make_chunker
from harness.chunking.corpus import ChunkedCorpus, cache_key, chunk_corpus, chunk_id, corpus_hash, token_counts
from harness.chunking.relevance import (
    answer_qrels,
    chunk_dataset,
    chunk_level_qrels,
    chunk_qrels,
    collapse_to_documents,
    context_covers,
)
from harness.chunking.spec import METHODS, ChunkSpec, parse_chunking

__all__ = [
    "METHODS",
    "ChunkSpec",
    "ChunkedCorpus",
    "Chunker",
    "answer_qrels",
    "cache_key",
    "chunk_corpus",
    "chunk_dataset",
    "chunk_id",
    "chunk_level_qrels",
    "chunk_qrels",
    "collapse_to_documents",
    "context_covers",
    "corpus_hash",
    "load_tokenizer",
    "make_chunker",
    "parse_chunking",
    "token_counts",
]
