"""Adapters: BM25, dense (FAISS), hybrid fusion, cross-encoder rerank, MMR, and a team's own retriever."""
