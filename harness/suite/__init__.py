"""Suites: many datasets, one table (docs/suites.md).

A suite runs every retriever on every dataset of a ``datasets:`` mapping, each into its own
complete results folder ``DIR/<dataset>/`` (so every single-dataset tool works on it), then
aggregates the folders into ``DIR/suite.json`` and the suite table. It is a layer above the
single-dataset run, not a change to it: each dataset goes through the same entry point a
one-dataset run uses, so a dataset's numbers in a suite equal a run of that dataset alone.

- :mod:`~harness.suite.plan`: the config's ``datasets:`` as one config per dataset;
- :mod:`~harness.suite.run`: each dataset in turn into ``DIR/<dataset>/`` (resumable per dataset);
- :mod:`~harness.suite.aggregate`: the per-dataset results brought together as a
  :class:`~harness.results.SuiteResults` (``suite.json``): their means, mean, mean rank, tests;
- :mod:`~harness.results.suite_table`: the suite table (terminal, markdown, CSV, HTML, LaTeX);
- :mod:`~harness.suite.check`: ``harness check`` of two suites, one verdict naming the datasets.
"""

from harness.results.suite import SUITE_FILE, SuiteResults, is_suite
from harness.suite.aggregate import aggregate
from harness.suite.plan import plan_suite
from harness.suite.run import run_suite

__all__ = ["SUITE_FILE", "SuiteResults", "aggregate", "is_suite", "plan_suite", "run_suite"]
