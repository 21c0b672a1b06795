"""A result, in one place: the data, its results folder, and every rendering of it.

- :mod:`~harness.results.data`: :class:`Results` (per-query scores, means, statistics; ``results.json``);
- :mod:`~harness.results.store`, :mod:`~harness.results.folder`, :mod:`~harness.results.integrity`:
  the results folder, written as each run finishes (the engine hands it runs and costs), owned,
  replaced as one step, and read only when whole;
- :mod:`~harness.results.render` and the modules beside it: the comparison table (markdown, csv,
  html, latex, terminal), plots, judged@10 coverage, slices by tag, the per-query drill-down, and a
  suite's table through the same renderers.
- :mod:`~harness.results.page`: ``report.html``, the page a reviewer opens (table, plots, per-query
  differences, the query explorer).

- :mod:`~harness.results.manifest`: :class:`Manifest`, a typed view over ``results.json``'s manifest;
- :mod:`~harness.results.record`: :class:`RunRecord`, ``runs/<stem>.json`` (one reader, one rule);
- :mod:`~harness.results.suite`: :class:`SuiteResults`, ``suite.json`` (a suite's datasets together).

``Results.open(DIR)`` reads a folder as every command does (load and integrity check);
``Results.open(DIR).table()`` is the folder's ``table.md``; ``.save(DIR)`` writes a folder;
``.to_dataframe()`` converts. This layer sits above the statistics and below the engine
(docs/architecture.md).
"""

from harness.results.data import SCHEMA, SCHEMA_VERSION, Comparison, Results, is_results_file, upgrade_v1
from harness.results.manifest import Manifest
from harness.results.record import RunRecord
from harness.results.suite import SuiteResults

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Comparison",
    "Manifest",
    "Results",
    "RunRecord",
    "SuiteResults",
    "is_results_file",
    "upgrade_v1",
]
