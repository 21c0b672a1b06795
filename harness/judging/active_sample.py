"""``harness judge sample POOL --active --auto GRADED --results DIR --budget N --seed S --out SAMPLE``:
draw the queries people grade where the judge is unsure (active statistical inference, Zrnic and
Candes 2024), keeping the interval valid (:mod:`~harness.judging.active`).

For every pool query ``q`` the judge's probabilities (``p_0..p_3`` of each pooled pair in GRADED,
:mod:`~harness.judging.probabilities`) give a distribution of the per-query metric difference the
team cares about (``--compare A,B``, default every retriever against the folder's baseline; the
metric ``--metric``, default the folder's first), the grades of different pairs independent and the
folder's own judgments fixed. ``u_q`` is its standard deviation: exact for metrics linear in the
relevance of each document (``precision@k``, ``hits@k``: ``Var = c^2 * sum_d (n_A(d) - n_B(d))^2 *
r_d (1 - r_d)`` with ``r_d = 1 - p_0``), otherwise from ``--draws`` seeded Monte Carlo draws of every
grade scored by the harness's own metric code. With several compared pairs ``u_q`` is the root mean
square over them.

Inclusion probabilities: ``pi_q`` proportional to ``u_q``, mixed with the uniform ``budget / N``
(``--mix``, default 0.2: the robust variant that keeps every ``pi`` away from 0, so one unlucky
label cannot carry a weight of thousands), capped at 1, summing to the budget
(:func:`harness.stats.active.spread_budget`); a ``pi`` under 1e-6 is raised to it, with a line. Each
query is drawn independently with its ``pi_q`` (numpy's seeded generator over the sorted query ids):
the expected number drawn is the budget, the actual one varies around it.

``SAMPLE.sample.json`` records ``pi`` for every query the estimate ranges over (the pool's, and the
folder's fully judged queries with ``pi = 1``: nothing to grade there), ``queries`` (drawn now),
``u``, the seed, the mix and the sha256 of the pool and of GRADED. ``--after EARLIER`` draws the next
round from what the earlier rounds left of the budget: the queries drawn before are labelled with
certainty (``pi = 1`` in the new record), the rest get this round's ``pi``. Given the earlier rounds,
this round is a fresh active draw, so the estimate on the last record is unbiased and its interval
valid however the earlier rounds went: people can grade in rounds (the paper's sequential idea, in
batches).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import clock
from harness.errors import InputError
from harness.io import atomic
from harness.model import Qrels
from harness.run import Run
from harness.stats.active import MIN_PI, spread_budget

log = logging.getLogger("harness")

#: metrics linear in each document's relevance (grade >= 1): their variance is exact
LINEAR = {"precision", "hits"}


@dataclass
class ActiveSampleOptions:
    """``judge sample --active``'s flags."""

    pool: str
    graded: str
    results: str
    out: str
    seed: int = 0
    budget: int | None = None
    batch: int | None = None
    mix: float = 0.2
    compare: list[str] = field(default_factory=list)
    metric: str | None = None
    after: str | None = None
    draws: int = 200


def sha256_file(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- uncertainty


def _linear_sd(
    kind: str, k: int, runs: Mapping[str, Run], probs: Mapping[tuple[str, str], np.ndarray],
    queries: Sequence[str], pairs: Sequence[tuple[str, str]],
) -> np.ndarray:  # fmt: skip
    """Exact ``Var`` of each query's difference, per pair: ``[pairs, queries]``."""
    from harness.judging.pool import top_docs

    tops = {r: top_docs(runs[r], k) for r in {x for p in pairs for x in p}}
    scale = 1.0 / k if kind == "precision" else 1.0
    out = np.zeros((len(pairs), len(queries)))
    for j, (a, b) in enumerate(pairs):
        for i, q in enumerate(queries):
            coef: dict[str, int] = {}
            for d in tops[a].get(q, []):
                coef[d] = coef.get(d, 0) + 1
            for d in tops[b].get(q, []):
                coef[d] = coef.get(d, 0) - 1
            v = 0.0
            for d, c in coef.items():
                p = probs.get((q, d))
                if p is not None and c:
                    r = 1.0 - float(p[0])
                    v += c * c * r * (1 - r)
            out[j, i] = scale * scale * v
    return out


def _monte_carlo_var(
    metric: str, runs: Mapping[str, Run], base: Qrels, probs: Mapping[tuple[str, str], np.ndarray],
    queries: Sequence[str], pairs: Sequence[tuple[str, str]], seed: int, draws: int,
) -> np.ndarray:  # fmt: skip
    """``Var`` of each query's difference over ``draws`` seeded draws of every pooled grade."""
    from harness.metrics.evaluate import CompiledQrels, evaluate_run

    keys = sorted(k for k in probs if k[0] in set(queries))
    p = np.array([probs[k] for k in keys]) if keys else np.zeros((0, 4))
    cum = np.cumsum(p, axis=1)[:, :-1]
    rng = np.random.default_rng(seed)
    grades = (rng.random((draws, len(keys)))[:, :, None] >= cum[None, :, :]).sum(axis=2)
    names = sorted({x for pr in pairs for x in pr})
    qpos = {q: i for i, q in enumerate(queries)}
    vals = np.zeros((draws, len(names), len(queries)))
    for s in range(draws):
        qrels = {q: dict(base.get(q, {})) for q in queries}
        for (q, d), g in zip(keys, grades[s].tolist()):
            qrels[q][d] = g
        cq = CompiledQrels(qrels)
        for j, r in enumerate(names):
            v = evaluate_run(cq, runs[r], [metric]).values[metric]
            for q, x in zip(cq.query_ids, v.tolist()):
                if q in qpos:
                    vals[s, j, qpos[q]] = x
    col = {r: j for j, r in enumerate(names)}
    diffs = np.stack([vals[:, col[a], :] - vals[:, col[b], :] for a, b in pairs], axis=1)
    return np.var(diffs, axis=0, ddof=1) if draws > 1 else np.zeros((len(pairs), len(queries)))


def uncertainty(
    metric: str, runs: Mapping[str, Run], base: Qrels, probs: Mapping[tuple[str, str], np.ndarray],
    queries: Sequence[str], pairs: Sequence[tuple[str, str]], *, seed: int, draws: int,
) -> tuple[np.ndarray, str]:  # fmt: skip
    """``u_q`` for each of ``queries`` (root mean square over ``pairs`` of the difference's standard
    deviation) and how it was computed (``exact`` or ``monte carlo, N draws``)."""
    from harness.metrics.names import parse_metric

    m = parse_metric(metric)
    if m.kind in LINEAR and m.k is not None:
        var, how = _linear_sd(m.kind, m.k, runs, probs, queries, pairs), "exact"
    else:
        var = _monte_carlo_var(m.name, runs, base, probs, queries, pairs, seed, draws)
        how = f"monte carlo, {draws} draws"
    return np.sqrt(np.maximum(var, 0).mean(axis=0)), how


# ----------------------------------------------------------------------------- the draw


def _earlier(after: str, pool_sha: str) -> dict[str, Any]:
    from harness.judging.sample import read_record, sidecar

    rec = sidecar(after)
    data = read_record(after, field="--after")
    if data is None:
        raise InputError(f"no {rec.name} beside it: not a sample `judge sample --active` drew", path=after,
                         field="--after")  # fmt: skip
    if not isinstance(data, dict) or data.get("design") != "active":
        raise InputError("not an active sample's record (drawn without --active)", path=rec, field="--after")
    if (data.get("pool") or {}).get("sha256") != pool_sha:
        raise InputError("drawn from another pool (its sha256 differs): rounds must share one pool", path=rec,
                         field="--after")  # fmt: skip
    data["_sha256"] = sha256_file(rec)
    return data


def _pairs(results: Any, runs: Mapping[str, Run], compare: Sequence[str]) -> list[tuple[str, str]]:
    if compare:
        out = []
        for c in compare:
            a, sep, b = c.partition(",")
            a, b = a.strip(), b.strip()
            if not sep or not a or not b or a == b:
                raise InputError(f"expected A,B (two different retrievers), got {c!r}", field="--compare")
            for x in (a, b):
                if x not in runs:
                    raise InputError(f"{x!r} has no stored run in the folder ({', '.join(runs)})", field="--compare")
            out.append((a, b))
        return out
    base = results.baseline if results.baseline in runs else next(iter(runs))
    out = [(r, base) for r in runs if r != base]
    if not out:
        raise InputError("the folder holds one retriever: nothing to compare", field="--compare")
    return out


def active_sample(opts: ActiveSampleOptions) -> list[str]:
    """Everything checked (the output new, the budget, GRADED's probabilities, the folder, the
    earlier round), then the draw written; the lines to print."""
    from harness.io.trec import read_qrels
    from harness.judging.folder_runs import scorable, stored_runs
    from harness.judging.pool import read_pool, write_pool
    from harness.judging.probabilities import read_probabilities
    from harness.judging.sample import check_seed, sidecar
    from harness.results import Results

    check_seed(opts.seed)
    out_p = Path(opts.out)
    if out_p.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise InputError("the sample file must end in .csv or .jsonl", field="--out")
    if out_p.exists() or sidecar(out_p).exists():
        raise InputError("exists; choose a new file", path=out_p, field="--out")
    if not 0 <= opts.mix <= 1:
        raise InputError(f"must be in [0, 1], got {opts.mix}", field="--mix")
    if opts.draws < 2:
        raise InputError("must be at least 2", field="--draws")
    rows = read_pool(opts.pool)
    pool_queries = sorted({r.query_id for r in rows})
    if not pool_queries:
        raise InputError("the pool is empty: nothing to draw", path=opts.pool)
    pool_sha = sha256_file(opts.pool)
    earlier = _earlier(opts.after, pool_sha) if opts.after else None
    before = sorted({*earlier.get("before", []), *earlier.get("queries", [])}) if earlier else []
    budget = opts.budget if opts.budget is not None else (earlier or {}).get("budget")
    if budget is None:
        raise InputError("how many queries people will grade in all (the expected number)", field="--budget")
    if earlier is not None and budget != earlier.get("budget"):
        raise InputError(f"the earlier rounds' budget is {earlier.get('budget')}: rounds share one budget",
                         field="--budget")  # fmt: skip
    if not 1 <= budget <= len(pool_queries):
        raise InputError(f"{budget} is not in 1..{len(pool_queries)}: the pool has {len(pool_queries)} queries",
                         path=opts.pool, field="--budget")  # fmt: skip
    left = budget - len(before)
    undrawn = [q for q in pool_queries if q not in set(before)]
    if left < 1 or not undrawn:
        raise InputError(f"budget spent: {len(before)} queries drawn of a budget of {budget}", field="--after")
    batch = opts.batch if opts.batch is not None else left
    if not 1 <= batch <= min(left, len(undrawn)):
        raise InputError(f"must be in 1..{min(left, len(undrawn))} (what is left of the budget)", field="--batch")
    probs = read_probabilities(opts.graded)
    missing = [(r.query_id, r.doc_id) for r in rows if (r.query_id, r.doc_id) not in probs]
    if missing:
        raise InputError(
            f"no probabilities for query {missing[0][0]!r}, doc {missing[0][1]!r} of the pool ({len(missing)} "
            "pairs in all): grade the same pool with `harness judge auto ... --probabilities`",
            path=opts.graded,
            field="--auto",
        )
    res = Results.open(opts.results)
    runs = stored_runs(res, opts.results)
    metric = opts.metric or next(iter(scorable(res.metrics)), None)
    if metric is None:
        raise InputError("the folder has no metric grades alone can score; name one", field="--metric")
    if not scorable(metric):
        raise InputError(f"{metric} cannot be scored from grades alone (it needs embeddings or contexts)",
                         field="--metric")  # fmt: skip
    metric = scorable(metric)[0]
    pairs = _pairs(res, runs, opts.compare)
    folder_qrels = (res.folder or Path(opts.results)) / "qrels.tsv"
    base = read_qrels(folder_qrels) if folder_qrels.is_file() else {}
    u, how = uncertainty(metric, runs, base, probs, undrawn, pairs, seed=opts.seed, draws=opts.draws)
    pi = spread_budget(u, batch, opts.mix)
    lines: list[str] = []
    low = pi < MIN_PI
    if low.any():
        lines.append(
            f"{int(low.sum())} inclusion probabilit{'y' if low.sum() == 1 else 'ies'} under {MIN_PI:g} raised to it "
            f"(e.g. query {undrawn[int(np.argmax(low))]!r}): a label drawn there would weigh over a million"
        )
        pi = np.maximum(pi, MIN_PI)
    rng = np.random.default_rng(opts.seed)
    chosen = [q for q, x in zip(undrawn, (rng.random(len(undrawn)) < pi).tolist()) if x]
    keep = set(chosen)
    picked = [r for r in rows if r.query_id in keep]
    complete = sorted(set(base) - set(pool_queries))  # fully judged already: labelled with certainty
    pi_all = {**{q: 1.0 for q in complete}, **{q: 1.0 for q in before}, **dict(zip(undrawn, map(float, pi)))}
    record = {
        "created": clock.stamp(),
        "design": "active",
        "pool": {"path": str(Path(opts.pool).resolve()), "sha256": pool_sha},
        "graded": {"path": str(Path(opts.graded).resolve()), "sha256": sha256_file(opts.graded)},
        "seed": opts.seed,
        "mix": opts.mix,
        "budget": budget,
        "batch": batch,
        "metric": metric,
        "compare": [f"{a},{b}" for a, b in pairs],
        "u_method": how,
        "after": None if earlier is None else {"path": str(Path(opts.after).resolve()), "sha256": earlier["_sha256"]},
        "before": before,
        "complete": complete,
        "queries": chosen,
        "rows": len(picked),
        "u": dict(zip(undrawn, map(float, u))),
        "pi": dict(sorted(pi_all.items())),
    }
    write_pool(out_p, picked)
    atomic.write_json(sidecar(out_p), record)
    lines.append(
        f"{len(chosen)} queries drawn (expected {batch:g} of {len(undrawn)}; budget {budget}, {len(before)} drawn "
        f"before) with seed {opts.seed}, mix {opts.mix:g}, u from {metric} ({how}); {len(picked)} pairs to grade, "
        f"every one, written to {out_p}; the draw and every pi are in {sidecar(out_p).name}"
    )
    return lines
