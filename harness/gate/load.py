"""The gate on a load test's figures (``load.json`` of ``harness load``): p95 latency and QPS per
level are gated figures with *relative* tolerances, reported as rows like quality metrics.

A level is matched by its label (``c=8`` for a closed-loop level, ``rate=300/s`` for an open-loop
one). Per retriever x level, two rows:

- ``p95_ms@c=8``: a regression when current > baseline x (1 + latency tolerance);
- ``qps@c=8``: a regression when current < baseline x (1 - QPS tolerance).

No significance test: a level is one measurement, not a sample of per-query scores, so the
tolerance carries the noise (timing on a shared machine moves tens of percent; the defaults allow
for that). A level with errors or timeouts where the baseline had none fails too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.gate.tolerances import DEFAULT_LATENCY_TOLERANCE as DEFAULT_LATENCY_TOLERANCE  # the flags' defaults
from harness.gate.tolerances import DEFAULT_QPS_TOLERANCE as DEFAULT_QPS_TOLERANCE
from harness.gate.verdict import CheckReport, CheckRow, DatasetCheck

LOAD_FILE = "load.json"
RULE = (
    "load figures (load.json): a regression = p95 above baseline x (1 + {lat:g}) or QPS below baseline x (1 - {qps:g}) "
    "at the same level (relative tolerances; one measurement per level, so no significance test)"
)


def load_file(path: str | Path) -> Path | None:
    """The load.json that ``path`` names (the file, or one inside the folder), or None."""
    p = Path(path).expanduser()
    if p.is_file() and p.name == LOAD_FILE:
        return p
    if p.is_dir() and (p / LOAD_FILE).is_file():
        return p / LOAD_FILE
    return None


def load_only(path: str | Path) -> bool:
    """``path`` is a load test's output alone (a load.json, or a folder with one and no results.json)."""
    p = Path(path).expanduser()
    return load_file(p) is not None and not (p.is_dir() and (p / "results.json").is_file())


def read_load(path: str | Path, what: str) -> dict[str, Any]:
    """A load.json, checked: ``{retriever: {"levels": [{"concurrency"|"rate", "qps", "p95_ms", ...}]}}``
    with finite numbers (a NaN must never pass the gate)."""
    p = load_file(path)
    if p is None:
        raise InputError(f"no {LOAD_FILE} here", path=f"{what} {path}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read ({e})", path=f"{what} {p}") from None
    if not isinstance(data, dict):
        raise InputError("not a load.json: expected {retriever: {levels: [...]}}", path=f"{what} {p}")
    for name, rec in data.items():
        levels = rec.get("levels") if isinstance(rec, dict) else None
        if not isinstance(levels, list):
            raise InputError(f"retriever {name!r} has no levels list", path=f"{what} {p}")
        for i, lv in enumerate(levels):
            if not isinstance(lv, dict) or ("concurrency" not in lv and "rate" not in lv):
                raise InputError(f"{name}: level {i} names neither concurrency nor rate", path=f"{what} {p}")
            for key in ("qps", "p95_ms"):
                v = lv.get(key)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                    raise InputError(f"{name}: level {i}: {key} is {v!r}, not a finite number", path=f"{what} {p}")
    return data


def level_label(lv: Mapping[str, Any]) -> str:
    return f"c={lv['concurrency']}" if "concurrency" in lv else f"rate={float(lv['rate']):g}/s"


def _levels(rec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {level_label(lv): lv for lv in rec.get("levels", [])}


def _row(name: str, metric: str, base: float | None, cur: float | None, tol: float, higher_is_worse: bool) -> CheckRow:
    if base is None or cur is None:
        return CheckRow(
            retriever=name,
            metric=metric,
            verdict="missing",
            baseline=base,
            current=cur,
            tolerance=tol,
            note="no figure (every request failed?)",
        )
    delta = cur - base
    verdict = "ok"
    if higher_is_worse:
        if cur > base * (1 + tol):
            verdict = "regression"
        elif cur < base * (1 - tol):
            verdict = "improved"
    elif cur < base * (1 - tol):
        verdict = "regression"
    elif cur > base * (1 + tol):
        verdict = "improved"
    return CheckRow(
        retriever=name, metric=metric, verdict=verdict, baseline=base, current=cur, delta=delta, tolerance=tol
    )


def load_rows(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    *,
    latency_tolerance: float = DEFAULT_LATENCY_TOLERANCE,
    qps_tolerance: float = DEFAULT_QPS_TOLERANCE,
    retrievers: list[str] | None = None,
) -> list[CheckRow]:
    """Rows of every baseline retriever x level (see the module doc); levels only in current are
    ``new``."""
    for label, tol in (("latency", latency_tolerance), ("qps", qps_tolerance)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
            raise InputError(f"the {label} tolerance must be a finite number >= 0, got {tol!r}")
    rows: list[CheckRow] = []
    names = retrievers or list(baseline)
    for name in names:
        if name not in baseline:
            raise InputError(f"baseline load.json has no retriever {name!r} (it has: {', '.join(baseline)})")
        base_levels = _levels(baseline[name])
        cur_levels = _levels(current[name]) if name in current else {}
        for label, b in base_levels.items():
            c = cur_levels.get(label)
            if c is None:
                note = "retriever not in current" if name not in current else "level not in current"
                for metric, tol in ((f"p95_ms@{label}", latency_tolerance), (f"qps@{label}", qps_tolerance)):
                    rows.append(
                        CheckRow(
                            retriever=name,
                            metric=metric,
                            verdict="missing",
                            baseline=b.get(metric.split("@")[0]),
                            tolerance=tol,
                            note=note,
                        )
                    )
                continue
            p95 = _row(name, f"p95_ms@{label}", b.get("p95_ms"), c.get("p95_ms"), latency_tolerance, True)
            qps = _row(name, f"qps@{label}", b.get("qps"), c.get("qps"), qps_tolerance, False)
            failed_now = int(c.get("errors", 0) or 0) + int(c.get("timeouts", 0) or 0)
            failed_then = int(b.get("errors", 0) or 0) + int(b.get("timeouts", 0) or 0)
            if failed_now and not failed_then:
                qps.verdict = "failed"
                qps.note = f"{failed_now} requests failed or timed out at {label}; none did in the baseline"
            rows += [p95, qps]
        for label, c in cur_levels.items():
            if label not in base_levels:
                rows += [
                    CheckRow(
                        retriever=name,
                        metric=f"{m}@{label}",
                        verdict="new",
                        current=c.get(m),
                        tolerance=t,
                        note="level not in baseline",
                    )
                    for m, t in (("p95_ms", latency_tolerance), ("qps", qps_tolerance))
                ]
    return rows


def _dataset(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[DatasetCheck, list[str]]:
    def of(data: Mapping[str, Any]) -> tuple[Any, Any]:
        rec = next(iter(data.values()), {}) if data else {}
        return rec.get("dataset"), rec.get("split")

    (bn, bs), (cn, cs) = of(baseline), of(current)
    d = DatasetCheck(name=cn or bn, split=cs or bs)
    d.common_queries = int((next(iter(current.values()), {}) or {}).get("queries") or 0) if current else 0
    problems = []
    if (bn, bs) != (cn, cs) and None not in (bn, cn):
        d.changed, d.reason = True, f"{bn}/{bs} -> {cn}/{cs}"
        problems.append(f"the load test ran on another dataset ({d.reason}): its figures are not comparable")
    return d, problems


def check_load(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    *,
    baseline_label: str = "baseline",
    current_label: str = "current",
    retrievers: list[str] | None = None,
    latency_tolerance: float = DEFAULT_LATENCY_TOLERANCE,
    qps_tolerance: float = DEFAULT_QPS_TOLERANCE,
) -> CheckReport:
    """A check of two load.json files alone (no quality results)."""
    dataset, problems = _dataset(baseline, current)
    report = CheckReport(
        baseline=baseline_label,
        current=current_label,
        test="none",
        test_description="none (load figures: relative tolerances)",
        dataset=dataset,
        problems=problems,
    )
    report.rows = load_rows(
        baseline, current, latency_tolerance=latency_tolerance, qps_tolerance=qps_tolerance, retrievers=retrievers
    )
    report.notes.append(RULE.format(lat=latency_tolerance, qps=qps_tolerance))
    return report


def add_load(report: CheckReport, baseline: str, current: str, **tolerances: float) -> CheckReport:
    """Append the load rows when both the baseline and the current folder hold a load.json."""
    if load_file(baseline) is None or load_file(current) is None:
        return report
    report.rows += load_rows(read_load(baseline, "baseline"), read_load(current, "current"), **tolerances)
    report.notes.append(
        RULE.format(
            lat=tolerances.get("latency_tolerance", DEFAULT_LATENCY_TOLERANCE),
            qps=tolerances.get("qps_tolerance", DEFAULT_QPS_TOLERANCE),
        )
    )
    return report
