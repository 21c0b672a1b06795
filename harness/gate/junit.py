"""JUnit XML for ``harness check``: the one place it is written, for a report and for an error.

One test case per retriever x metric plus one for the dataset; a check that could not run (bad
input) is one test case with an ``<error>``. Every file carries :data:`MARKER`, an XML comment that
tells ``harness check`` a file it is about to replace is its own (:mod:`harness.gate.outputs`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.gate.verdict import FAILING, CheckReport

#: comment after the root element of every JUnit file harness check writes
MARKER = "<!-- written by harness check: safe to replace -->"
SUITE = "harness check"


def _document(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n" + MARKER + "\n"


def _suite(tests: int, failures: int, errors: int, skipped: int) -> tuple[ET.Element, ET.Element]:
    attrs = {"name": SUITE, "tests": str(tests), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", attrs)
    suite = ET.SubElement(root, "testsuite", {**attrs, "skipped": str(skipped), "time": "0"})
    return root, suite


def to_junit(report: CheckReport) -> str:
    """JUnit XML: one test case per retriever x metric (and one for the dataset)."""
    return junit_xml(report, report.counts(), [r.message(report.alpha) for r in report.rows])


def junit_xml(report: CheckReport, c: dict[str, int], messages: list[str]) -> str:
    """:func:`to_junit` with the report's verdict counts and its rows' messages already asked of it."""
    n_fail = sum(c[v] for v in FAILING) + len(report.problems)
    root, suite = _suite(len(report.rows) + 1, n_fail, 0, c["new"])
    props = ET.SubElement(suite, "properties")
    for k, v in [
        ("baseline", report.baseline),
        ("current", report.current),
        ("alpha", f"{report.alpha:g}"),
        ("test", report.test_description),
    ]:
        ET.SubElement(props, "property", {"name": k, "value": v})
    case = ET.SubElement(suite, "testcase", {"classname": "harness.check", "name": "dataset", "time": "0"})
    if report.problems:
        failure = ET.SubElement(case, "failure", {"type": "dataset_changed", "message": report.problems[0]})
        failure.text = "\n".join(report.problems)
    for r, msg in zip(report.rows, messages):
        case = ET.SubElement(
            suite, "testcase", {"classname": f"harness.check.{r.retriever}", "name": r.metric, "time": "0"}
        )
        if r.failing:
            ET.SubElement(case, "failure", {"type": r.verdict, "message": msg}).text = msg
        elif r.verdict == "new":
            ET.SubElement(case, "skipped", {"message": "not in the baseline"})
        else:
            ET.SubElement(case, "system-out").text = msg
    return _document(root)


def error_junit(message: str, kind: str = "InputError") -> str:
    """A check that could not run: one test case with an ``<error>``."""
    root, suite = _suite(1, 0, 1, 0)
    case = ET.SubElement(suite, "testcase", {"classname": "harness.check", "name": "input", "time": "0"})
    ET.SubElement(case, "error", {"type": kind, "message": message}).text = message
    return _document(root)
