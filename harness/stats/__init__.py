"""Statistics over per-query scores: paired tests, Holm correction, bootstrap intervals."""

from harness.stats.tests import bootstrap_ci, holm, randomization_test, randomization_tests, t_test, win_tie_loss

__all__ = ["bootstrap_ci", "holm", "randomization_test", "randomization_tests", "t_test", "win_tie_loss"]
