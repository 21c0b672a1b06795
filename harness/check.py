"""Regression check: a current :class:`~harness.results.Results` against a stored baseline.

A regression is a drop of more than the tolerance (absolute, per retriever x metric, as Pyserini's
2CR files keep expected scores with a tolerance) that is also significant: a paired test on the
per-query scores of the queries both results scored. Both conditions, because a nightly job must
fail loudly when quality really dropped, and only then: a tolerance alone fails on noise in a small
query set; a test alone fails on drops too small to matter over a large one.

Pure logic (no files, no printing): :func:`check` returns a :class:`CheckReport`, which renders
itself as a text table, markdown (a CI job summary) and JUnit XML. ``harness check`` is its CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import InputError
from harness.results import Results
from harness.stats.tests import randomization_tests, t_test

Verdict = Literal["regression", "failed", "missing", "not_significant", "improved", "new", "ok"]
#: verdicts that fail the check
FAILING: frozenset[str] = frozenset({"regression", "failed", "missing"})
#: display order: what needs a look first
ORDER: dict[str, int] = {v: i for i, v in enumerate(Verdict.__args__)}  # type: ignore[attr-defined]
TESTS = {
    "randomization": "two-sided paired randomization test, {n:,} sign flips, seed {seed}",
    "t": "two-sided paired t-test",
}
#: float slack so that equal means never count as a drop of exactly the tolerance
EPS = 1e-9
DEFAULT_TOLERANCE = 0.01
DEFAULT_ALPHA = 0.05


def _metric_key(name: str) -> str:
    """Canonical metric name (``nDCG@10`` -> ``ndcg@10``); names we cannot parse stay as written."""
    from harness.metrics.names import parse_metric

    try:
        return parse_metric(name).name
    except InputError:
        return str(name).strip().lower()


class Tolerances(BaseModel):
    """Allowed absolute drop per retriever x metric; the most specific entry wins.

    ```yaml
    default: 0.01              # every metric of every retriever
    alpha: 0.05                # optional; --alpha overrides
    metrics: {ndcg@10: 0.005}  # per metric
    retrievers:                # per retriever (its own `default` too)
      bm25: {default: 0.02, recall@100: 0.03}
    ```
    """

    model_config = ConfigDict(extra="forbid")

    default: float = Field(DEFAULT_TOLERANCE, ge=0)
    alpha: float | None = Field(None, gt=0, lt=1)
    metrics: dict[str, float] = Field(default_factory=dict)
    retrievers: dict[str, dict[str, float]] = Field(default_factory=dict)

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: dict[str, float]) -> dict[str, float]:
        return {_strict_metric(k): _non_negative(k, t) for k, t in v.items()}

    @field_validator("retrievers")
    @classmethod
    def _retrievers(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {
            r: {
                (k if k == "default" else _strict_metric(k, f"{r}: ")): _non_negative(f"{r}.{k}", t)
                for k, t in m.items()
            }
            for r, m in v.items()
        }

    def get(self, retriever: str, metric: str) -> float:
        metric = _metric_key(metric)
        own = self.retrievers.get(retriever, {})
        if metric in own:
            return own[metric]
        if metric in self.metrics:
            return self.metrics[metric]
        return own.get("default", self.default)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tolerances:
        """From a YAML file; errors name the file and key."""
        import yaml

        p = Path(path).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("tolerances file not found", path=p) from None
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read tolerances file ({e})", path=p) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise InputError(
                f"invalid YAML: {getattr(e, 'problem', None) or e}", path=p, line=mark.line + 1 if mark else None
            ) from None
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InputError("a tolerances file must be a mapping (default, metrics, retrievers)", path=p)
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (valid keys: default, alpha, metrics, retrievers)"
            raise InputError(msg, path=p, field=".".join(str(x) for x in err["loc"])) from None


def _strict_metric(name: str, where: str = "") -> str:
    from harness.metrics.names import parse_metric

    try:
        return parse_metric(name).name
    except InputError as e:
        raise ValueError(where + e.message) from None


def _non_negative(key: str, value: float) -> float:
    if value < 0:
        raise ValueError(f"{key}: a tolerance must be >= 0")
    return value


class CheckRow(BaseModel):
    """One retriever x metric: baseline and current means over the common queries."""

    retriever: str
    metric: str
    verdict: Verdict
    baseline: float | None = None
    current: float | None = None
    delta: float | None = None
    p_value: float | None = None
    tolerance: float = 0.0
    queries: int = 0
    note: str = ""

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    def message(self, alpha: float) -> str:
        """One sentence for logs and JUnit failures."""
        what = f"{self.retriever} {self.metric}"
        if self.verdict in ("missing", "failed", "new"):
            return f"{what}: {self.verdict}" + (f" ({self.note})" if self.note else "")
        assert self.baseline is not None and self.current is not None and self.delta is not None
        p = "no per-query scores, tolerance only" if self.p_value is None else f"p = {_p(self.p_value)}"
        return (
            f"{what}: {self.verdict.replace('_', ' ')}: {self.baseline:.4f} -> {self.current:.4f} "
            f"({self.delta:+.4f}; tolerance {self.tolerance:g}; {p}, alpha {alpha:g}; {self.queries} queries)"
        )


class DatasetCheck(BaseModel):
    name: str | None = None
    split: str | None = None
    baseline_fingerprint: str | None = None
    current_fingerprint: str | None = None
    baseline_queries: int = 0
    current_queries: int = 0
    common_queries: int = 0
    changed: bool = False
    allowed: bool = False
    reason: str = ""


class CheckReport(BaseModel):
    """Everything ``harness check`` decided, renderable as text, markdown and JUnit."""

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
        parts += [f"{c[v]} {v}" for v in ("failed", "missing") if c[v]]
        if self.problems:
            parts.append("dataset changed")
        checked = sum(c[v] for v in ORDER if v != "new")
        rest = [f"{c[v]} {v.replace('_', ' ')}" for v in ("not_significant", "improved", "new", "ok") if c[v]]
        return (
            f"{'FAIL' if self.failed else 'PASS'}: {', '.join(parts)} "
            f"({checked} checks{': ' + ', '.join(rest) if rest else ''})"
        )

    def rule(self) -> str:
        return (
            f"regression = a drop of more than the tolerance that is also significant: {self.test_description}, "
            f"p < {self.alpha:g}, on the per-query scores of the queries both results scored"
        )

    def dataset_line(self) -> str:
        d = self.dataset
        fp = (d.current_fingerprint or d.baseline_fingerprint or "no fingerprint")[:19]
        base = f"dataset {d.name or '?'} ({d.split or '?'}, {d.common_queries} common queries, {fp})"
        if not d.changed:
            return base + ": unchanged"
        how = "allowed (--allow-dataset-change): compared on the common queries" if d.allowed else "FAILURE"
        return f"{base}: CHANGED, {d.reason}; {how}"

    # ------------------------------------------------------------------ renderers
    def to_text(self) -> str:
        """A plain aligned table (CI logs are not terminals)."""
        header = ["verdict", "retriever", "metric", "baseline", "current", "delta", "p-value", "tol", "queries"]
        body = [
            [
                r.verdict.replace("_", " ").upper() if r.failing else r.verdict.replace("_", " "),
                r.retriever,
                r.metric,
                _f(r.baseline),
                _f(r.current),
                _f(r.delta, signed=True),
                _p(r.p_value),
                f"{r.tolerance:g}",
                str(r.queries),
            ]
            for r in self.sorted_rows()
        ]
        widths = [max(len(x) for x in col) for col in zip(header, *body)]
        right = {3, 4, 5, 6, 7, 8}

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        lines = [f"harness check: {self.baseline} -> {self.current}", self.dataset_line(), ""]
        lines += [line(header), line(["-" * w for w in widths]), *map(line, body), ""]
        lines += [f"{'FAILURE' if bad else 'note'}: {text}" for text, bad in self.row_notes()]
        lines += [f"FAILURE: {p}" for p in self.problems] + [f"note: {n}" for n in self.notes]
        lines += [self.rule(), self.headline()]
        return "\n".join(lines) + "\n"

    def to_markdown(self) -> str:
        """A CI job summary: headline, what was compared, the table with failures first."""
        mark = "❌" if self.failed else "✅"
        out = [f"## {mark} harness check: {self.headline()}", ""]
        out.append(f"- baseline: `{self.baseline}`{_provenance(self.baseline_info)}")
        out.append(f"- current: `{self.current}`{_provenance(self.current_info)}")
        out.append(f"- {self.dataset_line()}")
        out.append(f"- {self.rule()}")
        out += [f"- **FAILURE**: {_md(p)}" for p in self.problems]
        out += [f"- {'**FAILURE**' if bad else 'note'}: {_md(text)}" for text, bad in self.row_notes()]
        out += [f"- note: {_md(n)}" for n in self.notes]
        out += ["", "| verdict | retriever | metric | baseline | current | delta | p-value | tolerance | queries |"]
        out.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for r in self.sorted_rows():
            verdict = r.verdict.replace("_", " ")
            verdict = f"**{verdict.upper()}**" if r.failing else verdict
            cells = [verdict, _md(r.retriever), _md(r.metric), _f(r.baseline), _f(r.current)]
            cells += [_f(r.delta, signed=True), _p(r.p_value), f"{r.tolerance:g}", str(r.queries)]
            out.append("| " + " | ".join(cells) + " |")
        return "\n".join(out) + "\n"

    def to_junit(self) -> str:
        """JUnit XML: one test case per retriever x metric (and one for the dataset)."""
        import xml.etree.ElementTree as ET

        c = self.counts()
        n_fail = sum(c[v] for v in FAILING) + len(self.problems)
        n_skip = c["new"]
        tests = len(self.rows) + 1
        attrs = {"name": "harness check", "tests": str(tests), "failures": str(n_fail), "errors": "0"}
        root = ET.Element("testsuites", attrs)
        suite = ET.SubElement(root, "testsuite", {**attrs, "skipped": str(n_skip), "time": "0"})
        props = ET.SubElement(suite, "properties")
        for k, v in [
            ("baseline", self.baseline),
            ("current", self.current),
            ("alpha", f"{self.alpha:g}"),
            ("test", self.test_description),
        ]:
            ET.SubElement(props, "property", {"name": k, "value": v})
        case = ET.SubElement(suite, "testcase", {"classname": "harness.check", "name": "dataset", "time": "0"})
        if self.problems:
            ET.SubElement(case, "failure", {"type": "dataset_changed", "message": self.problems[0]}).text = "\n".join(
                self.problems
            )
        for r in self.rows:
            case = ET.SubElement(
                suite, "testcase", {"classname": f"harness.check.{r.retriever}", "name": r.metric, "time": "0"}
            )
            msg = r.message(self.alpha)
            if r.failing:
                ET.SubElement(case, "failure", {"type": r.verdict, "message": msg}).text = msg
            elif r.verdict == "new":
                ET.SubElement(case, "skipped", {"message": "not in the baseline"})
            else:
                ET.SubElement(case, "system-out").text = msg
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _f(x: float | None, *, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _provenance(info: Mapping[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in info.items() if v]
    return f" ({', '.join(parts)})" if parts else ""


def provenance(results: Results) -> dict[str, Any]:
    """When and from which commit a result was made (for the summary)."""
    m = results.manifest
    commit = (m.get("git") or {}).get("commit")
    dirty = (m.get("git") or {}).get("dirty")
    return {
        "created": m.get("created"),
        "commit": (commit[:10] + ("+dirty" if dirty else "")) if commit else None,
    }


# ---------------------------------------------------------------------- the check
def check(
    baseline: Results,
    current: Results,
    *,
    tolerances: Tolerances | float | None = None,
    alpha: float | None = None,
    metrics: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
    allow_dataset_change: bool = False,
    test: str = "randomization",
    permutations: int = 10000,
    seed: int = 0,
    baseline_label: str = "baseline",
    current_label: str = "current",
) -> CheckReport:
    """Compare ``current`` with ``baseline`` per retriever x metric (see the module doc).

    Raises :class:`InputError` (exit 2) for input that cannot be checked: a baseline without
    scores, a retriever or metric asked for that the baseline lacks, no common queries.
    """
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; choose one of: {', '.join(TESTS)}", field="test")
    tol = tolerances if isinstance(tolerances, Tolerances) else Tolerances()
    if isinstance(tolerances, (int, float)) and not isinstance(tolerances, bool):
        tol = Tolerances(default=float(tolerances))
    alpha = alpha if alpha is not None else (tol.alpha if tol.alpha is not None else DEFAULT_ALPHA)
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}", field="alpha")
    if not baseline.summary:
        raise InputError(f"{baseline_label}: holds no scores (every retriever failed, or nothing was run)")

    names = _select_retrievers(baseline, retrievers, baseline_label)
    wanted = _select_metrics(baseline, names, metrics, baseline_label)
    dataset = _dataset_check(baseline, current, allow_dataset_change)
    report = CheckReport(
        baseline=baseline_label,
        current=current_label,
        alpha=alpha,
        test=test,
        test_description=TESTS[test].format(n=permutations, seed=seed),
        dataset=dataset,
        baseline_info=provenance(baseline),
        current_info=provenance(current),
    )
    if dataset.changed and not allow_dataset_change:
        report.problems.append(
            f"the dataset changed ({dataset.reason}); a baseline only holds for the data it was measured on: "
            "re-save the baseline, or pass --allow-dataset-change to compare on the common queries"
        )
    for name in baseline.failures:
        if name not in baseline.summary and (retrievers is None or name in names):
            report.notes.append(f"{name} had failed in the baseline too; it is not checked")

    common_any = 0
    for name in names:
        mets = [m for m in wanted if m in baseline.summary[name]]
        rows, n_common = _check_retriever(name, mets, baseline, current, tol, alpha, test, permutations, seed)
        report.rows += rows
        common_any = max(common_any, n_common)
    report.dataset.common_queries = common_any

    if retrievers is None:
        report.rows += _new_rows(baseline, current, wanted if metrics is not None else None, tol)
    unknown = sorted(set(tol.retrievers) - set(baseline.summary) - set(current.summary))
    if unknown:
        report.notes.append(f"tolerances name retrievers in neither result: {', '.join(unknown)}")
    return report


def _select_retrievers(baseline: Results, retrievers: Iterable[str] | None, label: str) -> list[str]:
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


def _select_metrics(baseline: Results, names: list[str], metrics: Iterable[str] | None, label: str) -> list[str]:
    have = list(dict.fromkeys(m for n in names for m in baseline.summary[n]))
    if metrics is None:
        return have
    by_key = {_metric_key(m): m for m in have}
    out = []
    for m in metrics:
        if not str(m).strip():
            continue
        key = _metric_key(m)
        if key not in by_key:
            raise InputError(f"{label}: no scores for metric {m!r} (it has: {', '.join(have)})", field="metrics")
        out.append(by_key[key])
    return list(dict.fromkeys(out))


def _queries(res: Results) -> set[str]:
    return {q for per in res.per_query.values() for q in per}


def _dataset_check(baseline: Results, current: Results, allowed: bool) -> DatasetCheck:
    bd, cd = baseline.manifest.get("dataset") or {}, current.manifest.get("dataset") or {}
    bq, cq = _queries(baseline), _queries(current)
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
    baseline: Results,
    current: Results,
    tol: Tolerances,
    alpha: float,
    test: str,
    permutations: int,
    seed: int,
) -> tuple[list[CheckRow], int]:
    if name in current.failures or name not in current.summary:
        if name in current.failures:
            err = str(current.failures[name]).strip().splitlines()
            first = err[0] if err else "no message"
            verdict, note = "failed", f"failed in current: {first[:300] + '…' if len(first) > 300 else first}"
        else:
            verdict, note = "missing", "retriever not in current"
        rows = [
            CheckRow(retriever=name, metric=m, verdict=verdict, tolerance=tol.get(name, m), note=note) for m in metrics
        ]
        return rows, 0

    present = [m for m in metrics if m in current.summary[name]]
    rows: dict[str, CheckRow] = {
        m: CheckRow(
            retriever=name, metric=m, verdict="missing", tolerance=tol.get(name, m), note="metric not in current"
        )
        for m in metrics
        if m not in present
    }
    bpq, cpq = baseline.per_query.get(name) or {}, current.per_query.get(name) or {}
    n_common = 0
    if present and bpq and cpq:
        common = [q for q in bpq if q in cpq]  # baseline order: deterministic tests
        if not common:
            raise InputError(
                f"retriever {name}: no query in common between baseline ({len(bpq)} queries) and current "
                f"({len(cpq)}); nothing can be compared"
            )
        n_common = len(common)
        b = _matrix(bpq, common, present, name, "baseline")
        c = _matrix(cpq, common, present, name, "current")
        if test == "randomization":
            pvals = randomization_tests(c - b, n=permutations, seed=seed)
        else:
            pvals = np.array([t_test(c[:, j], b[:, j]) for j in range(len(present))])
        for j, m in enumerate(present):
            bm, cm = float(b[:, j].mean()), float(c[:, j].mean())
            rows[m] = _verdict(name, m, bm, cm, float(pvals[j]), tol.get(name, m), alpha, n_common)
    elif present:  # results without per-query scores: Pyserini-style, tolerance only
        for m in present:
            row = _verdict(
                name, m, baseline.summary[name][m], current.summary[name][m], None, tol.get(name, m), alpha, 0
            )
            row.note = "no per-query scores: tolerance only"
            rows[m] = row
    return [rows[m] for m in metrics], n_common


def _matrix(per_query: Mapping[str, Mapping[str, float]], qids: list[str], metrics: list[str], name: str, side: str):
    try:
        return np.array([[per_query[q][m] for m in metrics] for q in qids], dtype=np.float64)
    except KeyError as e:
        raise InputError(f"{side}: per_query.{name}: a query lacks metric {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise InputError(f"{side}: per_query.{name}: not numeric ({e})") from None


def _verdict(
    name: str, metric: str, base: float, cur: float, p: float | None, tol: float, alpha: float, n: int
) -> CheckRow:
    delta = cur - base
    significant = p is None or p < alpha
    verdict: Verdict = "ok"
    if delta < -tol - EPS:
        verdict = "regression" if significant else "not_significant"
    elif delta > tol + EPS and significant:
        verdict = "improved"
    return CheckRow(
        retriever=name,
        metric=metric,
        verdict=verdict,
        baseline=base,
        current=cur,
        delta=delta,
        p_value=p,
        tolerance=tol,
        queries=n,
    )


def _new_rows(baseline: Results, current: Results, metrics: list[str] | None, tol: Tolerances) -> list[CheckRow]:
    """What current measures and the baseline does not: reported, never a failure."""
    rows = []
    for name, scores in current.summary.items():
        for m, v in scores.items():
            if metrics is not None and m not in metrics:
                continue
            if m not in baseline.summary.get(name, {}):
                note = "retriever not in baseline" if name not in baseline.summary else "metric not in baseline"
                rows.append(
                    CheckRow(retriever=name, metric=m, verdict="new", current=v, tolerance=tol.get(name, m), note=note)
                )
    return rows
