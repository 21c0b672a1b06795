"""Statistics over per-query scores: paired tests, Holm correction, bootstrap intervals, and
:func:`compare`, which applies them to a whole comparison table."""

from harness.stats.compare import compare
from harness.stats.tests import (
    bootstrap_ci,
    bootstrap_cis,
    bootstrap_means,
    holm,
    randomization_test,
    randomization_tests,
    t_lower_bound,
    t_test,
    t_tests,
    win_tie_loss,
)

__all__ = [
    "bootstrap_ci",
    "bootstrap_cis",
    "bootstrap_means",
    "compare",
    "holm",
    "randomization_test",
    "randomization_tests",
    "t_lower_bound",
    "t_test",
    "t_tests",
    "win_tie_loss",
]
