"""Is the golden set fit to decide? A check-up of a dataset and, given, its results (``harness inspect``).

Every number the harness prints is exact for the golden set it is given and silent about the set
itself; this package looks at the set. One module per family of findings:

- :mod:`~harness.inspect.text`: the normalisation every comparison uses (NFKC, casefold, whitespace);
- :mod:`~harness.inspect.judgments`: grades, relevant documents per query, unjudged queries,
  queries judged only non-relevant, judged ids missing from the corpus;
- :mod:`~harness.inspect.duplicates`: exact duplicate queries and documents, groups judged differently;
- :mod:`~harness.inspect.near`: near-duplicate documents (MinHash + LSH candidates, verified exactly);
- :mod:`~harness.inspect.leakage`: queries copied out of a relevant document;
- :mod:`~harness.inspect.difficulty`: with results, queries at the ceiling, the floor, or tied;
- :mod:`~harness.inspect.findings`: the :class:`Inspection` and its verdict;
- :mod:`~harness.inspect.source`: what ``--dataset`` names, read and checked before any work;
- :mod:`~harness.inspect.render`, :mod:`~harness.inspect.plots`: text, markdown, JSON and PNGs.
"""

from harness.inspect.findings import Inspection, JudgedDifferently, inspect_dataset

__all__ = ["Inspection", "JudgedDifferently", "inspect_dataset"]
