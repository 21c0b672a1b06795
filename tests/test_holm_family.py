"""Holm's family is a choice the table names: the whole table (``all``) or each metric's column (``metric``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stats import compare, holm
from harness.stats.compare import holm_by_family


def test_per_metric_family_by_hand():
    # two metrics, two tests each: p = [0.01, 0.04] for m1 and [0.03, 0.20] for m2
    p = np.array([0.01, 0.03, 0.04, 0.20])
    metrics = ["m1", "m2", "m1", "m2"]
    # all: Holm over four: sorted 0.01*4=0.04, 0.03*3=0.09, 0.04*2=0.08 -> 0.09 (monotone), 0.20*1 -> 0.20
    assert holm_by_family(p, metrics, "all").tolist() == pytest.approx([0.04, 0.09, 0.09, 0.20])
    # metric: m1 over two: 0.01*2=0.02, 0.04*1=0.04; m2 over two: 0.03*2=0.06, 0.20
    assert holm_by_family(p, metrics, "metric").tolist() == pytest.approx([0.02, 0.06, 0.04, 0.20])


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="correction must be one of all, metric"):
        holm_by_family(np.array([0.1]), ["m"], "bonferroni")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.integers(1, 4))
def test_per_metric_is_holm_of_each_column_and_never_stricter_than_all(ps, n_metrics):
    p = np.array(ps)
    metrics = [f"m{i % n_metrics}" for i in range(len(ps))]
    per = holm_by_family(p, metrics, "metric")
    whole = holm_by_family(p, metrics, "all")
    assert np.all(per <= whole + 1e-12)
    for m in set(metrics):
        idx = [i for i, x in enumerate(metrics) if x == m]
        assert per[idx].tolist() == pytest.approx(holm(p[idx]))


def test_compare_uses_the_family():
    rng = np.random.default_rng(0)
    base = rng.random(40)
    values = {
        "base": {"a": base, "b": base},
        "x": {"a": base + 0.05 + rng.normal(0, 0.05, 40), "b": base + rng.normal(0, 0.2, 40)},
        "y": {"a": base + rng.normal(0, 0.2, 40), "b": base + rng.normal(0, 0.2, 40)},
    }
    sig_all, _ = compare(values, "base", permutations=2000, bootstrap=10)
    sig_m, _ = compare(values, "base", permutations=2000, bootstrap=10, correction="metric")
    raw = {(r, m): sig_all[r][m]["p_value"] for r in ("x", "y") for m in ("a", "b")}
    whole = holm_by_family(np.array(list(raw.values())), [k[1] for k in raw], "all")
    assert sig_all["x"]["a"]["p_holm"] == pytest.approx(whole[0])
    assert sig_m["x"]["a"]["p_holm"] == pytest.approx(holm([raw[("x", "a")], raw[("y", "a")]])[0])
    assert sig_m["x"]["a"]["p_holm"] <= sig_all["x"]["a"]["p_holm"]


def test_legend_names_the_family():
    from harness.results.table import build_table
    from tests.test_report import make_results

    results = make_results()
    legend = " ".join(build_table(results).legend())
    assert "Holm-corrected over 6 comparisons, the whole table (every retriever x metric)" in legend
    assert "stats: {correction: metric}" in legend  # says how to choose the other family
    results.manifest.setdefault("config", {})["stats"] = {"correction": "metric"}
    legend = " ".join(build_table(results).legend())
    assert "Holm-corrected within each metric" in legend and "stats: {correction: all}" in legend
