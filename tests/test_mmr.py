"""harness.mmr.mmr_order: hand-computed cases, the lambda extremes, ties, and properties against a
slow reference written as plain loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import InputError
from harness.mmr import mmr_order


def sym(n: int, pairs: dict[tuple[int, int], float]) -> np.ndarray:
    s = np.eye(n)
    for (a, b), v in pairs.items():
        s[a, b] = s[b, a] = v
    return s


def reference_mmr(relevance, similarity, lambda_, k=None) -> list[int]:
    """MMR as the paper states it, with loops: max similarity over the already selected only."""
    n = len(relevance)
    k = n if k is None else min(k, n)
    selected: list[int] = []
    while len(selected) < k:
        best, best_value = -1, None
        for d in range(n):
            if d in selected:
                continue
            if not selected:
                value = float(relevance[d])
            else:
                penalty = max(float(similarity[d][s]) for s in selected)
                value = lambda_ * float(relevance[d]) - (1.0 - lambda_) * penalty
            if best_value is None or value > best_value:  # strict: the lower index keeps a tie
                best, best_value = d, value
        selected.append(best)
    return selected


# ---------------------------------------------------------------- hand-computed cases
# Case A: rel [0.9, 0.8, 0.7, 0.2], lambda 0.5; doc 1 near-duplicates doc 0, doc 3 near-duplicates doc 2.
#   pick 0 (highest relevance)
#   step 2: 1: .4 - .5*.9 = -.05   2: .35 - .5*.1 = .30   3: .1 - .5*0 = .10          -> 2
#   step 3: 1: max(.9, .2) = .9 -> -.05   3: max(0, .8) = .8 -> .1 - .4 = -.30        -> 1
#   then 3.                                                                           => [0, 2, 1, 3]
# Taking the max over all other documents (the tutorial's error) ties 1 and 2 at step 2 (-.05 each)
# and picks 1: [0, 1, 2, 3] is wrong.
CASE_A = (
    [0.9, 0.8, 0.7, 0.2],
    sym(4, {(0, 1): 0.9, (0, 2): 0.1, (0, 3): 0.0, (1, 2): 0.2, (1, 3): 0.1, (2, 3): 0.8}),
)

# Case B: rel [1, .9, .85, .5, .4], lambda 0.7 (gain .7 rel, penalty .3 max-sim)
#   pick 0
#   step 2: max-sim to {0} = [-, .95, .3, .2, .1]
#           1: .63 - .285 = .345   2: .595 - .09 = .505   3: .35 - .06 = .29   4: .28 - .03 = .25   -> 2
#   step 3: max-sim to {0, 2}: 1: .95 -> .345   3: max(.2, .6) = .6 -> .17   4: .1 -> .25          -> 1
#   step 4: max-sim to {0, 2, 1}: 3: .6 -> .17   4: max(.1, .2) = .2 -> .22                        -> 4
#   then 3.                                                                                       => [0, 2, 1, 4, 3]
# Using only the similarity to the last pick would give [0, 2, 1, 3, 4].
CASE_B = (
    [1.0, 0.9, 0.85, 0.5, 0.4],
    sym(
        5,
        {
            (0, 1): 0.95,
            (0, 2): 0.3,
            (0, 3): 0.2,
            (0, 4): 0.1,
            (1, 2): 0.35,
            (1, 3): 0.1,
            (1, 4): 0.2,
            (2, 3): 0.6,
            (2, 4): 0.05,
            (3, 4): 0.3,
        },
    ),
)


def test_hand_case_a_max_over_selected_only():
    rel, sim = CASE_A
    assert mmr_order(rel, sim, 0.5) == [0, 2, 1, 3]


def test_hand_case_b_penalty_is_max_over_the_whole_selection():
    rel, sim = CASE_B
    assert mmr_order(rel, sim, 0.7) == [0, 2, 1, 4, 3]


def test_k_below_n_is_the_greedy_prefix():
    rel, sim = CASE_B
    assert mmr_order(rel, sim, 0.7, k=3) == [0, 2, 1]
    assert mmr_order(rel, sim, 0.7, k=1) == [0]
    assert mmr_order(rel, sim, 0.7, k=0) == []


def test_k_none_or_above_n_returns_everything():
    rel, sim = CASE_B
    assert mmr_order(rel, sim, 0.7, k=None) == mmr_order(rel, sim, 0.7, k=99) == [0, 2, 1, 4, 3]


def test_lambda_one_is_relevance_order_stable():
    rel = [0.3, 0.9, 0.3, 0.9, 0.1]
    sim = np.ones((5, 5))  # all duplicates: would matter for any lambda < 1
    assert mmr_order(rel, sim, 1.0) == [1, 3, 0, 2, 4]


def test_lambda_zero_is_pure_novelty_after_the_first_pick():
    # first pick is the most relevant (1); afterwards relevance is ignored:
    # step 2: max-sim to {1}: 0: .5, 2: .1, 3: .4 -> 2 (least similar) although 0 is far more relevant
    # step 3: max-sim to {1, 2}: 0: max(.5, .3) = .5, 3: max(.4, .2) = .4 -> 3; then 0
    rel = [0.8, 0.9, 0.05, 0.01]
    sim = sym(4, {(0, 1): 0.5, (1, 2): 0.1, (1, 3): 0.4, (0, 2): 0.3, (2, 3): 0.2, (0, 3): 0.0})
    assert mmr_order(rel, sim, 0.0) == [1, 2, 3, 0]


def test_first_pick_tie_goes_to_the_better_rank():
    assert mmr_order([0.3, 0.9, 0.9], np.zeros((3, 3)), 0.5)[0] == 1


def test_objective_tie_goes_to_the_better_rank():
    # lambda .5, first pick 0; doc 1: .25 - .5*0 = .25; doc 2: .375 - .5*.25 = .25 (exact in binary):
    # equal objectives, the better-ranked doc 1 wins although doc 2 is more relevant
    rel = [1.0, 0.5, 0.75]
    sim = sym(3, {(0, 1): 0.0, (0, 2): 0.25, (1, 2): 0.0})
    assert mmr_order(rel, sim, 0.5) == [0, 1, 2]


def test_all_equal_keeps_the_original_order():
    assert mmr_order([0.5] * 4, np.zeros((4, 4)), 0.3) == [0, 1, 2, 3]


def test_penalty_reads_similarity_to_selected_documents():
    # similarity[i, s] is the similarity of candidate i to selected s; the diagonal is never read
    sim = np.array([[99.0, 0.0, 0.0], [0.9, 99.0, 0.0], [0.1, 0.0, 99.0]])
    assert mmr_order([1.0, 0.6, 0.5], sim, 0.5) == [0, 2, 1]


def test_accepts_lists_and_float32_and_empty():
    rel, sim = CASE_A
    assert mmr_order(np.float32(rel), np.asarray(sim, dtype=np.float32), 0.5) == [0, 2, 1, 3]
    assert mmr_order([], np.zeros((0, 0)), 0.5) == []


@pytest.mark.parametrize(
    ("rel", "sim", "lam", "k", "match"),
    [
        ([[0.1, 0.2]], np.zeros((2, 2)), 0.5, None, "1-D"),
        ([0.1, 0.2], np.zeros((2, 3)), 0.5, None, "shape"),
        ([0.1, float("nan")], np.zeros((2, 2)), 0.5, None, "non-finite"),
        ([0.1, 0.2], np.array([[0, np.inf], [0, 0]]), 0.5, None, r"non-finite value at \[0, 1\]"),
        ([0.1, 0.2], np.zeros((2, 2)), 1.5, None, "lambda"),
        ([0.1, 0.2], np.zeros((2, 2)), -0.1, None, "lambda"),
        ([0.1, 0.2], np.zeros((2, 2)), float("nan"), None, "lambda"),
        ([0.1, 0.2], np.zeros((2, 2)), 0.5, -1, "k must be >= 0"),
        ([0.1, 0.2], np.zeros((2, 2)), 0.5, 1.5, "k must be an integer"),
        (["a", "b"], np.zeros((2, 2)), 0.5, None, "numeric"),
    ],
)
def test_bad_input_is_a_clear_value_error(rel, sim, lam, k, match):
    with pytest.raises(InputError, match=match) as info:
        mmr_order(rel, sim, lam, k)
    assert isinstance(info.value, ValueError)


# ---------------------------------------------------------------- properties
@st.composite
def mmr_inputs(draw, grid: bool = False):
    """Random relevance, (not necessarily symmetric) similarity, lambda and k.

    ``grid`` draws values from a coarse grid so exact ties happen often (tie-breaking is exercised);
    otherwise continuous values. Both sides compute the same float expression, so results are equal
    exactly, ties included.
    """
    n = draw(st.integers(0, 12))
    if grid:
        value = st.integers(0, 4).map(lambda x: x / 4)
        lam = draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
    else:
        value = st.floats(-1, 1, allow_nan=False, width=64)
        lam = draw(st.floats(0, 1, allow_nan=False))
    rel = np.array(draw(st.lists(value, min_size=n, max_size=n)), dtype=np.float64)
    sim = np.array(draw(st.lists(value, min_size=n * n, max_size=n * n)), dtype=np.float64).reshape(n, n)
    k = draw(st.one_of(st.none(), st.integers(0, n + 2)))
    return rel, sim, lam, k


@settings(max_examples=300, deadline=None)
@given(mmr_inputs())
def test_matches_reference_on_random_inputs(args):
    rel, sim, lam, k = args
    assert mmr_order(rel, sim, lam, k) == reference_mmr(rel, sim, lam, k)


@settings(max_examples=300, deadline=None)
@given(mmr_inputs(grid=True))
def test_matches_reference_with_many_ties(args):
    rel, sim, lam, k = args
    assert mmr_order(rel, sim, lam, k) == reference_mmr(rel, sim, lam, k)


@settings(max_examples=200, deadline=None)
@given(mmr_inputs())
def test_output_is_a_prefix_of_a_permutation(args):
    rel, sim, lam, k = args
    n = len(rel)
    out = mmr_order(rel, sim, lam, k)
    assert len(out) == (n if k is None else min(k, n))
    assert len(set(out)) == len(out) and all(0 <= i < n for i in out)
    assert all(isinstance(i, int) for i in out)
    assert sorted(mmr_order(rel, sim, lam)) == list(range(n))
    assert out == mmr_order(rel, sim, lam)[: len(out)]  # greedy: k only stops early
    if n:
        assert out[:1] in ([], [int(np.argmax(rel))])


@settings(max_examples=200, deadline=None)
@given(mmr_inputs(grid=True))
def test_lambda_one_is_the_stable_relevance_order(args):
    rel, sim, _, k = args
    expected = sorted(range(len(rel)), key=lambda i: -rel[i])  # sorted() is stable
    assert mmr_order(rel, sim, 1.0, k) == expected[: len(mmr_order(rel, sim, 1.0, k))]


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_each_pick_maximises_the_objective(n, seed):
    """Objective-value check on embedding-shaped inputs (cosine similarities of random unit vectors)."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(n, 8))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    sim = e @ e.T
    rel = rng.random(n)
    lam = float(rng.random())
    out = mmr_order(rel, sim, lam)
    for step in range(1, n):
        chosen = out[:step]
        rest = [d for d in range(n) if d not in chosen]
        values = {d: lam * rel[d] - (1 - lam) * max(sim[d, s] for s in chosen) for d in rest}
        assert values[out[step]] == pytest.approx(max(values.values()), abs=1e-12)
