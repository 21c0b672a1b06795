"""Serving under load: throughput and tail latency at each concurrency, recall against QPS, cost.

- :mod:`~harness.load.drivers`: the closed loop (N clients in flight) and the open loop (Poisson
  arrivals, latency from the scheduled send: no coordinated omission), exact percentiles;
- :mod:`~harness.load.targets`: a retriever in this process (threads) or an HTTP service (a pooled
  client), and the probe that says whether threads run in parallel or take turns on the GIL;
- :mod:`~harness.load.frontier`: search-time settings of an ANN index, recall@10 against exact
  search, nDCG@10 and QPS, the Pareto front;
- :mod:`~harness.load.cost`: dollars per million queries, per index build, per corpus embedding;
- :mod:`~harness.load.spec`: the ``load:`` and ``cost:`` config sections;
- :mod:`~harness.load.core` runs it all, :mod:`~harness.load.render` writes ``load.json``, ``load.md``
  and the plots. docs/load.md has the model and how to read the figures.
"""

from harness.load.core import load_load_config, run_load
from harness.load.render import check_load_folder, to_markdown, to_text, write_load
from harness.load.spec import CostSpec, LoadSpec, parse_search_params

__all__ = [
    "CostSpec",
    "LoadSpec",
    "check_load_folder",
    "load_load_config",
    "parse_search_params",
    "run_load",
    "to_markdown",
    "to_text",
    "write_load",
]
