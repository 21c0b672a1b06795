"""harness.stats.agreement.tau_ap with ties, and the rank_agreement ``judge agree`` and ``synth bias`` share
(harness.judging.agree): ties handled as Urbano and Marrero define them (tau_AP_a: the mean over every
order of the estimate's ties; tau_AP_b where the reference ties), undefined (None) where a side is
constant, and never dependent on the order the retrievers are listed in (a config's order)."""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.judging.agree import rank_agreement
from harness.stats.agreement import tau_ap


def plain_tau_ap(ref, order) -> float:
    """Yilmaz et al.'s tau_AP of a full order (system indices, top first) against tie-free ``ref``."""
    n = len(order)
    total = sum(sum(ref[order[j]] > ref[order[i]] for j in range(i)) / i for i in range(1, n))
    return 2 * total / (n - 1) - 1


def test_without_ties_it_is_yilmaz_tau_ap_hand_computed():
    assert tau_ap([4, 3, 2, 1], [4, 3, 2, 1]) == 1.0 and tau_ap([4, 3, 2, 1], [1, 2, 3, 4]) == -1.0
    # estimate a, c, b, d against reference a, b, c, d: C = 1/1, 1/2, 3/3 -> 2/3 * 2.5 - 1
    assert tau_ap([4, 3, 2, 1], [4, 2, 3, 1]) == pytest.approx(2 / 3)


def test_estimate_ties_give_the_mean_over_every_order_of_the_tie():
    rng = np.random.default_rng(0)
    for _ in range(150):
        n = int(rng.integers(3, 7))
        ref = rng.permutation(n).astype(float)
        est = rng.integers(0, 3, n).astype(float)
        if np.unique(est).size == 1:
            continue
        orders = [o for o in permutations(range(n)) if all(est[o[i]] >= est[o[i + 1]] for i in range(n - 1))]
        assert tau_ap(ref, est) == pytest.approx(np.mean([plain_tau_ap(ref, o) for o in orders]), abs=1e-12)


def test_reference_ties_give_tau_ap_b():
    # b and c tie in the reference: tau_AP_b averages both directions, each walking the other's ties
    x, y = [3, 2, 2, 1], [4, 3, 2, 1]
    # t(x, y): y's order a, b, c, d; b: a above in x -> 1/1; c: a yes, b no (tie) -> 1/2; d: 3/3
    # t(y, x): x's groups a | b c | d; b, c: a above in y -> 1/1 each; d: 3/3
    assert tau_ap(x, y) == pytest.approx(((2 / 3 * 2.5 - 1) + (2 / 3 * 3 - 1)) / 2)


def test_a_constant_side_is_undefined_as_tau_is():
    human, synthetic = [0.8378, 0.8399, 0.8504], [0.0, 0.0, 0.0]
    assert rank_agreement(human, synthetic) == (None, None)
    assert rank_agreement(human[::-1], synthetic) == (None, None)
    assert math.isnan(tau_ap([1.0], [1.0]))


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=7),
    st.randoms(use_true_random=False),
)
def test_never_depends_on_the_order_of_the_systems(pairs, rnd):
    ref, est = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    _, t_ap = rank_agreement(ref, est)
    _, t_ap2 = rank_agreement([ref[i] for i in order], [est[i] for i in order])
    assert (t_ap is None) == (t_ap2 is None)
    if t_ap is not None:
        assert t_ap == pytest.approx(t_ap2, abs=1e-12) and -1 - 1e-12 <= t_ap <= 1 + 1e-12


def test_partial_tie_of_the_fault_report_is_one_figure():
    # the same three retrievers listed in two orders (a config's order)
    assert rank_agreement([0.5, 0.6, 0.7], [0.9, 0.9, 0.8]) == rank_agreement([0.6, 0.5, 0.7], [0.9, 0.9, 0.8])
