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

from typing import Any

# imported on first use: a load client worker process (``python -m harness.load.httpclient``)
# imports this package, and must start in a fraction of a second, without the config and dataset
# layers behind ``run_load``
_EXPORTS = {
    "load_load_config": "harness.load.core",
    "run_load": "harness.load.core",
    "check_load_folder": "harness.load.render",
    "to_markdown": "harness.load.render",
    "to_text": "harness.load.render",
    "write_load": "harness.load.render",
    "CostSpec": "harness.load.spec",
    "LoadSpec": "harness.load.spec",
    "parse_search_params": "harness.load.spec",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness.load' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


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
