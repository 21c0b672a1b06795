"""Vector databases as retrievers: one shared adapter (:mod:`retrievers.vectordb.base`) and one small
driver per engine (``lancedb``, ``chroma``, ``qdrant``, ``pgvector``).

The adapter embeds the corpus and the queries with the encoder and cache ``dense`` uses (a corpus is
embedded once for all of them), hands the vectors to the driver, and reports what the engine cost:
``build_seconds``, ``index_mb`` on disk, and ``ann_recall@k`` against exact (filtered) search over
the same embeddings. A driver only writes, connects, translates a metadata filter and searches, so
another engine (Milvus, Elasticsearch, OpenSearch) is one more module. docs/vector-databases.md.
"""
