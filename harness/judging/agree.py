"""``harness judge agree A B``: how far two graders agree, pair by pair and on the systems' ranking.

A and B are grade files (a pool file as `harness judge serve` or `harness judge auto` fill it) or
qrels files; A is the reference (people, usually), B the grader under test (a judge). Only pairs
both grade count. Per pair: the confusion matrix, Cohen's kappa (plain and quadratic-weighted, over
the full 0-3 scale), Krippendorff's alpha (ordinal) and agreement on relevant / not relevant at a
threshold, with each grader's base rate (:mod:`harness.stats.agreement`). The same per retriever
that found the pair (the pool's ``retrieved_by``, or the stored runs' top k): a judge built on a
model like one retriever's may favour that retriever's documents, and this shows whether it does.

With a results folder, also per system: each retriever's metric scored against A and against B,
and Kendall's tau and tau_AP between the two rankings of retrievers. A judge can disagree with
people on many pairs and still rank the systems the same way, which is what a benchmark needs.
Both sides are scored on the same queries, those both A and B grade (a side scored on more queries
than the other would differ for that alone), and each on the folder's own judgments (its
``qrels.tsv``, the ones the pool was made against) with the side's grades over them: a pool holds
only the documents nobody had judged, and a run scored on those alone loses every relevant document
found before. The report names the queries and the judgments used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.io.trec import read_qrels
from harness.judging.pool import SEP, read_pool, top_docs
from harness.model import Qrels
from harness.stats.agreement import SCALE, binary, cohen_kappa, confusion, krippendorff_alpha_ordinal, tau_ap

Pair = tuple[str, str]


@dataclass
class Grades:
    """One grader's grades, ``{(query_id, doc_id): grade}``, and who retrieved each pair (pool files)."""

    path: Path
    grades: dict[Pair, int]
    retrieved_by: dict[Pair, list[str]] = field(default_factory=dict)

    def qrels(self) -> Qrels:
        out: Qrels = {}
        for (q, d), g in self.grades.items():
            out.setdefault(q, {})[d] = g
        return out


def is_grade_file(path: str | os.PathLike[str]) -> bool:
    """A pool / grade file (``.csv``, ``.jsonl``) rather than qrels (TREC or BEIR tsv)."""
    return Path(path).suffix.lower() in (".csv", ".jsonl", ".ndjson")


def read_grades(path: str | os.PathLike[str]) -> Grades:
    """The graded pairs of a grade file or a qrels file. Negative grades (trec_eval's "not
    pooled") are left out; a grade above the scale's 3 is refused, naming the pair."""
    p = Path(path)
    grades: dict[Pair, int] = {}
    by: dict[Pair, list[str]] = {}
    if is_grade_file(p):
        for r in read_pool(p):
            if r.grade is None:
                continue
            grades[r.query_id, r.doc_id] = r.grade
            if r.retrieved_by:
                by[r.query_id, r.doc_id] = [x for x in r.retrieved_by.split(SEP) if x]
    else:
        for q, judged in read_qrels(p).items():
            for d, g in judged.items():
                grades[q, d] = g
    for (q, d), g in grades.items():
        if g > SCALE[-1]:
            raise InputError(f"query {q!r}, doc {d!r}: grade {g} is above the 0-3 scale", path=p, field="grade")
    return Grades(p, {k: g for k, g in grades.items() if g >= 0}, by)


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def measures(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, threshold: int = 1) -> dict[str, Any]:
    """``n``, ``confusion`` (rows: A's grade, columns: B's), ``kappa``, ``kappa_quadratic``, ``alpha``
    and ``binary`` for paired grades; undefined figures (a constant grader) are None."""
    m = confusion(a, b)
    return {
        "n": int(m.sum()),
        "confusion": m.tolist(),
        "kappa": _num(cohen_kappa(m)),
        "kappa_quadratic": _num(cohen_kappa(m, "quadratic")),
        "alpha": _num(krippendorff_alpha_ordinal(m)),
        "binary": {k: _num(v) for k, v in binary(m, threshold).items()},
    }


def agree(
    a: Grades,
    b: Grades,
    *,
    threshold: int = 1,
    runs: Mapping[str, Any] | None = None,
    metrics: Sequence[str] = (),
    depth: int = 10,
    base: Qrels | None = None,
    base_path: str | None = None,
) -> dict[str, Any]:
    """The agreement report (the JSON ``harness judge agree --format json`` prints).

    ``runs`` (``{retriever: Run}``, a results folder's stored runs) adds the system level: each
    retriever's ``metrics`` under A and under B, ``tau`` (Kendall's tau-b, scipy) and ``tau_ap``
    (A's ranking the reference) per metric; pairs in a run's top ``depth`` count for that retriever
    in ``by_retriever``, beside the grade files' ``retrieved_by``. ``base`` (the folder's own
    judgments, read from ``base_path``) is what each side's grades are laid over for the system
    level; both sides are scored on the queries both grade (:func:`system_qrels`).
    """
    if not 0 < threshold <= SCALE[-1]:
        raise InputError(f"must be 1..{SCALE[-1]}", field="--threshold")
    common = sorted(set(a.grades) & set(b.grades))
    ga = np.array([a.grades[k] for k in common], dtype=np.int64)
    gb = np.array([b.grades[k] for k in common], dtype=np.int64)
    out: dict[str, Any] = {
        "a": str(a.path),
        "b": str(b.path),
        **measures(ga, gb, threshold),
        "only_a": len(a.grades) - len(common),
        "only_b": len(b.grades) - len(common),
    }
    finders: dict[Pair, set[str]] = {}
    for src in (a.retrieved_by, b.retrieved_by):
        for k, names in src.items():
            finders.setdefault(k, set()).update(names)
    if runs:
        for name, run in runs.items():
            for q, docs in top_docs(run, depth).items():
                for d in docs:
                    finders.setdefault((q, d), set()).add(name)
    per: dict[str, list[int]] = {}
    for i, k in enumerate(common):
        for name in finders.get(k, ()):
            per.setdefault(name, []).append(i)
    out["by_retriever"] = {name: measures(ga[idx], gb[idx], threshold) for name, idx in sorted(per.items())}
    if runs:
        qa, qb, used = system_qrels(a, b, base)
        out["system_queries"] = used
        out["system_base"] = (
            None if base is None else {"path": base_path, "judgments": sum(len(v) for v in base.values())}
        )
        out["system_queries_left_out"] = {
            "only_a": len({q for q, _ in a.grades} - set(used)),
            "only_b": len({q for q, _ in b.grades} - set(used)),
        }
        out.update(systems(runs, qa, qb, metrics))
    return out


def system_qrels(a: Grades, b: Grades, base: Qrels | None) -> tuple[Qrels, Qrels, list[str]]:
    """The judgments each side's systems are scored on: ``base`` (the folder's), the side's grades over
    it, on the queries both A and B grade (sorted, returned too); the others are left out of both."""
    used = sorted({q for q, _ in a.grades} & {q for q, _ in b.grades})
    if not used:
        raise InputError("A and B grade no query in common: the systems cannot be scored on the same queries")

    def side(g: Grades) -> Qrels:
        out: Qrels = {q: dict((base or {}).get(q, {})) for q in used}
        for (q, d), grade in g.grades.items():
            if q in out:
                out[q][d] = grade
        return out

    return side(a), side(b), used


def systems(runs: Mapping[str, Any], qa: Qrels, qb: Qrels, metrics: Sequence[str]) -> dict[str, Any]:
    """Each retriever's mean ``metrics`` against A's and B's judgments, and the rank correlations."""
    from harness.engine.score import score

    if not qa or not qb:
        raise InputError("both graders need graded pairs to score the systems")
    under_a = score(runs, qa, list(metrics), statistics=False).summary
    under_b = score(runs, qb, list(metrics), statistics=False).summary
    names = list(runs)
    out: dict[str, Any] = {"systems": {r: {m: [under_a[r][m], under_b[r][m]] for m in metrics} for r in names}}
    out["tau"], out["tau_ap"] = {}, {}
    for m in metrics:
        out["tau"][m], out["tau_ap"][m] = rank_agreement([under_a[r][m] for r in names], [under_b[r][m] for r in names])
    return out


def rank_agreement(xa: Sequence[float], xb: Sequence[float]) -> tuple[float | None, float | None]:
    """Kendall's tau (scipy's tau-b) and tau_AP (``xa`` the reference) between two scorings of the
    same systems, in the same order; None where undefined (fewer than 2 systems, constant scores).
    One function for ``judge agree`` and ``synth bias`` (would the other set pick the same system?)."""
    from scipy.stats import kendalltau

    tau = kendalltau(xa, xb).statistic if len(xa) > 1 else float("nan")
    return _num(float(tau)), _num(tau_ap(xa, xb))


def render(report: Mapping[str, Any]) -> str:
    """The report as text: the figures, the confusion matrix, and the per-retriever lines."""

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    b = report["binary"]
    lines = [
        f"{report['n']} pairs graded by both (A {report['a']}, B {report['b']}); "
        f"{report['only_a']} only by A, {report['only_b']} only by B",
        f"kappa {f(report['kappa'])}   quadratic kappa {f(report['kappa_quadratic'])}   "
        f"Krippendorff's alpha (ordinal) {f(report['alpha'])}",
        f"relevant at grade >= {b['threshold']}: agreement {f(b['agreement'])}, "
        f"base rate A {f(b['base_rate_a'])}, B {f(b['base_rate_b'])}",
        "",
        "confusion (rows: A's grade, columns: B's)",
        "      " + "".join(f"{g:>8}" for g in SCALE),
    ]
    lines += [f"   {g:>3}" + "".join(f"{c:>8}" for c in row) for g, row in zip(SCALE, report["confusion"])]
    if report["by_retriever"]:
        lines += [
            "",
            f"{'found by':<24}{'n':>7}{'kappa':>8}{'qkappa':>8}{'alpha':>8}{'agree':>8}{'rate A':>8}{'rate B':>8}",
        ]
        for name, r in report["by_retriever"].items():
            rb = r["binary"]
            lines.append(
                f"{name:<24}{r['n']:>7}{f(r['kappa']):>8}{f(r['kappa_quadratic']):>8}{f(r['alpha']):>8}"
                f"{f(rb['agreement']):>8}{f(rb['base_rate_a']):>8}{f(rb['base_rate_b']):>8}"
            )
    if "systems" in report:
        metrics = list(report["tau"])
        left = report["system_queries_left_out"]
        base = report["system_base"]
        lines += [
            "",
            f"systems scored on the {len(report['system_queries'])} queries both A and B grade "
            f"({left['only_a']} graded by A only and {left['only_b']} by B only left out of both), "
            + (
                f"each side's grades over the folder's {base['judgments']} judgments ({base['path']})"
                if base is not None
                else "each side on its own grades only (the folder's judgments not used)"
            ),
        ]
        lines += [f"{'retriever':<24}" + "".join(f"{m + ' A':>16}{m + ' B':>16}" for m in metrics)]
        for name, per in report["systems"].items():
            lines.append(f"{name:<24}" + "".join(f"{per[m][0]:>16.4f}{per[m][1]:>16.4f}" for m in metrics))
        lines.append(
            "rankings of the retrievers, A vs B: "
            + "; ".join(f"{m}: tau {f(report['tau'][m])}, tau_AP {f(report['tau_ap'][m])}" for m in metrics)
        )
    return "\n".join(lines) + "\n"
