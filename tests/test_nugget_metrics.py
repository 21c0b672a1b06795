"""Nugget metrics (harness.metrics.nuggets): a hand-computed case, and nuggetizer's own
``calculate_nugget_scores`` over the best assignment in the top k for a few hundred seeded queries."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harness.metrics.names import parse_metric
from harness.metrics.nuggets import NuggetInput
from harness.nuggets import NuggetJudgments
from harness.nuggets.files import Nugget, NuggetRecord, assignment_record
from harness.run import Run

pytestmark = pytest.mark.core  # runs on the core install alone too (.ci/core_tests.sh)

METRICS = ("nugget_strict_vital", "nugget_strict_all", "nugget_vital", "nugget_all")
LABELS = ("support", "partial_support", "not_support")


def _compute(name: str, ctx: NuggetInput) -> np.ndarray:
    m = parse_metric(name)
    return m.spec.compute(ctx, m.k)


def _hand_case() -> tuple[NuggetJudgments, Run]:
    """Query q1: nuggets a (vital), b (vital), c (okay), d (okay); ranking d1 > d2 > d3 > d4.

    d1: a partial, b not, c support  d2: never assessed  d3: a support, b partial  d4: d support.
    """
    ns = [Nugget("a", "vital"), Nugget("b", "vital"), Nugget("c", "okay"), Nugget("d", "okay")]
    rec = NuggetRecord("q1", "what?", ns)
    q2 = NuggetRecord("q2", "okay only", [Nugget("x", "okay")])
    ass = {
        ("q1", "d1"): assignment_record(rec, "d1", "p1", ["partial_support", "not_support", "support", "not_support"]),
        ("q1", "d3"): assignment_record(rec, "d3", "p3", ["support", "partial_support", "not_support", "not_support"]),
        ("q1", "d4"): assignment_record(rec, "d4", "p4", ["not_support", "not_support", "not_support", "support"]),
        ("q2", "e1"): assignment_record(q2, "e1", "p", ["support"]),
    }
    run = Run.from_dict({"q1": {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0}, "q2": {"e1": 1.0}})
    return NuggetJudgments({"q1": rec, "q2": q2}, ass), run


def test_hand_computed() -> None:
    nj, run = _hand_case()
    ctx = nj.input_for(run, ["q1", "q2", "q3"])
    # top 1 (d1): a partial, c support -> vital: (0 + 0.5)/2, all: (1 + 0.5)/4
    # top 2 (d1, d2 unassessed): the same; assessed 1 of 2
    # top 3 (+ d3): a support, b partial, c support -> strict vital 1/2, vital (1 + .5)/2,
    #               strict all 2/4, all (2 + .5)/4
    # top 4 (+ d4): d support -> strict all 3/4, all (3 + .5)/4
    want = {
        1: (0.0, 0.25, 0.25, 0.375, 1.0),
        2: (0.0, 0.25, 0.25, 0.375, 0.5),
        3: (0.5, 0.5, 0.75, 0.625, 2 / 3),
        4: (0.5, 0.75, 0.75, 0.875, 0.75),
        10: (0.5, 0.75, 0.75, 0.875, 0.75),
    }
    for k, values in want.items():
        got = [_compute(f"{m}@{k}", ctx) for m in (*METRICS, "nugget_assessed")]
        assert [g[0] for g in got] == list(values), k
        # q2 has no vital nugget: the vital formulas give 0 as nuggetizer's does; q3 has no nuggets at all
        assert [g[1] for g in got] == [0.0, 1.0, 0.0, 1.0, 1.0]
        assert [g[2] for g in got] == [0.0, 0.0, 0.0, 0.0, 0.0]


def test_registry_names() -> None:
    for m in (*METRICS, "nugget_assessed"):
        parsed = parse_metric(f"{m}@10")
        assert parsed.needs_nuggets and parsed.spec.bounds == (0.0, 1.0) and parsed.spec.formula
    with pytest.raises(ValueError, match="needs a cutoff"):
        parse_metric("nugget_vital")


def _seeded(n_queries: int, seed: int) -> tuple[NuggetJudgments, Run]:
    """Seeded nuggets (0-8 per query, some with no vital one) and assignments for a random share of
    each query's ranked passages (some never assessed), plus a ranking with ties."""
    rng = random.Random(seed)
    nuggets, assignments, run = {}, {}, {}
    for i in range(n_queries):
        q = f"q{i}"
        ns = [Nugget(f"fact {i}.{j}", rng.choice(("vital", "okay", "okay"))) for j in range(rng.randint(0, 8))]
        rec = NuggetRecord(q, f"question {i}", ns)
        nuggets[q] = rec
        docs = [f"d{rng.randint(0, 60)}" for _ in range(rng.randint(0, 30))]
        run[q] = {d: float(rng.randint(0, 12)) for d in docs}  # repeated scores: ties ranked by doc id
        for d in set(docs):
            if rng.random() < 0.7:
                labels = [rng.choice(LABELS) for _ in ns]
                assignments[(q, d)] = assignment_record(rec, d, f"passage {d}", labels)
    return NuggetJudgments(nuggets, assignments), Run.from_dict(run)


@pytest.mark.parametrize("k", [5, 20])
def test_equals_nuggetizer(k: int) -> None:
    """Per query and in the mean, to 1e-12 (in fact bit for bit), over 300 seeded queries."""
    nm = pytest.importorskip("nuggetizer.core.metrics")
    nj, run = _seeded(300, seed=k)
    qids = nj.query_ids
    ctx = nj.input_for(run, qids)
    ours = {m: _compute(f"{m}@{k}", ctx) for m in METRICS}
    field = {
        "nugget_strict_vital": "strict_vital_score",
        "nugget_strict_all": "strict_all_score",
        "nugget_vital": "vital_score",
        "nugget_all": "all_score",
    }
    rank = {"support": 2, "partial_support": 1, "not_support": 0}
    theirs: dict[str, list[float]] = {m: [] for m in METRICS}
    records = []
    for q in qids:
        # the best assignment of each nugget among the assessed passages of the top k, written
        # independently of the harness: sort by (score, doc id) descending as trec_eval does
        top = [d for d, _ in sorted(run.to_dict()[q].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k]]
        best = []
        for n in nj.nuggets[q].nuggets:
            labels = [nj.assignments[(q, d)].labels[n.text] for d in top if (q, d) in nj.assignments]
            best.append(max(labels, key=rank.__getitem__, default="not_support"))
        record = [
            {"text": n.text, "importance": n.importance, "assignment": a} for n, a in zip(nj.nuggets[q].nuggets, best)
        ]
        records.append({"qid": q, "nuggets": record})
        scores = nm.calculate_nugget_scores(q, record)
        for m, f in field.items():
            theirs[m].append(getattr(scores, f))
    glob = nm.calculate_global_metrics(records)
    for m, f in field.items():
        assert np.max(np.abs(ours[m] - np.array(theirs[m]))) <= 1e-12, m
        assert abs(math.fsum(ours[m]) / len(qids) - glob[f]) <= 1e-12, m
    # the seeds reach every case: no vital nugget, no nugget, partial support, unassessed passages
    assert any(not v.any() for v in ctx.vital) and any(len(v) == 0 for v in ctx.vital)
    assert 0 < np.mean(_compute(f"nugget_assessed@{k}", ctx)) < 1
    assert (ours["nugget_vital"] != ours["nugget_strict_vital"]).any()  # partial support counted
