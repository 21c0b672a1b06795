"""Growing a golden set where the retrievers disagree: pool the unjudged documents of stored runs
(:mod:`~harness.judging.pool`), grade them on a local page (:mod:`~harness.judging.server`, which
:mod:`~harness.judging.guard` keeps to its own page and :mod:`~harness.judging.lock` to one server
per pool), and merge the grades into a new qrels file (:mod:`~harness.judging.merge`). Grades are
read everywhere by :func:`harness.io.grades.parse_grade`.

Automatic judges, checked against people: a judge fills a pool (:mod:`~harness.judging.auto`, with
an OpenAI-compatible endpoint in :mod:`~harness.judging.llm` asked UMBRELA's prompt,
:mod:`~harness.judging.umbrela`, or a local cross-encoder, :mod:`~harness.judging.crossenc`);
:mod:`~harness.judging.agree` measures it against people; :mod:`~harness.judging.sample` draws the
queries people grade in full and :mod:`~harness.judging.ppi` turns both into prediction-powered
intervals; :mod:`~harness.judging.order` sets the page's order. docs/judging.md."""
