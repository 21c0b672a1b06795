"""Applications that train models for the adapters (not adapters themselves): :mod:`.reranker`
fine-tunes a cross-encoder for ``harness train-reranker``. It sits above the adapters and the
datasets layer (it mines negatives with BM25 and dense, and validates with the metrics)."""
