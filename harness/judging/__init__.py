"""Growing a golden set where the retrievers disagree: pool the unjudged documents of stored runs
(:mod:`~harness.judging.pool`), grade them on a local page (:mod:`~harness.judging.server`, which
:mod:`~harness.judging.guard` keeps to its own page and :mod:`~harness.judging.lock` to one server
per pool), and merge the grades into a new qrels file (:mod:`~harness.judging.merge`). Grades are
read everywhere by :func:`harness.io.grades.parse_grade`. docs/judging.md."""
