"""Every default value of a run, in one place (the bottom layer, so every module may read it).

A config that leaves a key out, a :func:`harness.benchmark` call that leaves an argument out, a CLI
flag left out and a library function called with its defaults all get these values, so a run built
any of those ways resolves to the same config. (What bare ``harness run`` runs, a whole preset
config, is :func:`harness.presets.default_config`.)
"""

from __future__ import annotations

#: the dataset and split when none is named
DATASET = "demo"
SPLIT = "test"
#: metrics scored when none are named
METRICS = ("ndcg@10", "mrr@10", "recall@100", "hit_rate@5", "precision@5", "map@100")
#: metrics scored when nuggets are given without qrels and none are named (docs/nuggets.md)
NUGGET_METRICS = ("nugget_strict_vital@10", "nugget_vital@10", "nugget_all@10", "nugget_assessed@10")
#: k asked of every retriever
DEPTH = 100
#: one seed for every random choice
SEED = 0
#: queries timed one at a time for latency percentiles, and untimed warm-up queries before them
LATENCY_QUERIES = 100
WARMUP_QUERIES = 5
#: a node that runs longer than this (build + index + search) is failed, so a hanging retriever
#: never holds a nightly job forever; ``timeout_s`` in the config changes it
TIMEOUT_S = 6 * 3600.0
#: statistics against the baseline: bootstrap resamples, randomization-test sign flips, alpha
BOOTSTRAP = 1000
PERMUTATIONS = 10000
ALPHA = 0.05
#: where embedding and score caches live (``$HARNESS_CACHE_DIR`` overrides it)
CACHE_DIR = "~/.cache/retrieval-harness"
