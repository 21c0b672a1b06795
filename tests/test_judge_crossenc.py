"""``harness judge auto --judge cross-encoder``: a real (tiny) local cross-encoder; thresholds given
or fitted on people's grades to maximise quadratic kappa."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import InputError
from harness.judging.crossenc import fit_thresholds, to_grades
from harness.judging.pool import PoolRow, read_pool, write_pool
from harness.stats.agreement import cohen_kappa, confusion
from tests.conftest import build_tiny_bert


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-ce"), head=True)


def _raw(model, rows):
    import torch
    from sentence_transformers import CrossEncoder

    pairs = [[r.query, f"{r.title}\n{r.text}" if r.title else r.text] for r in rows]
    return CrossEncoder(str(model)).predict(pairs, activation_fn=torch.nn.Identity())


def _pool(tmp_path):
    rows = [PoolRow(f"q{i % 4}", f"question {i % 4} about topic {i % 3}", f"d{i}", "" if i % 5 else f"T{i}",
                    f"document {i} on topic {i % 3} with words {i * 7}", "bm25", 1) for i in range(30)]  # fmt: skip
    return write_pool(tmp_path / "pool.csv", rows), rows


def test_given_thresholds_grade_the_raw_scores(tiny_ce, tmp_path):
    pool, rows = _pool(tmp_path)
    scores = _raw(tiny_ce, rows)
    t = np.quantile(scores, [0.25, 0.5, 0.75])
    arg = ",".join(repr(float(x)) for x in t)
    assert main(["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(tiny_ce),
                 "--thresholds", arg, "--out", str(tmp_path / "g.csv")]) == 0  # fmt: skip
    got = [r.grade for r in read_pool(tmp_path / "g.csv")]
    assert got == to_grades(scores, [float(x) for x in t]).tolist()
    assert set(got) == {0, 1, 2, 3}


def test_calibration_recovers_the_people_when_they_follow_the_scores(tiny_ce, tmp_path):
    pool, rows = _pool(tmp_path)
    scores = _raw(tiny_ce, rows)
    people = to_grades(scores, np.quantile(scores, [0.3, 0.6, 0.9]))
    human = [PoolRow(r.query_id, r.query, r.doc_id, r.title, r.text, r.retrieved_by, 1, int(g))
             for r, g in zip(rows, people)]  # fmt: skip
    write_pool(tmp_path / "human.csv", human[:20])
    assert main(["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(tiny_ce),
                 "--calibrate", str(tmp_path / "human.csv"), "--out", str(tmp_path / "g.csv")]) == 0  # fmt: skip
    got = np.array([r.grade for r in read_pool(tmp_path / "g.csv")])
    assert (got[:20] == people[:20]).all()  # the fit reproduces the calibration pairs exactly
    head = (tmp_path / "g.csv").read_text(encoding="utf-8").splitlines()[1]
    assert "cross-encoder:" in head.rsplit(",bm25,", 1)[1]


def test_needs_thresholds_or_calibration(tiny_ce, tmp_path, capsys):
    pool, _ = _pool(tmp_path)
    assert main(["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(tiny_ce),
                 "--out", str(tmp_path / "g.csv")]) == 2  # fmt: skip
    assert "--thresholds" in capsys.readouterr().err
    assert main(["judge", "auto", str(pool), "--judge", "cross-encoder", "--model", str(tiny_ce),
                 "--thresholds", "2,1,3", "--out", str(tmp_path / "g.csv")]) == 2  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5, allow_nan=False), st.integers(0, 3)), min_size=3, max_size=25),
       st.lists(st.floats(-6, 6, allow_nan=False), min_size=3, max_size=3))  # fmt: skip
def test_the_fit_beats_any_other_thresholds(data, other):
    s = np.array([d[0] for d in data])
    g = np.array([d[1] for d in data])
    if np.unique(g).size < 2:  # one grade: nothing to fit (refused, never thresholds of -inf)
        with pytest.raises(InputError, match="at least 2 different"):
            fit_thresholds(s, g)
        return
    (t, kq) = fit_thresholds(s, g)
    assert t[0] <= t[1] <= t[2]
    got = cohen_kappa(confusion(g, to_grades(s, t)), "quadratic")
    assert got == kq or (np.isnan(got) and np.isnan(kq))
    rival = cohen_kappa(confusion(g, to_grades(s, sorted(other))), "quadratic")
    if not np.isnan(rival):
        assert kq >= rival - 1e-12
