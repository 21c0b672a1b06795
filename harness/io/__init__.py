"""Loaders and writers at the edge: BEIR folders, TREC qrels and runs, atomic files."""
