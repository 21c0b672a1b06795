"""``harness check`` of two suites: the one-dataset gate on every dataset, one verdict.

Each dataset of the baseline suite is checked with :func:`harness.gate.verdict.report` exactly as
``harness check`` checks two results folders (same rule, tolerances, test); the suite fails when
any dataset fails, or when a dataset of the baseline is missing from the current suite, and every
failure names its dataset.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from harness.errors import InputError
from harness.gate import junit as gate_junit
from harness.gate import render as gate_render
from harness.gate.tolerances import CheckSettings
from harness.gate.verdict import CheckReport, report
from harness.results import Results
from harness.results.suite import SuiteResults, is_suite


@dataclass
class SuiteCheck:
    """Every dataset's :class:`CheckReport`, and the suite-level problems (missing datasets)."""

    baseline: str
    current: str
    reports: dict[str, CheckReport] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.problems) or any(r.failed for r in self.reports.values())

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def failing_datasets(self) -> list[str]:
        return [d for d, r in self.reports.items() if r.failed]

    def headline(self) -> str:
        checks = sum(len(r.rows) for r in self.reports.values())
        n = len(self.reports)
        if not self.failed:
            blind = sum(1 for r in self.reports.values() for row in r.rows if row.blind)
            seen = f" (blind on {blind} of {checks} checks: see each dataset's line)" if blind else ""
            return f"suite PASS{seen}: {n} datasets, {checks} checks, no regression"
        parts = []
        for d in self.failing_datasets():
            bad = [f"{r.retriever} {r.metric} {r.verdict}" for r in self.reports[d].sorted_rows() if r.failing]
            bad += ["dataset changed"] if self.reports[d].problems else []
            parts.append(f"{d} ({', '.join(bad)})")
        parts += self.problems
        return f"suite FAIL on {len(parts)} of {n + len(self.problems)} datasets: " + "; ".join(parts)


def check_suites(
    baseline: str | os.PathLike[str],
    current: str | os.PathLike[str],
    s: CheckSettings,
    *,
    allow_incomplete: bool = False,
) -> SuiteCheck:
    """Check ``current`` against ``baseline`` (two suite folders) per dataset with the settings ``s``
    (:func:`harness.gate.tolerances.settings`). Each dataset's folder is read as ``harness check``
    reads one (:meth:`Results.open`): an incomplete or altered folder is refused unless
    ``allow_incomplete``."""
    for path, what in ((baseline, "baseline"), (current, "current")):
        if not is_suite(path):
            raise InputError(
                "a suite is checked against a suite: this is not a suite folder (no suite.json); "
                "check one dataset with its folder DIR/<dataset>",
                path=f"{what} {path}",
            )
    base, cur = SuiteResults.load(baseline), SuiteResults.load(current)
    assert base.folder is not None and cur.folder is not None
    out = SuiteCheck(str(baseline), str(current))
    for d in base.datasets:
        if d not in cur.datasets:
            out.problems.append(f"{d}: dataset missing from the current suite")
            continue
        out.reports[d] = report(
            Results.open(base.folder / d, allow_incomplete=allow_incomplete, what="baseline"),
            Results.open(cur.folder / d, allow_incomplete=allow_incomplete, what="current"),
            s,
            baseline_label=f"{baseline} [{d}]",
            current_label=f"{current} [{d}]",
        )
    extra = [d for d in cur.datasets if d not in base.datasets]
    if extra:
        for r in out.reports.values():
            r.notes.append(f"datasets in the current suite only (not checked): {', '.join(extra)}")
            break
    return out


def render(sc: SuiteCheck, fmt: str = "text") -> gate_render.Rendered:
    """Every output of a suite check at once: stdout (``fmt``: the tables or one JSON document), the
    markdown summary and the JUnit XML, each dataset rendered once as ``harness check`` renders one."""
    each = {d: gate_render.render(r, fmt) for d, r in sc.reports.items()}
    if fmt == "json":
        payload = {"exit": sc.exit_code, "datasets": {d: shown.json for d, shown in each.items()}}
        stdout = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    else:
        stdout = to_text(sc, each)
    return gate_render.Rendered(stdout=stdout, summary=to_markdown(sc, each), junit=to_junit(sc, each))


def to_text(sc: SuiteCheck, each: dict[str, gate_render.Rendered]) -> str:
    parts = []
    n = len(sc.reports)
    for i, (d, shown) in enumerate(each.items(), start=1):
        parts.append(f"== dataset {i}/{n}: {d}: {shown.verdict} ==\n{shown.text}")
    parts += [f"FAILURE: {p}\n" for p in sc.problems]
    return "\n".join(parts) + sc.headline() + "\n"


def to_markdown(sc: SuiteCheck, each: dict[str, gate_render.Rendered]) -> str:
    mark = "❌" if sc.failed else "✅"
    out = [f"# {mark} harness check (suite): {sc.headline()}", ""]
    out += [f"- **FAILURE**: {p}" for p in sc.problems]
    for d, shown in each.items():
        body = shown.summary.replace("## ", f"## {d}: ", 1)
        out += ["", body.removesuffix("\n").removesuffix(gate_render.MARKER).rstrip()]
    return "\n".join(out) + "\n\n" + gate_render.MARKER + "\n"


def to_junit(sc: SuiteCheck, each: dict[str, gate_render.Rendered]) -> str:
    """One ``<testsuite>`` per dataset (its test cases as ``harness check`` writes them); a
    missing dataset is a failing test case of its own."""
    tests = failures = 0
    suites = []
    for d, shown in each.items():
        doc = shown.junit.replace(gate_junit.MARKER, "")
        root = ET.fromstring(doc.split("\n", 1)[1])
        for s in root.findall("testsuite"):
            s.set("name", f"{gate_junit.SUITE} [{d}]")
            for case in s.findall("testcase"):
                case.set("classname", f"{d}.{case.get('classname')}")
            tests += int(s.get("tests", "0"))
            failures += int(s.get("failures", "0"))
            suites.append(s)
    if sc.problems:
        s = ET.Element("testsuite", {"name": f"{gate_junit.SUITE} [suite]", "tests": str(len(sc.problems))})
        s.set("failures", str(len(sc.problems)))
        for p in sc.problems:
            case = ET.SubElement(s, "testcase", {"classname": "harness.check.suite", "name": p.split(":")[0]})
            ET.SubElement(case, "failure", {"type": "missing", "message": p}).text = p
        tests += len(sc.problems)
        failures += len(sc.problems)
        suites.append(s)
    root = ET.Element("testsuites", {"name": gate_junit.SUITE, "tests": str(tests), "failures": str(failures)})
    root.extend(suites)
    ET.indent(root)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + ET.tostring(root, encoding="unicode")
        + "\n"
        + gate_junit.MARKER
        + "\n"
    )
