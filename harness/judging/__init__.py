"""Growing a golden set where the retrievers disagree: pool the unjudged documents of stored runs
(:mod:`~harness.judging.pool`), grade them on a local page (:mod:`~harness.judging.server`, which
:mod:`~harness.judging.guard` keeps to its own page and :mod:`~harness.judging.lock` to one server
per pool), and merge the grades into a new qrels file (:mod:`~harness.judging.merge`). Grades are
read everywhere by :func:`harness.io.grades.parse_grade`.

Automatic judges, checked against people: a judge (:class:`Judge`, a ``name`` and ``grade(pairs)``;
the registry in :mod:`~harness.judging.judge`) fills a pool through one fill loop
(:mod:`~harness.judging.auto`): an OpenAI-compatible endpoint asked UMBRELA's prompt
(:mod:`~harness.judging.umbrela`, over the client of :mod:`harness.endpoint`), a local cross-encoder
(:mod:`~harness.judging.crossenc`), a plugin or a team's own class;
:mod:`~harness.judging.agree` measures it against people; :mod:`~harness.judging.sample` draws the
queries people grade in full and :mod:`~harness.judging.ppi` turns both into prediction-powered
intervals; :mod:`~harness.judging.order` sets the page's order. Judges that say how sure they
are (:mod:`~harness.judging.probabilities`) let :mod:`~harness.judging.active_sample` draw the queries
people grade where the judge is unsure, :mod:`~harness.judging.active` estimate from that sample, and
:mod:`~harness.judging.status` say when to stop. docs/judging.md."""

from harness.judging.judge import Judge, Pair

__all__ = ["Judge", "Pair"]
