"""Memory-saving shapes of the evaluation's data give the same values as the plain ones: per-query
floats shared by value (``float_list``), a Run that adopts its reader's arrays, and the readers'
object-dtype id indexes (pandas 3 would infer arrow strings)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.score import float_list
from harness.io.trec_columnar import codes_in, object_index
from harness.run import PAD, Run


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 1.0, 0.5, 1 / 3, math.nan, math.inf]), min_size=0, max_size=50),
    st.lists(st.floats(allow_nan=True), max_size=30),
    st.integers(0, 3000),
)
def test_float_list_is_tolist_bit_for_bit(few, any_floats, repeat):
    v = np.array((few * (repeat // max(1, len(few)) + 1))[:repeat] + any_floats, dtype=np.float64)
    got, want = float_list(v), v.tolist()
    assert len(got) == len(want)
    assert all(type(x) is float for x in got)
    assert [_bits(x) for x in got] == [_bits(x) for x in want]


def test_float_list_shares_equal_values():
    v = np.tile([0.0, 0.2, 1.0], 2000)
    out = float_list(v)
    assert out == v.tolist() and out[0] is out[3] and len({id(x) for x in out}) == 3


def test_adopted_arrays_are_kept_and_padded_in_place():
    idx = np.array([[2, 0, -5], [1, -1, -1]], dtype=np.int64)
    sc = np.array([[3.0, 2.0, 7.0], [1.0, 9.0, 9.0]])
    plain = Run(["a", "b"], ["x", "y", "z"], idx.copy(), sc.copy(), canonical=True)
    adopted = Run(["a", "b"], ["x", "y", "z"], idx, sc, canonical=True, adopt=True)
    assert adopted.indices is idx and adopted.scores is sc
    assert np.array_equal(adopted.indices, plain.indices) and np.array_equal(adopted.scores, plain.scores)
    assert (adopted.indices[0, 2], adopted.scores[0, 2]) == (PAD, -np.inf)
    assert adopted.to_dict() == plain.to_dict()


def test_id_index_stays_object_and_codes_follow_first_appearance():
    index = object_index([], pd)
    codes, index = codes_in(np.array(["q2", "q1", "q2"], dtype=object), index, pd)
    codes2, index = codes_in(np.array(["q3", "q1", "nan", ""], dtype=object), index, pd)
    assert index.dtype == object
    assert codes.tolist() == [0, 1, 0] and codes2.tolist() == [2, 1, 3, 4]
    assert index.tolist() == ["q2", "q1", "q3", "nan", ""]
