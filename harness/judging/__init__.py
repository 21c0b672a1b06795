"""Growing a golden set where the retrievers disagree: pool the unjudged documents of stored runs
(:mod:`~harness.judging.pool`), grade them on a local page (:mod:`~harness.judging.server`), and
merge the grades into a new qrels file (:mod:`~harness.judging.merge`). docs/judging.md."""
