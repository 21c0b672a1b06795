"""The regression rule, as pure logic: two validated results in, a :class:`CheckReport` out.

A regression is a drop of more than the tolerance (absolute, per retriever x metric, as Pyserini's
2CR files keep expected scores with a tolerance) that is also significant: a paired test on the
per-query scores of the queries both results scored. Both conditions, because a nightly job must
fail loudly when quality really dropped, and only then: a tolerance alone fails on noise in a small
query set; a test alone fails on drops too small to matter over a large one.

No files and no printing here: rendering is :mod:`harness.gate.render` and :mod:`harness.gate.junit`.
Every number is checked finite first (:mod:`harness.gate._scores`), so no NaN can make a comparison
false and pass the gate, and no infinity can count as an improvement.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from harness import defaults
from harness.errors import InputError
from harness.gate import power as power_gate
from harness.gate._scores import Scores
from harness.gate.blind import detects_nothing
from harness.gate.tolerances import DEFAULT_ALPHA, CheckSettings, Tolerances, check_alpha, check_tolerance
from harness.metrics.names import folder_spelling
from harness.results import Results
from harness.stats.weighted import paired_mean, randomization_tests_w, t_test_w

Verdict = Literal["regression", "inferior", "failed", "missing", "not_significant", "improved", "new", "ok"]
#: verdicts that fail the check (``inferior``: non-inferiority not shown, :mod:`harness.gate.power`)
FAILING: frozenset[str] = frozenset({"regression", "inferior", "failed", "missing"})
#: display order: what needs a look first
ORDER: dict[str, int] = {v: i for i, v in enumerate(Verdict.__args__)}  # type: ignore[attr-defined]
TESTS = {
    "randomization": "two-sided paired randomization test, {n:,} sign flips, seed {seed}",
    "t": "two-sided paired t-test",
}
#: float slack so that equal means never count as a drop of exactly the tolerance
EPS = 1e-9


class CheckRow(BaseModel):
    """One retriever x metric: baseline and current means over the common queries."""

    retriever: str
    metric: str
    verdict: Verdict
    baseline: float | None = None
    current: float | None = None
    #: current - baseline, and the paired test's p-value
    delta: float | None = None
    p_value: float | None = None
    tolerance: float = 0.0
    queries: int = 0
    note: str = ""
    #: ``regression`` (tolerance and test) or ``non_inferiority`` (lower bound above -margin)
    rule: str = "regression"
    margin: float | None = None
    #: one-sided lower confidence bound of the mean difference (non-inferiority only)
    bound: float | None = None
    #: power (harness.gate.power): observed sd of the differences, the sd used and which it is
    sd_diff: float | None = None
    sd_used: float | None = None
    sd_source: str | None = None
    #: the drop the check detects at the report's power target on these queries
    mde: float | None = None
    #: queries the tolerance needs (blind rows only)
    queries_needed: int | None = None
    #: the check cannot see its tolerance here (its detectable drop is larger, or it has < 2 queries)
    blind: bool = False

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    def limit(self) -> str:
        """The ``tol`` cell: the regression tolerance, or under non-inferiority the margin the bound is
        held to (``margin 0.02``): the tolerance plays no part in that row's verdict."""
        if self.rule == "non_inferiority" and self.margin is not None:
            return f"margin {self.margin:g}"
        return f"{self.tolerance:g}"

    def message(self, alpha: float) -> str:
        """One sentence for logs and JUnit failures."""
        what = f"{self.retriever} {self.metric}"
        if self.baseline is None or self.current is None or self.delta is None:
            return f"{what}: {self.verdict}" + (f" ({self.note})" if self.note else "")
        p = "no per-query scores, tolerance only" if self.p_value is None else f"p = {fmt_p(self.p_value)}"
        if self.rule == "non_inferiority":
            bound = "none" if self.bound is None else f"{self.bound:+.4f}"
            return (
                f"{what}: {self.verdict.replace('_', ' ')}: {self.baseline:.4f} -> {self.current:.4f} "
                f"({self.delta:+.4f}; non-inferiority: lower bound {bound} vs margin -{self.margin:g}; {p}; "
                f"{self.queries} queries)"
            )
        return (
            f"{what}: {self.verdict.replace('_', ' ')}: {self.baseline:.4f} -> {self.current:.4f} "
            f"({self.delta:+.4f}; tolerance {self.tolerance:g}; {p}, alpha {alpha:g}; {self.queries} queries)"
        )


class DatasetCheck(BaseModel):
    """Whether the two results measured the same set, and on which queries they are compared."""

    name: str | None = None
    split: str | None = None
    #: each side's dataset fingerprint (harness.manifest): equal when the set did not change
    baseline_fingerprint: str | None = None
    current_fingerprint: str | None = None
    #: queries each side scored, and those both did (what the paired tests run on)
    baseline_queries: int = 0
    current_queries: int = 0
    common_queries: int = 0
    #: the fingerprints differ (``allowed``: --allow-dataset-change compares the common queries anyway)
    changed: bool = False
    allowed: bool = False
    reason: str = ""


class CheckReport(BaseModel):
    """Everything ``harness check`` decided; rendered by :mod:`harness.gate.render` and ``junit``."""

    baseline: str = "baseline"
    current: str = "current"
    alpha: float = DEFAULT_ALPHA
    test: str = "randomization"
    test_description: str = ""
    dataset: DatasetCheck = Field(default_factory=DatasetCheck)
    rows: list[CheckRow] = Field(default_factory=list)
    #: check-level failures (a changed dataset)
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    baseline_info: dict[str, Any] = Field(default_factory=dict)
    current_info: dict[str, Any] = Field(default_factory=dict)
    #: the current results' ``manifest.git`` (full commit, dirty), for the history
    current_git: dict[str, Any] = Field(default_factory=dict)
    #: the current results' means of every retriever x metric (checked or not), for the history
    current_summary: dict[str, dict[str, float]] = Field(default_factory=dict)
    #: the baseline's means, for the history
    baseline_summary: dict[str, dict[str, float]] = Field(default_factory=dict)
    #: non-inferiority margins per metric (canonical names), their one-sided alpha
    non_inferiority: dict[str, float] = Field(default_factory=dict)
    ni_alpha: float = DEFAULT_ALPHA
    #: the power the mde and the blind lines are computed at
    power_target: float = 0.8
    #: one line per gated metric whose detectable drop is larger than its tolerance
    blind: list[str] = Field(default_factory=list)
    #: where the variance came from, non-inferiority's chance of passing
    power_notes: list[str] = Field(default_factory=list)
    #: checks with no variance to size them with (every difference alike, no baseline estimate)
    unsized: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.problems) or any(r.failing for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 no regression, 1 regression (bad input is an :class:`InputError`: exit 2)."""
        return 1 if self.failed else 0

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(ORDER, 0)
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def sorted_rows(self) -> list[CheckRow]:
        """Regressions and other failures first, then drops that were not significant, gains, the rest."""
        return sorted(self.rows, key=lambda r: ORDER[r.verdict])  # stable: config order within a verdict

    def row_notes(self) -> list[tuple[str, bool]]:
        """Each row note once per retriever (a failed retriever fails every metric for one reason)."""
        seen: dict[str, bool] = {}
        for r in self.sorted_rows():
            if r.note:
                metrics = [x.metric for x in self.rows if x.retriever == r.retriever and x.note == r.note]
                what = r.retriever if len(metrics) > 1 else f"{r.retriever} {r.metric}"
                seen.setdefault(f"{what}: {r.note}", r.failing)
        return list(seen.items())

    def headline(self) -> str:
        c = self.counts()
        parts = [f"{c['regression']} regression{'s' * (c['regression'] != 1)}"]
        parts += [f"{c[v]} {v}" for v in ("inferior", "failed", "missing") if c[v]]
        if self.problems:
            parts.append("dataset changed")
        checked = sum(c[v] for v in ORDER if v != "new")
        rest = [f"{c[v]} {v.replace('_', ' ')}" for v in ("not_significant", "improved", "new", "ok") if c[v]]
        return f"{self.verdict_word()}: {', '.join(parts)} ({checked} checks{': ' + ', '.join(rest) if rest else ''})"

    def verdict_word(self) -> str:
        """``FAIL``, ``PASS``, or either with what a blind gate cannot see (:meth:`blindness`)."""
        checked = sum(n for v, n in self.counts().items() if v != "new")
        return f"{'FAIL' if self.failed else 'PASS'}{self.blindness(checked)}"

    def blindness(self, checked: int) -> str:
        """`` (blind on 24 of 24 checks: drops under 0.026 to 0.072 are invisible with 83 queries)``: what
        a PASS cannot vouch for, in the headline itself ("" when the gate sees every tolerance)."""
        rows = [r for r in self.rows if r.blind]
        if not rows:
            return ""
        # a drop beyond the metric's range is never printed: such a check detects no drop at all
        seen = [r for r in rows if not detects_nothing(r.metric, r.mde)]
        mdes = sorted({round(r.mde, 3) for r in seen if r.mde is not None})
        queries = sorted({r.queries for r in rows})
        n = f"{queries[0]:,}" if len(queries) == 1 else f"{queries[0]:,} to {queries[-1]:,}"
        if not mdes:  # fewer than 2 common queries, or too few for any drop within range
            return f" (blind on {len(rows)} of {checked} checks: no drop can be detected with {n} queries)"
        under = f"{mdes[0]:.3f}" if len(mdes) == 1 else f"{mdes[0]:.3f} to {mdes[-1]:.3f}"
        none = len(rows) - len(seen)
        rest = f"; no drop can be detected on {none}" if none else ""
        return f" (blind on {len(rows)} of {checked} checks: drops under {under} are invisible with {n} queries{rest})"

    def rule(self) -> str:
        text = (
            f"regression = a drop of more than the tolerance that is also significant: {self.test_description}, "
            f"p < {self.alpha:g}, on the per-query scores of the queries both results scored"
        )
        if self.non_inferiority:
            margins = ", ".join(f"{m} {v:g}" for m, v in self.non_inferiority.items())
            text += (
                f"; non-inferiority ({margins}) replaces it for those metrics: pass only when the one-sided "
                f"{1 - self.ni_alpha:.1%} lower bound of the mean paired difference (Student t, n - 1 df) is above "
                "-margin"
            )
        return text

    def dataset_line(self) -> str:
        d = self.dataset
        fp = (d.current_fingerprint or d.baseline_fingerprint or "no fingerprint")[:19]
        base = f"dataset {d.name or '?'} ({d.split or '?'}, {d.common_queries} common queries, {fp})"
        if not d.changed:
            return base + ": unchanged"
        how = "allowed (--allow-dataset-change): compared on the common queries" if d.allowed else "FAILURE"
        return f"{base}: CHANGED, {d.reason}; {how}"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "—"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


# ---------------------------------------------------------------------- the check
def check(
    baseline: Results | Scores,
    current: Results | Scores,
    *,
    tolerances: Tolerances | float | None = None,
    alpha: float | None = None,
    metrics: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
    allow_dataset_change: bool = False,
    test: str = "randomization",
    permutations: int = defaults.PERMUTATIONS,
    seed: int = defaults.SEED,
    baseline_label: str = "baseline",
    current_label: str = "current",
    non_inferiority: float | None = None,
    ni_alpha: float = DEFAULT_ALPHA,
    power: float = 0.8,
) -> CheckReport:
    """Compare ``current`` with ``baseline`` per retriever x metric (see the module doc).

    ``non_inferiority`` (a margin for every checked metric; else the tolerances' ``non_inferiority``
    entries) replaces the regression rule by non-inferiority at one-sided ``ni_alpha``; every compared
    row also gets the drop it can detect at ``power`` (:mod:`harness.gate.power`).

    Raises :class:`InputError` (exit 2) for input that cannot be checked: a non-finite score or
    tolerance, a baseline without scores, a retriever or metric asked for that the baseline lacks,
    no common queries.
    """
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; choose one of: {', '.join(TESTS)}", field="test")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise InputError(f"must be an integer >= 1, got {permutations!r}", field="permutations")
    tol = Tolerances.coerce(tolerances)
    check_alpha(ni_alpha, "ni_alpha")
    check_alpha(power, "power")
    if non_inferiority is not None:
        check_tolerance(non_inferiority, "non_inferiority")
    alpha = check_alpha(alpha if alpha is not None else (tol.alpha if tol.alpha is not None else DEFAULT_ALPHA))
    s = CheckSettings.model_construct(
        tolerances=tol,
        alpha=alpha,
        test=test,
        permutations=permutations,
        seed=seed,
        metrics=None if metrics is None else list(metrics),
        retrievers=None if retrievers is None else list(retrievers),
        allow_dataset_change=allow_dataset_change,
        non_inferiority=non_inferiority,
        ni_alpha=ni_alpha,
        power=power,
    )
    return report(baseline, current, s, baseline_label=baseline_label, current_label=current_label)


def report(
    baseline: Results | Scores,
    current: Results | Scores,
    s: CheckSettings,
    *,
    baseline_label: str = "baseline",
    current_label: str = "current",
) -> CheckReport:
    """:func:`check` with its settings already checked (:func:`harness.gate.tolerances.settings`): the
    rows, their power and non-inferiority, the notes, in one pass that reads each side once."""
    base = baseline if isinstance(baseline, Scores) else Scores.of(baseline, "baseline", baseline_label)
    cur = current if isinstance(current, Scores) else Scores.of(current, "current", current_label)
    if not base.summary:
        raise InputError(f"{baseline_label}: holds no scores (every retriever failed, or nothing was run)")
    retrievers, metrics = s.retrievers, s.metrics
    names = _select_retrievers(base, retrievers, baseline_label)
    wanted = _select_metrics(base, names, metrics, baseline_label)
    dataset = _dataset_check(base, cur, s.allow_dataset_change)
    report = CheckReport(
        baseline=baseline_label,
        current=current_label,
        alpha=s.alpha,
        test=s.test,
        test_description=TESTS[s.test].format(n=s.permutations, seed=s.seed),
        dataset=dataset,
        baseline_info=base.provenance(),
        current_info=cur.provenance(),
        current_git=cur.git(),
        current_summary=cur.summary,
        baseline_summary=base.summary,
    )
    if dataset.changed and not s.allow_dataset_change:
        report.problems.append(
            f"the dataset changed ({dataset.reason}); a baseline only holds for the data it was measured on: "
            "re-save the baseline, or pass --allow-dataset-change to compare on the common queries"
        )
    for name in base.failures:
        if name not in base.summary and (retrievers is None or name in names):
            report.notes.append(f"{name} had failed in the baseline too; it is not checked")

    weighted = cur.weights is not None or base.weights is not None
    if weighted:
        report.notes.append(
            "traffic-weighted: means and tests weigh each query by the dataset's weights (harness.stats.weighted; "
            "Kish's effective number of queries for power)"
        )
    pairs = [(r, m) for side in (base.summary, cur.summary) for r, ms in side.items() for m in ms]
    tol = s.tolerances.table(pairs)
    common_any = 0
    for name in names:
        mets = [m for m in wanted if m in base.summary[name]]
        rows, n_common = _check_retriever(name, mets, base, cur, tol, s)
        report.rows += rows
        common_any = max(common_any, n_common)
    report.dataset.common_queries = common_any

    if retrievers is None:
        report.rows += _new_rows(base, cur, wanted if metrics is not None else None, tol)
    power_gate.add_power(
        report, base, cur, metrics=wanted, margin=s.non_inferiority, per_metric=s.tolerances.non_inferiority,
        ni_alpha=s.ni_alpha, target=s.power,
    )  # fmt: skip
    unknown = sorted(set(s.tolerances.retrievers) - set(base.summary) - set(cur.summary))
    if unknown:
        report.notes.append(f"tolerances name retrievers in neither result: {', '.join(unknown)}")
    return report


def _select_retrievers(baseline: Scores, retrievers: Iterable[str] | None, label: str) -> list[str]:
    if retrievers is None:
        return list(baseline.summary)
    names = [r.strip() for r in retrievers if r.strip()]
    absent = [r for r in names if r not in baseline.summary]
    if absent:
        raise InputError(
            f"{label}: no scores for retriever(s) {', '.join(absent)} (it has: {', '.join(baseline.summary)})",
            field="retrievers",
        )
    return list(dict.fromkeys(names))


def _select_metrics(baseline: Scores, names: list[str], metrics: Iterable[str] | None, label: str) -> list[str]:
    have = list(dict.fromkeys(m for n in names for m in baseline.summary[n]))
    if metrics is None:
        return have
    return folder_spelling(metrics, have, f"{label}: no scores for metric(s)", field="metrics")


def _dataset_check(baseline: Scores, current: Scores, allowed: bool) -> DatasetCheck:
    bd, cd = baseline.dataset(), current.dataset()
    bq, cq = baseline.queries(), current.queries()
    d = DatasetCheck(
        name=cd.get("name") or bd.get("name"),
        split=cd.get("split") or bd.get("split"),
        baseline_fingerprint=bd.get("fingerprint"),
        current_fingerprint=cd.get("fingerprint"),
        baseline_queries=len(bq),
        current_queries=len(cq),
        allowed=allowed,
    )
    reasons = []
    if d.baseline_fingerprint and d.current_fingerprint and d.baseline_fingerprint != d.current_fingerprint:
        reasons.append(f"fingerprint {d.baseline_fingerprint[:19]} -> {d.current_fingerprint[:19]}")
    if bd.get("split") and cd.get("split") and bd["split"] != cd["split"]:
        reasons.append(f"split {bd['split']} -> {cd['split']}")
    if bq and cq and bq != cq:
        reasons.append(f"queries {len(bq)} -> {len(cq)}, {len(bq & cq)} in common")
    d.changed, d.reason = bool(reasons), "; ".join(reasons)
    return d


def _check_retriever(
    name: str,
    metrics: list[str],
    baseline: Scores,
    current: Scores,
    tol: dict[tuple[str, str], float],
    s: CheckSettings,
) -> tuple[list[CheckRow], int]:
    if name in current.failures or name not in current.summary:
        if name in current.failures:
            err = str(current.failures[name]).strip().splitlines()
            first = err[0] if err else "no message"
            verdict, note = "failed", f"failed in current: {first[:300] + '…' if len(first) > 300 else first}"
        else:
            verdict, note = "missing", "retriever not in current"
        rows = [
            CheckRow(
                retriever=name,
                metric=m,
                verdict=verdict,
                baseline=baseline.summary[name][m],
                tolerance=tol[name, m],
                note=note,
            )
            for m in metrics
        ]
        return rows, 0

    present = [m for m in metrics if m in current.summary[name]]
    rows: dict[str, CheckRow] = {
        m: CheckRow(
            retriever=name,
            metric=m,
            verdict="missing",
            baseline=baseline.summary[name][m],
            tolerance=tol[name, m],
            note="metric not in current",
        )
        for m in metrics
        if m not in present
    }
    n_common = 0
    compared: list[tuple[str, float, float, float | None]] = []  # metric, baseline and current mean, p-value
    note = ""
    if present and baseline.has_per_query(name) and current.has_per_query(name):
        cq = set(current.query_order(name))
        common = [q for q in baseline.query_order(name) if q in cq]  # baseline order: deterministic tests
        if not common:
            raise InputError(
                f"retriever {name}: no query in common between baseline ({len(baseline.query_order(name))} queries) "
                f"and current ({len(cq)}); nothing can be compared"
            )
        n_common = len(common)
        b = baseline.matrix(name, common, present)
        c = current.matrix(name, common, present)
        w = current.weights_of(common, baseline)  # traffic-weighted: means and tests (harness.stats.weighted)
        if s.test == "randomization":
            pvals = randomization_tests_w(c - b, w, n=s.permutations, seed=s.seed)
        else:
            pvals = np.array([t_test_w(c[:, j], b[:, j], w) for j in range(len(present))])
        compared = [
            (m, paired_mean(b[:, j], w), paired_mean(c[:, j], w), float(pvals[j])) for j, m in enumerate(present)
        ]
    elif present:  # results without per-query scores: Pyserini-style, tolerance only
        lacking = [side for side, x in (("baseline", baseline), ("current", current)) if not x.has_per_query(name)]
        note = f"no per-query scores in {' and '.join(lacking)}: tolerance only"
        compared = [(m, baseline.summary[name][m], current.summary[name][m], None) for m in present]
    for m, base, cur, p in compared:  # the rule: a drop beyond the tolerance that is also significant
        delta, tolerance = cur - base, tol[name, m]
        significant = p is None or p < s.alpha
        verdict: Verdict = "ok"
        if delta < -tolerance - EPS:
            verdict = "regression" if significant else "not_significant"
        elif delta > tolerance + EPS and significant:
            verdict = "improved"
        rows[m] = CheckRow(
            retriever=name,
            metric=m,
            verdict=verdict,
            baseline=base,
            current=cur,
            delta=delta,
            p_value=p,
            tolerance=tolerance,
            queries=n_common,
            note=note,
        )
    return [rows[m] for m in metrics], n_common


def _new_rows(
    baseline: Scores, current: Scores, metrics: list[str] | None, tol: dict[tuple[str, str], float]
) -> list[CheckRow]:
    """What current measures and the baseline does not: reported as ``new``, not a failure."""
    rows = []
    for name, scores in current.summary.items():
        for m, v in scores.items():
            if metrics is not None and m not in metrics:
                continue
            if m not in baseline.summary.get(name, {}):
                note = "retriever not in baseline" if name not in baseline.summary else "metric not in baseline"
                rows.append(
                    CheckRow(retriever=name, metric=m, verdict="new", current=v, tolerance=tol[name, m], note=note)
                )
    return rows
